"""Export the bundled model to ONNX (the fp32 graph OpenVINO and ONNX Runtime run) ahead of its
first use: `scripts/setup.sh` runs `python -m rag_assets.embedding.prepare`, so the first ingest
does not pay for it. The opt-in int8 graph is made when `onnx-int8` is first used."""

from __future__ import annotations

import logging

from rag_assets.embedding.models import EmbeddingSpec, resolve_model
from rag_assets.embedding.onnx_export import default_cache_dir, ensure_exported


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    model = resolve_model(EmbeddingSpec())
    print(ensure_exported(model.path, model.name, default_cache_dir()))


if __name__ == "__main__":
    main()
