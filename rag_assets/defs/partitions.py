"""One partition per document, added and removed by the inbox sensor or the CLI."""

from dagster import DynamicPartitionsDefinition

documents_partitions = DynamicPartitionsDefinition(name="documents")

# A partition is a document; a run of an ingest is a batch of up to this many (run launch, step
# start, model and index opening are paid once a batch; the model encodes its chunks together).
BATCH_DOCUMENTS = 50
