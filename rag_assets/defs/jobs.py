"""The job that carries documents through every asset, a document or an ingest's batch of them
per run, and the evaluation's own job."""

from dagster import AssetSelection, define_asset_job, in_process_executor

from rag_assets.defs.assets import PIPELINE
from rag_assets.defs.partitions import documents_partitions

INGEST_JOB = "ingest_documents"
# Who started a run, where Dagster's own tags do not say (the UI shows a run without a
# sensor, schedule or automation tag as "Manually launched").
LAUNCHED_BY_TAG = "rag_assets/launched_by"

# In-process: heavy imports (Docling, FlagEmbedding, torch) and model loads are paid once
# per run instead of once per step; a document's seven steps are sequential anyway.
ingest_documents = define_asset_job(
    INGEST_JOB,
    selection=AssetSelection.assets(*PIPELINE),
    partitions_def=documents_partitions,
    executor_def=in_process_executor,
    description="Land, parse, normalize, chunk, embed and index one document, or a batch of them.",
)

EVALUATION_JOB = "evaluate_retrieval"

evaluate_retrieval = define_asset_job(
    EVALUATION_JOB,
    selection=AssetSelection.assets("retrieval_evaluation"),
    description="Re-chunk the ingested documents per template and score retrieval.",
)
