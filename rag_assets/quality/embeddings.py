"""Checks on a document's embeddings: finite, unit length, right size, one per chunk."""

from __future__ import annotations

import numpy as np

from rag_assets.quality.outcome import CheckOutcome, outcome


def check_embeddings(
    chunk_ids: list[str], embedded_ids: list[str], dense: np.ndarray, dimension: int
) -> CheckOutcome:
    problems = []
    if sorted(chunk_ids) != sorted(embedded_ids) or len(set(embedded_ids)) != len(embedded_ids):
        problems.append(f"{len(embedded_ids)} vectors for {len(chunk_ids)} chunks (ids differ)")
    if dense.ndim != 2 or (len(dense) and dense.shape[1] != dimension):
        problems.append(f"vector shape {dense.shape}, expected (n, {dimension})")
    elif len(dense):
        if not np.isfinite(dense).all():
            problems.append(f"{int((~np.isfinite(dense)).any(axis=1).sum())} vectors not finite")
        else:
            norms = np.linalg.norm(dense, axis=1)
            off = int((np.abs(norms - 1.0) > 1e-3).sum())
            if off:
                problems.append(
                    f"{off} vectors not unit length (norms {norms.min():.4f}..{norms.max():.4f})"
                )
    return outcome(
        problems,
        f"{len(dense)} vectors finite, normalized, {dimension}-d",
        {"dimension": dimension},
    )
