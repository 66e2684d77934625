"""Asset checks as specs on each asset; their logic lives in rag_assets.quality."""

from __future__ import annotations

from dagster import AssetCheckResult, AssetCheckSeverity, AssetCheckSpec

from rag_assets.defs.partitions import documents_partitions
from rag_assets.quality.outcome import CheckOutcome


def specs(asset: str, names: dict[str, str], blocking: bool) -> list[AssetCheckSpec]:
    return [
        # Per document: each partition keeps its own check history and status in the UI.
        AssetCheckSpec(
            name,
            asset=asset,
            description=text,
            blocking=blocking,
            partitions_def=documents_partitions,
        )
        for name, text in names.items()
    ]


def result(
    name: str, found: CheckOutcome, severity: AssetCheckSeverity = AssetCheckSeverity.ERROR
) -> AssetCheckResult:
    return AssetCheckResult(
        check_name=name,
        passed=found.passed,
        severity=severity,
        description=found.description,
        metadata=found.metadata,
    )


CHUNK_CHECKS = {
    "chunk_metadata_complete": "Every chunk row validates against the chunk contract, provenance filled.",
    "chunk_ids_unique_deterministic": "Chunk ids are unique and equal sha256(doc, template, index, text).",
    "header_paths_consistent": "header_path is '/A/B/'-shaped and follows the document's heading tree.",
    "pages_within_document": "Every chunk's pages lie within the document's page count.",
    "chunks_have_content": "No chunk's text is empty or only headings.",
}
# A warning, not a gate: templates drop some text on purpose (internal notes, bare headings).
COVERAGE_CHECKS = {
    "chunks_cover_document": "The share of the IR's characters inside some chunk span meets the floor.",
}
EMBEDDING_CHECKS = {
    "embeddings_valid": "One finite, unit-length vector of the model's dimension per chunk.",
}
INDEX_CHECKS = {
    "index_rows_match_chunks": "The index holds exactly one row per chunk of the document.",
    "chunks_find_themselves": "Sampled chunks come back top-1 when searched by their own vector.",
    "collection_chunks_find_themselves": (
        "After the write, sampled chunks of the documents written and of 100 others spread over "
        "the collection come back in the top 10 of a collection-wide search by their own vector."
    ),
}
