"""retrieval_evaluation: every ingested document re-chunked per template, questions scored.

Not partitioned: one materialization evaluates the whole corpus, so the UI plots each
metric over runs. It evaluates the documents the index holds, reading their stored IR (not
their chunks), so templates other than the configured one are compared on the same documents.

With no evaluation set in its folder there is nothing to measure: the step succeeds without
materializing (Dagster shows the asset and its check skipped) and says why in one line.
"""

import time
from pathlib import Path

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetObservation,
    AssetOut,
    Config,
    ConfigurableResource,
    Failure,
    MetadataValue,
    Output,
    multi_asset,
)
from pydantic import Field

from rag_assets.defs.assets.chunking import table_markdown
from rag_assets.defs.assets.documents import normalized_documents
from rag_assets.defs.assets.indexing import vector_index
from rag_assets.defs.metadata import seconds
from rag_assets.defs.partitions import documents_partitions
from rag_assets.defs.resources import (
    CollectionsResource,
    EmbeddingResource,
    MilvusResource,
    group_config,
)
from rag_assets.errors import ConfigurationError
from rag_assets.retrieval.evaluation.comparison import (
    TOP_K,
    compare_templates,
    run_specs,
)
from rag_assets.retrieval.evaluation.sets import find_eval_sets, load_eval_sets, passage_document
from rag_assets.settings.fusion import FusionSettings
from rag_assets.storage import read_documents

DEFAULT_TEMPLATES = ("fixed", "semantic", "auto")
EVALUATION_VERSION = "1"  # relevance and metric definitions
EVALUATION = "retrieval_evaluation"
FLOORS_CHECK = "metrics_above_floors"


FusionConfig = group_config(FusionSettings)


class EvaluationResource(ConfigurableResource):
    """Where the evaluation sets are, the root the documents' partitions are stored under, and
    the fusion the search it measures uses (RAG_ASSETS_FUSION_*)."""

    eval_dir: str
    storage_root: str
    fusion: FusionConfig = Field(default_factory=FusionConfig)  # type: ignore[valid-type]


class RetrievalEvaluationConfig(Config):
    templates: list[str] = Field(
        default_factory=lambda: list(DEFAULT_TEMPLATES),
        description="Templates to compare; `auto` picks one per document by its text.",
    )
    single_retriever_template: str = Field(
        "semantic", description="Also scored with BM25 alone and dense alone; empty for none."
    )
    top_k: int = Field(TOP_K, ge=10, description="Hits scored per question.")
    floors: dict[str, float] = Field(
        default_factory=dict,
        description="Metric key (as in the metadata, e.g. `auto/mrr@10`) -> lowest accepted value.",
    )


# A multi-asset only for what @asset cannot say: its output and its check may both be left out
# (a run with no evaluation set succeeds, the asset and the check read skipped).
@multi_asset(
    name=EVALUATION,
    outs={
        EVALUATION: AssetOut(
            is_required=False,
            group_name="evaluation",
            code_version=EVALUATION_VERSION,
            io_manager_key="json_io_manager",
            kinds={"milvus"},
            description=(
                "Recall@1/5/10, MRR@10, nDCG@10 per template and slice on the evaluation sets."
            ),
        )
    },
    # The model and the BM25 analyzer change what is measured, as the documents do; the index
    # is which documents are measured (a document indexed, re-indexed or removed changes it).
    deps=[
        normalized_documents,
        table_markdown,
        vector_index,
        "embedding_settings",
        "index_settings",
    ],
    pool="milvus",
    can_subset=True,
    check_specs=[
        AssetCheckSpec(
            FLOORS_CHECK,
            asset=EVALUATION,
            description="Every metric given a floor in the config is at or above it.",
        )
    ],
)
def retrieval_evaluation(
    context: AssetExecutionContext,
    config: RetrievalEvaluationConfig,
    evaluation: EvaluationResource,
    embedding: EmbeddingResource,
    milvus: MilvusResource,
    collections: CollectionsResource,
):

    started = time.perf_counter()
    eval_dir = Path(evaluation.eval_dir)
    try:
        sets = load_eval_sets(eval_dir) if find_eval_sets(eval_dir) else []
    except ConfigurationError as error:
        raise Failure(description=str(error), allow_retries=False) from error
    left_out = [problem for s in sets for problem in s.problems]
    for problem in left_out:
        context.log.warning(problem)
    questions = [q for s in sets for q in s.questions]
    if not questions:
        reason = no_questions_reason(eval_dir)
        context.log.info(f"skipped: {reason}")
        context.log_event(AssetObservation(asset_key=EVALUATION, metadata={"skipped": reason}))
        return
    doc_ids = context.instance.get_dynamic_partitions(documents_partitions.name)
    documents, missing = read_documents(evaluation.storage_root, doc_ids)
    documents += [passage_document(p) for s in sets for p in s.passages]
    if missing:
        context.log.warning(f"{len(missing)} documents have no stored IR yet: {missing[:5]}")
    embedder, fallback_reason = embedding.load()
    if fallback_reason:
        context.log.warning(fallback_reason)

    try:
        comparison = compare_templates(
            documents,
            questions,
            run_specs(config.templates, config.single_retriever_template or None),
            embedder,
            embedding.token_counter(),
            lambda prefix: milvus.open(collection_prefix=prefix),
            options={
                "max_tokens": collections.chunking.chunk_max_tokens,
                "overlap_tokens": collections.chunking.chunk_overlap_tokens,
            },
            fusion=FusionSettings(**evaluation.fusion.model_dump()),
            top_k=config.top_k,
            log=context.log.info,
            embedded=embedding.embedded_part(),
        )
    except ConfigurationError as error:  # an unknown template, a collection of another model
        raise Failure(description=str(error), allow_retries=False) from error
    flat = comparison.flat_metrics()
    if AssetKey(EVALUATION) not in context.selected_asset_keys:  # the check alone, from the UI
        yield floors_check(flat, config.floors)
        return
    yield Output(
        comparison,
        output_name=EVALUATION,
        metadata={
            **flat,
            "table": MetadataValue.md(comparison.markdown_table()),
            "sets": ", ".join(s.name for s in sets),
            "documents": comparison.documents,
            "questions": comparison.questions,
            "skipped_questions": MetadataValue.json(comparison.skipped),
            "left_out_lines": MetadataValue.json(left_out),
            "documents_without_ir": len(missing),
            "templates_used": MetadataValue.json(
                {run.name: run.templates_used for run in comparison.runs}
            ),
            "model": embedder.name,
            "evaluation_seconds": seconds(time.perf_counter() - started),
        },
    )
    yield floors_check(flat, config.floors)


def no_questions_reason(eval_dir: Path) -> str:
    return f"no evaluation questions under {eval_dir} (see docs/evaluation.md)"


def floors_check(metrics: dict[str, float], floors: dict[str, float]) -> AssetCheckResult:
    """Fails when a floored metric is below its floor or was not measured at all."""
    below = {
        key: metrics.get(key) for key, floor in floors.items() if metrics.get(key, -1.0) < floor
    }
    if not floors:
        description = "no floors configured"
    elif below:
        description = "below the floor: " + ", ".join(
            f"{key} {'not measured' if value is None else f'{value:.3f}'} < {floors[key]}"
            for key, value in below.items()
        )
    else:
        description = f"all {len(floors)} floored metrics at or above their floors"
    return AssetCheckResult(
        check_name=FLOORS_CHECK,
        passed=not below,
        severity=AssetCheckSeverity.ERROR,
        description=description,
        metadata={
            **{f"floor {key}": value for key, value in floors.items()},
            "below": MetadataValue.json({k: v for k, v in below.items()}),
        },
    )
