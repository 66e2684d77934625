"""One partition per document, added and removed by the inbox sensor or the CLI."""

from dagster import DynamicPartitionsDefinition

documents_partitions = DynamicPartitionsDefinition(name="documents")
