"""One partition per document, added and removed by the inbox sensor or the CLI; runs carry
them in batches."""

from dagster import BackfillPolicy, DynamicPartitionsDefinition

documents_partitions = DynamicPartitionsDefinition(name="documents")

# A partition is a document; a run is a batch. A backfill (and an ingest, rag_assets.runner)
# hands every per-document step up to this many documents per run: run launch, step start, model
# and index opening are paid once a batch, and the model encodes the batch's chunks together.
BATCH_DOCUMENTS = 50
document_batches = BackfillPolicy.multi_run(max_partitions_per_run=BATCH_DOCUMENTS)
