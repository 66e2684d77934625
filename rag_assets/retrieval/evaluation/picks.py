"""The template that retrieved best on a collection's own questions (`--pick-template`)."""

from __future__ import annotations

from rag_assets.errors import ConfigurationError
from rag_assets.retrieval.evaluation.comparison import Comparison
from rag_assets.sources.template_picks import EVERY_COLLECTION, TemplatePick

# Fewer questions than this say too little to pick a template by.
MIN_QUESTIONS = 10
PICKED_BY = "mrr@10"


def collection_tag(collection: str | None) -> str:
    """The tag a question set for `collection` (None: every document) carries."""
    return f"collection:{collection or EVERY_COLLECTION}"


def best_template(comparison: Comparison, collection: str | None) -> TemplatePick:
    """The template with the best MRR@10 on the questions tagged for `collection`, each
    searched as the product searches (hybrid, a result a page); a tie keeps `auto`."""
    slice_name = f"tag:{collection_tag(collection)}"
    runs = [
        run
        for run in comparison.runs
        if run.mode == "hybrid" and run.name == run.template and slice_name in run.slices
    ]
    if not runs:
        raise ConfigurationError(
            f"no evaluation question is tagged {collection_tag(collection)!r}: write a set "
            f"with `rag-assets evaluate --generate"
            + (f" --collection {collection}`" if collection else "`")
        )
    questions = runs[0].slices[slice_name].questions
    if questions < MIN_QUESTIONS:
        raise ConfigurationError(
            f"only {questions} questions are tagged {collection_tag(collection)!r}; a pick "
            f"needs {MIN_QUESTIONS} or more (`--per-document` asks more of each document)"
        )
    scores = {run.template: round(run.slices[slice_name].metrics[PICKED_BY], 4) for run in runs}
    best = max(scores, key=lambda template: (scores[template], template == "auto"))
    return TemplatePick(
        template=best,
        question_set=slice_name,
        questions=questions,
        mrr=scores[best],
        scores=scores,
    )
