"""Parse beside embed: how long an ingest's runs waited on the parse workers, and how long the
workers sat with nothing submitted while documents remained to parse.

Both are the ingest's own figures: what parsed_documents records per document
(rag_assets/parsers/worker_time.py), summed here. The documents of the first run stand apart:
their parse starts with the ingest, with nothing before it to hide behind, so their run waits
for it while the workers parse; a later run's documents were read ahead beside the runs before.
"""

from __future__ import annotations

from pathlib import Path

from step_usage import materialization_records, table

TALLIED = (
    "parse_wait_seconds",
    "parse_read_ahead",
    "parse_worker_seconds",
    "parse_workers_idle_seconds",
    "page_count",
)


def parse_records(data_dir: Path) -> list[dict]:
    """The run and TALLIED figures of each parsed_documents materialization, in stored order."""
    return materialization_records(data_dir, "parsed_documents", TALLIED)


def overlap_row(what: str, records: list[dict]) -> dict:
    """The records' figures summed, under `what`."""
    return {
        "documents": what,
        "count": len(records),
        "pages": sum(r.get("page_count", 0) for r in records),
        "read ahead": sum(bool(r.get("parse_read_ahead")) for r in records),
        "runs waited on parse s": round(sum(r.get("parse_wait_seconds", 0) for r in records), 1),
        "workers busy s": round(sum(r.get("parse_worker_seconds", 0) for r in records), 1),
        "workers idle before, nothing submitted s": round(
            sum(r.get("parse_workers_idle_seconds", 0) for r in records), 1
        ),
    }


def overlap_rows(records: list[dict]) -> list[dict]:
    """The first run's documents, the later runs', all."""
    opening = records[0]["run_id"] if records else None
    first = [r for r in records if r["run_id"] == opening]
    later = [r for r in records if r["run_id"] != opening]
    rows = [overlap_row("first run's", first)]
    if later:
        rows += [overlap_row("later runs'", later), overlap_row("all", records)]
    return rows


def parse_overlap_report(data_dir: Path) -> str:
    return (
        "## Parse beside embed (what parsed_documents recorded; workers' seconds summed over "
        "workers)\n" + table(overlap_rows(parse_records(data_dir))) + "\n"
    )
