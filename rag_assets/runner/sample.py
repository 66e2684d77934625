"""The sample corpus's evaluation set, put where `retrieval_evaluation` reads sets when the sample
corpus is ingested, so the evaluation has questions on it from the first ingest."""

from __future__ import annotations

import shutil
from pathlib import Path

# Beside the package in a checkout; absent from an installed wheel, and then nothing is placed.
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SAMPLE_CORPUS = EXAMPLES / "corpus"
SAMPLE_SET = EXAMPLES / "eval" / "sample" / "questions.jsonl"
PLACED_NAME = "sample.jsonl"


def _in_sample_corpus(path: Path) -> bool:
    return path.resolve().is_relative_to(SAMPLE_CORPUS)


def place_sample_evaluation(eval_dir: Path, paths: list[Path]) -> Path | None:
    """Copy the sample set into `eval_dir` when `paths` hold the sample corpus (or files of it)
    and the folder has no evaluation set yet: a set of the user's is never replaced nor joined.
    Returns the copy, or None when nothing was placed."""
    if not SAMPLE_SET.is_file() or not any(_in_sample_corpus(p) for p in paths):
        return None
    # The question sets' reader loads only when the sample corpus is ingested.
    from rag_assets.retrieval.evaluation.sets import find_eval_sets

    if find_eval_sets(eval_dir):
        return None
    eval_dir.mkdir(parents=True, exist_ok=True)
    placed = eval_dir / PLACED_NAME
    shutil.copyfile(SAMPLE_SET, placed)
    return placed
