"""One partition per document, added and removed by the inbox sensor or the CLI; runs carry
them in batches."""

from typing import Any

from dagster import BackfillPolicy, DynamicPartitionsDefinition, asset

from rag_assets.settings.groups import BATCH_DOCUMENTS

documents_partitions = DynamicPartitionsDefinition(name="documents")

# A partition is a document; a run is a batch (run launch, step start, model and index opening
# are paid once a batch; the model encodes the batch's chunks together). An ingest, the inbox
# sensor and the refresh schedule cut their batches (defs/batches.py, RAG_ASSETS_BATCH_DOCUMENTS and RAG_ASSETS_BATCH_PAGES); a
# backfill cuts its runs by this policy. `batch_split_sensor` splits a batch's failed run.
document_batches = BackfillPolicy.multi_run(max_partitions_per_run=BATCH_DOCUMENTS)


def document_asset(**settings: Any):
    """`@asset` with what every per-document asset shares: a partition per document, backfilled
    in batches; `settings` are the asset's own."""
    return asset(partitions_def=documents_partitions, backfill_policy=document_batches, **settings)
