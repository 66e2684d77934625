"""Many documents on one machine: ingest, status, removal, an unchanged re-ingest and the UI's
partition views, timed as a person meets them (the CLI in its own process, GraphQL over HTTP).

    .venv/bin/python bench/scale.py [--documents 10000] [--remove 1000] [--backfill 1000]
                                    [--postgres] [--keep DIR]

Documents are short generated Markdown notes (a title, two sections, about 120 words), so the
figures are those of the orchestration and storage around each document, not of parsing. The
embedded default storage (SQLite, Milvus Lite) under a fresh data folder; `--postgres`: the
Dagster instance of deployments/scale/ (runs, events and schedules in PostgreSQL) on a throwaway
PostgreSQL server (Debian's server binaries, as scripts/setup.sh installs them), the index still
Milvus Lite. Printed: the storage used, the wall time
of each step and, for the UI, each GraphQL query's time against the 3 s target, with the
partitions it covered. `--backfill N`: N of the documents materialized again by a backfill
launched through the webserver's GraphQL as the job page's "Materialize" dialog does, run by
Dagster's daemon: its time and its runs (a run per batch of documents).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rag_assets_tests.e2e.test_postgres_deployment import (  # noqa: E402
    postgres_bindir,
    postgres_server,
)
from rag_assets_tests.e2e.test_webserver import graphql, webserver  # noqa: E402
from rag_assets_tests.project.test_deployments import SCALE_INSTANCE  # noqa: E402

WORDS = [
    "pump",
    "valve",
    "seal",
    "bearing",
    "motor",
    "filter",
    "pressure",
    "flow",
    "rate",
    "hours",
    "cycle",
    "inspect",
    "replace",
    "grease",
    "torque",
    "alarm",
    "sensor",
    "limit",
    "start",
    "stop",
    "drain",
    "flush",
    "gasket",
    "shaft",
    "coupling",
    "panel",
]
GRAPHQL_TARGET_S = 3.0
UNCHANGED_TARGET_S = 120.0

PARTITION_VIEW = """{ assetNodeOrError(assetKey: {path: ["%s"]}) { ... on AssetNode {
    partitionKeys
    partitionStats { numFailed numMaterialized numPartitions }
    assetPartitionStatuses { ... on DefaultPartitionStatuses {
      materializedPartitions failedPartitions materializingPartitions } } } } }"""
CHECK_VIEW = """{ assetNodeOrError(assetKey: {path: ["%s"]}) { ... on AssetNode {
    assetChecksOrError { ... on AssetChecks { checks { name
      executionForLatestMaterialization { status partition }
      partitionStatuses { ... on AssetCheckDefaultPartitionStatuses { succeededPartitions
        failedPartitions inProgressPartitions skippedPartitions executionFailedPartitions } }
    } } } } } }"""
QUERIES = {
    "vector_index partitions": PARTITION_VIEW % "vector_index",
    "raw_documents partitions": PARTITION_VIEW % "raw_documents",
    "document_chunks checks": CHECK_VIEW % "document_chunks",
    "vector_index checks": CHECK_VIEW % "vector_index",
}


def write_notes(folder: Path, count: int) -> None:
    rng = random.Random(7)
    folder.mkdir(parents=True)
    for i in range(count):
        sections = "\n\n".join(
            f"## {rng.choice(WORDS).title()} {s}\n\n"
            + " ".join(rng.choice(WORDS) for _ in range(60))
            + "."
            for s in (1, 2)
        )
        (folder / f"note-{i:05d}.md").write_text(f"# Note {i}\n\n{sections}\n")


def cli(data_dir: Path, *args: str) -> tuple[float, str]:
    """`rag-assets ARGS` in its own process: its wall time and output."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "rag_assets.cli", *args, "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"rag-assets {args[0]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds, done.stdout


def time_ui(data_dir: Path) -> list[tuple[str, float, int]]:
    """Each query's seconds through the webserver (the second of two asks: the first warms the
    code location) and the partitions its answer covered."""
    timed = []
    with webserver(data_dir) as port:
        for name, query in QUERIES.items():
            graphql(port, query, timeout=600)
            started = time.perf_counter()
            node = graphql(port, query, timeout=600)["assetNodeOrError"]
            seconds = time.perf_counter() - started
            covered = len(node.get("partitionKeys") or [])
            for check in (node.get("assetChecksOrError") or {}).get("checks", []):
                covered = max(covered, len(check["partitionStatuses"]["succeededPartitions"]))
            timed.append((name, seconds, covered))
    return timed


@contextlib.contextmanager
def postgres_instance(data_dir: Path) -> Iterator[str]:
    """`data_dir`'s Dagster instance on a throwaway PostgreSQL server, laid out as
    test_postgres_deployment.py lays it out; yields the server's version. Its DAGSTER_PG_*
    variables go into this process's environment, which the CLI, the webserver and the daemon
    inherit; the scale dagster.yaml already in the Dagster home is kept by `rag-assets` (it
    names storage of its own)."""
    postgres = postgres_bindir() / "postgres"
    # "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
    version = subprocess.run([postgres, "--version"], capture_output=True, text=True).stdout
    version = version.split()[2]
    with postgres_server() as pg_env:
        os.environ.update(pg_env)
        home = data_dir / "dagster"
        home.mkdir(parents=True)
        shutil.copyfile(SCALE_INSTANCE, home / "dagster.yaml")
        yield f"PostgreSQL {version}"


LAUNCH_BACKFILL = """mutation ($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }"""
BACKFILL_STATUS = """query ($id: String!) { partitionBackfillOrError(backfillId: $id) {
    ... on PartitionBackfill { status } } }"""
BACKFILL_RUNS = """query ($id: String!) { runsOrError(filter: {tags: [{key: "dagster/backfill",
    value: $id}]}) { ... on Runs { results { status } } } }"""
BACKFILL_DONE = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}


@contextlib.contextmanager
def daemon(data_dir: Path) -> Iterator[None]:
    """Dagster's daemon over `data_dir`'s instance, as `rag-assets ui` runs it (the backfill
    and run queue daemons among its others)."""
    env = {
        **os.environ,
        "DAGSTER_HOME": str(data_dir / "dagster"),
        "RAG_ASSETS_DATA_DIR": str(data_dir),
    }
    log = (data_dir / "daemon.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "dagster._daemon", "run", "-w", str(REPO / "workspace.yaml")],
        env=env,
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield
    finally:
        process.terminate()
        process.wait(timeout=120)
        log.close()


def backfill(data_dir: Path, keys: list[str]) -> tuple[float, str]:
    """A backfill of `keys` launched as the job page's "Materialize" dialog does, run by the
    live daemon: its wall time and what its runs did."""
    params = {
        "selector": {
            "partitionSetName": "ingest_documents_partition_set",
            "repositorySelector": {
                "repositoryLocationName": "rag_assets",
                "repositoryName": "__repository__",
            },
        },
        "partitionNames": keys,
        "fromFailure": False,
    }
    with webserver(data_dir) as port, daemon(data_dir):
        started = time.perf_counter()
        launched = graphql_with(port, LAUNCH_BACKFILL, {"params": params})
        backfill_id = launched["launchPartitionBackfill"]["backfillId"]
        while True:
            answer = graphql_with(port, BACKFILL_STATUS, {"id": backfill_id})
            status = answer["partitionBackfillOrError"]["status"]
            if status in BACKFILL_DONE:
                break
            time.sleep(5)
        seconds = time.perf_counter() - started
        runs = graphql_with(port, BACKFILL_RUNS, {"id": backfill_id})["runsOrError"]["results"]
    done = Counter(run["status"] for run in runs)
    said = ", ".join(f"{count} {status.lower()}" for status, count in sorted(done.items()))
    return (
        seconds,
        f"backfill {status.lower()}; {len(runs)} runs ({said}); {len(keys) / seconds:.2f} docs/s",
    )


def graphql_with(port: int, query: str, variables: dict) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query, "variables": variables}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        answer = json.load(response)
    if "errors" in answer:
        raise SystemExit(f"GraphQL: {answer['errors']}")
    return answer["data"]


def measure(
    args: argparse.Namespace,
    notes: Path,
    data_dir: Path,
    removing: int,
    rows: list[tuple[str, str, str]],
) -> None:
    """Each step in turn, its row added to `rows` as it ends (the rows so far are printed even
    when a later step fails)."""
    seconds, out = cli(data_dir, "ingest", str(notes))
    indexed = out.strip().splitlines()[-1]
    rows.append(
        (
            f"ingest {args.documents} notes",
            f"{seconds:.1f} s",
            f"{args.documents / seconds:.2f} docs/s; {indexed}",
        )
    )
    seconds, out = cli(data_dir, "status", "--json")
    listed = len(json.loads(out))
    rows.append(("status", f"{seconds:.1f} s", f"{listed} documents listed"))
    seconds, _ = cli(data_dir, "ingest", str(notes))
    rows.append(
        (
            "unchanged re-ingest",
            f"{seconds:.1f} s",
            f"target < {UNCHANGED_TARGET_S:.0f} s: {'met' if seconds < UNCHANGED_TARGET_S else 'not met'}",
        )
    )
    for name, seconds, covered in time_ui(data_dir):
        met = "met" if seconds <= GRAPHQL_TARGET_S else "not met"
        rows.append((f"UI: {name}", f"{seconds:.2f} s", f"{covered} partitions; target 3 s {met}"))
    if args.backfill:
        statuses = json.loads(cli(data_dir, "status", "--json")[1])
        keys = sorted(s["doc_id"] for s in statuses)[-args.backfill :]
        seconds, said = backfill(data_dir, keys)
        rows.append((f"UI backfill of {len(keys)} documents", f"{seconds:.1f} s", said))
    doomed = sorted(notes.glob("*.md"))[:removing]
    seconds, _ = cli(data_dir, "remove", *(p.name for p in doomed))
    rows.append((f"remove {removing} documents", f"{seconds:.1f} s", ""))
    seconds, out = cli(data_dir, "status", "--json")
    rows.append(("status after", f"{seconds:.1f} s", f"{len(json.loads(out))} documents"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=10000)
    parser.add_argument("--remove", type=int, help="documents to remove (a tenth by default)")
    parser.add_argument("--keep", type=Path, help="work here and keep it (default: a temp dir)")
    parser.add_argument(
        "--backfill",
        type=int,
        default=0,
        help="documents also re-run by a backfill launched from the UI through the live daemon",
    )
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="the Dagster instance on a throwaway PostgreSQL server (deployments/scale/)",
    )
    args = parser.parse_args()
    removing = args.remove if args.remove is not None else args.documents // 10
    work = args.keep or Path(tempfile.mkdtemp(prefix="rag-scale-"))
    notes, data_dir = work / "notes", work / "data"
    rows: list[tuple[str, str, str]] = []
    storage = "PostgreSQL" if args.postgres else "SQLite"
    try:
        write_notes(notes, args.documents)
        if args.postgres:
            with postgres_instance(data_dir) as storage:
                measure(args, notes, data_dir, removing, rows)
        else:
            measure(args, notes, data_dir, removing, rows)
    finally:
        print(f"scale: {args.documents} generated Markdown notes, {storage} and Milvus Lite\n")
        print("| step | time | |\n|---|---:|---|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
