"""docs/configuration.md, rendered from the settings models: `python -m rag_assets.settings_doc`
writes it, and a test fails when the file and the models disagree."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

from rag_assets.llm.settings import LLMEndpoints, LLMSettings, VisionSettings
from rag_assets.settings import GROUPS
from rag_assets.settings.base import EnvSettings
from rag_assets.settings.fusion import FusionSettings
from rag_assets.settings.limits import DocumentLimits
from rag_assets.settings.processes import KEY_VARIABLES, ModelCacheSettings, ParseWorkerSettings

DOC_PATH = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"

SECTIONS: tuple[tuple[str, tuple[type[EnvSettings], ...]], ...] = (
    ("Data and storage", (GROUPS[0],)),
    ("Parsing", (GROUPS[1], ParseWorkerSettings, DocumentLimits)),
    ("Chunking", (GROUPS[2],)),
    ("Embedding", (GROUPS[3], ModelCacheSettings)),
    ("Index", (GROUPS[4],)),
    ("Search", (FusionSettings, GROUPS[5])),
    ("Schedules", (GROUPS[6],)),
    ("LLM and vision tables (off by default)", (LLMSettings, LLMEndpoints, VisionSettings)),
)

HEADER = """# Configuration

Environment variables, read by both the CLI and `dagster dev`. A variable that is unset or
blank takes the default; `<data>` is the data folder. This page is generated from the settings
models (`rag_assets/settings/`, `rag_assets/llm/settings.py`): edit their descriptions and run
`python -m rag_assets.settings_doc`.
"""


def rows() -> list[tuple[str, str, str]]:
    """(variable, default, description) for every variable, settings first, then the keys."""
    table = [
        (model.env_name(name), model.documented_default(name), _description(model, name))
        for _, models in SECTIONS
        for model in models
        for name in model.env_fields()
    ]
    return table + [(name, "unset", meaning) for name, meaning in KEY_VARIABLES.items()]


def render() -> str:
    parts = [HEADER]
    for title, models in SECTIONS:
        parts.append(f"\n## {title}\n")
        for model in models:
            parts.append(f"\n{inspect.cleandoc(model.__doc__)}\n" if model.__doc__ else "")
            parts.append("\n| variable | default | meaning |\n|---|---|---|\n")
            parts.extend(
                f"| `{model.env_name(name)}` | {model.documented_default(name)} "
                f"| {_description(model, name)} |\n"
                for name in model.env_fields()
            )
    parts.append(
        "\n## Keys\n\nNever settings: only read from the environment when a client is made.\n"
    )
    parts.append("\n| variable | default | meaning |\n|---|---|---|\n")
    parts.extend(f"| `{name}` | unset | {meaning} |\n" for name, meaning in KEY_VARIABLES.items())
    return "".join(parts)


def _description(model: type[EnvSettings], name: str) -> str:
    description = model.model_fields[name].description
    if not description:
        raise ValueError(f"{model.__name__}.{name} has no description for the reference")
    return " ".join(description.split())


def main() -> None:
    DOC_PATH.parent.mkdir(exist_ok=True)
    DOC_PATH.write_text(render())
    sys.stdout.write(f"wrote {DOC_PATH}\n")


if __name__ == "__main__":
    main()
