"""PostgreSQL storage for real, laid out as deployments/compose runs it.

A throwaway PostgreSQL cluster (Debian's server binaries, `scripts/setup.sh` installs them) on
127.0.0.1, an instance from deployments/scale/dagster.yaml (dagster-postgres, queued runs), the
code location as its own gRPC server started with the compose file's command, and the daemon
against the compose workspace pointed at it. Documents dropped into the inbox are picked up by the
inbox sensor, queued, run side by side, and land in the index.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg2
import pytest
import yaml
from dagster import AssetCheckKey, AssetKey, DagsterInstance, DagsterRunStatus, RunsFilter
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionResolvedStatus
from dagster._core.storage.dagster_run import IN_PROGRESS_RUN_STATUSES

from rag_assets.defs.dagster_private import run_documents
from rag_assets.defs.event_log_storage import DocumentsPostgresEventLogStorage
from rag_assets.defs.landing import PART_TAG
from rag_assets.defs.partitions import documents_partitions
from rag_assets.defs.postgres_storage import DocumentsPostgresRunStorage
from rag_assets.index.store import MilvusIndex
from rag_assets.settings import Settings
from rag_assets.storage import read_chunks
from rag_assets_tests.e2e.test_webserver import free_port
from rag_assets_tests.project.test_deployments import COMPOSE_DIR, SCALE_INSTANCE, compose
from rag_assets_tests.support.processes import with_default_signals

pytestmark = pytest.mark.slow

RUNS_TIMEOUT_S = 1200
DOCUMENTS = {
    "pumps.md": "# Pumps\n\n## Priming\n\nPrime the pump before the first start.\n\n"
    "## Seals\n\nReplace the shaft seal every 4000 operating hours.\n",
    "valves.md": "# Valves\n\n## Gate valves\n\nOpen a gate valve fully or close it fully; "
    "never throttle with it.\n\n## Check valves\n\nA check valve lets water flow one way only.\n",
    "filters.md": "# Filters\n\n## Cartridges\n\nChange the cartridge when the pressure drop "
    "across it exceeds 0.8 bar.\n\n## Backwash\n\nBackwash sand filters weekly for five minutes.\n",
    "motors.md": "# Motors\n\n## Bearings\n\nGrease the motor bearings every 2000 hours.\n\n"
    "## Insulation\n\nMeasure winding insulation yearly; below 1 megaohm, dry the motor.\n",
}
# Two documents a run: two batches, whose runs the queue lets run side by side.
BATCH_DOCUMENTS = 2


def postgres_bindir() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not found:
        if os.environ.get("CI") == "true":
            pytest.fail("PostgreSQL is missing; scripts/setup.sh installs Debian's postgresql")
        pytest.skip(
            "PostgreSQL server binaries are absent (/usr/lib/postgresql/*/bin/initdb); "
            "scripts/setup.sh installs Debian's postgresql"
        )
    return found[-1].parent


@contextlib.contextmanager
def postgres_server() -> Iterator[dict[str, str]]:
    """A fresh cluster on 127.0.0.1 with a password login; yields Dagster's DAGSTER_PG_* variables."""
    bindir = postgres_bindir()
    workdir = Path(tempfile.mkdtemp(prefix="rag_assets_pg_"))
    password = secrets.token_hex(16)
    (workdir / "password").write_text(password)
    owner: dict[str, object] = {}
    if os.geteuid() == 0:
        # initdb and pg_ctl refuse to run as root: the cluster belongs to the postgres user.
        account = pwd.getpwnam("postgres")
        for path in (workdir, workdir / "password"):
            os.chown(path, account.pw_uid, account.pw_gid)
        owner = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}

    def pg(*args: str) -> None:
        subprocess.run(
            [str(bindir / args[0]), *args[1:]],
            check=True,
            capture_output=True,
            **owner,
            cwd=workdir,
            timeout=120,
        )

    port = free_port()
    data = workdir / "data"
    pg("initdb", "-D", str(data), "-U", "dagster", f"--pwfile={workdir / 'password'}",
       "--auth=scram-sha-256", "-E", "UTF8", "--no-instructions")  # fmt: skip
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {workdir}"
    pg("pg_ctl", "-D", str(data), "-l", str(workdir / "server.log"), "-o", options, "-w", "start")
    try:
        connection = psycopg2.connect(
            host="127.0.0.1", port=port, user="dagster", password=password, dbname="postgres"
        )
        connection.autocommit = True  # CREATE DATABASE runs outside a transaction
        with connection.cursor() as cursor:
            cursor.execute("CREATE DATABASE rag_dagster")
        connection.close()
        yield {
            "DAGSTER_PG_HOST": "127.0.0.1",
            "DAGSTER_PG_PORT": str(port),
            "DAGSTER_PG_USER": "dagster",
            "DAGSTER_PG_PASSWORD": password,
            "DAGSTER_PG_DB": "rag_dagster",
        }
    finally:
        pg("pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(workdir, ignore_errors=True)


def dagster_database(pg_env: dict[str, str]):
    """A connection to the Dagster database `postgres_server` made, as its owner."""
    return psycopg2.connect(
        host="127.0.0.1",
        port=int(pg_env["DAGSTER_PG_PORT"]),
        user=pg_env["DAGSTER_PG_USER"],
        password=pg_env["DAGSTER_PG_PASSWORD"],
        dbname=pg_env["DAGSTER_PG_DB"],
    )


@contextlib.contextmanager
def started(command: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen]:
    with log.open("w") as out:
        process = subprocess.Popen(
            with_default_signals(command), env=env, cwd=log.parent, stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def substituted(command: list[str], values: dict[str, str]) -> list[str]:
    """`command` with the argument after each flag in `values` replaced."""
    out = list(command)
    for flag, value in values.items():
        out[out.index(flag) + 1] = value
    return out


def wait_for_code_server(healthcheck: list[str], env: dict, server: subprocess.Popen, log: Path):
    deadline = time.monotonic() + 300
    while subprocess.run(healthcheck, env=env, capture_output=True).returncode != 0:
        assert server.poll() is None, f"code server exited:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"code server not healthy:\n{log.read_text()[-3000:]}"
        time.sleep(2)


def sensor_runs(instance: DagsterInstance):
    """The inbox sensor's runs (each batch's landing part) and checked_part_sensor's (its
    checked part, once that succeeded)."""
    return [
        record
        for sensor in ("inbox_sensor", "checked_part_sensor")
        for record in instance.get_run_records(
            RunsFilter(job_name="ingest_documents", tags={"dagster/sensor_name": sensor})
        )
    ]


def wait_for_sensor_runs(instance: DagsterInstance, daemon_log: Path):
    deadline = time.monotonic() + RUNS_TIMEOUT_S
    while True:
        records = sensor_runs(instance)
        finished = [r for r in records if r.dagster_run.is_finished]
        if len(records) == 2 * len(DOCUMENTS) // BATCH_DOCUMENTS and len(finished) == len(records):
            return records
        assert time.monotonic() < deadline, (
            f"{len(finished)} of {len(records)} runs finished; daemon log:\n"
            + daemon_log.read_text()[-3000:]
        )
        time.sleep(5)


def wait_until_nothing_runs(instance: DagsterInstance) -> None:
    deadline = time.monotonic() + RUNS_TIMEOUT_S
    while instance.get_runs(RunsFilter(statuses=IN_PROGRESS_RUN_STATUSES)):
        assert time.monotonic() < deadline, "runs still in progress"
        time.sleep(5)


def test_daemon_runs_documents_side_by_side_on_postgres(tmp_path, monkeypatch):
    services = compose()["services"]
    with postgres_server() as pg_env:
        for name, value in pg_env.items():
            monkeypatch.setenv(name, value)
        data_dir = tmp_path / "data"
        home = data_dir / "dagster"  # where compose puts DAGSTER_HOME: <data dir>/dagster
        home.mkdir(parents=True)
        shutil.copyfile(SCALE_INSTANCE, home / "dagster.yaml")
        inbox = data_dir / "inbox"
        inbox.mkdir()
        for name, text in DOCUMENTS.items():
            (inbox / name).write_text(text)
        env = {
            **os.environ,
            **pg_env,
            "DAGSTER_HOME": str(home),
            "RAG_ASSETS_DATA_DIR": str(data_dir),
            "RAG_ASSETS_BATCH_DOCUMENTS": str(BATCH_DOCUMENTS),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }

        # The compose workspace and commands, with the container network swapped for loopback.
        port = str(free_port())
        workspace = yaml.safe_load((COMPOSE_DIR / "workspace.yaml").read_text())
        workspace["load_from"][0]["grpc_server"].update(host="127.0.0.1", port=int(port))
        (tmp_path / "workspace.yaml").write_text(yaml.safe_dump(workspace))
        code_server = substituted(
            services["code-location"]["command"], {"-h": "127.0.0.1", "-p": port}
        )
        healthcheck = services["code-location"]["healthcheck"]["test"][1:-1] + [port]
        daemon = substituted(
            services["daemon"]["command"], {"-w": str(tmp_path / "workspace.yaml")}
        )

        with started(code_server, env, tmp_path / "code-server.log") as server:
            wait_for_code_server(healthcheck, env, server, tmp_path / "code-server.log")
            with started(daemon, env, tmp_path / "daemon.log"):
                instance = DagsterInstance.from_config(str(home))
                records = wait_for_sensor_runs(instance, tmp_path / "daemon.log")
            # No run launches without the daemon; those in flight (the automation sensor may have
            # started one) end before their code server and the database go.
            wait_until_nothing_runs(instance)

        assert isinstance(instance.run_storage, DocumentsPostgresRunStorage)
        assert isinstance(instance.event_log_storage, DocumentsPostgresEventLogStorage)
        # The checks' partition view (read as the webserver reads it) has every document.
        check = AssetCheckKey(AssetKey("document_chunks"), "chunk_metadata_complete")
        (state,) = instance.event_log_storage.get_asset_check_state(
            [(check, documents_partitions)]
        ).values()
        succeeded = state.subsets[AssetCheckExecutionResolvedStatus.SUCCEEDED]
        assert len(succeeded.subset_value.get_partition_keys()) == len(DOCUMENTS)
        failed = [
            r.dagster_run.run_id
            for r in records
            if r.dagster_run.status != DagsterRunStatus.SUCCESS
        ]
        assert failed == [], f"runs failed: {failed}"
        # The queue (up to 8 at once) let documents run side by side.
        spans = sorted((r.start_time, r.end_time) for r in records)
        assert any(
            later[0] < earlier[1] for earlier, later in zip(spans, spans[1:], strict=False)
        ), spans
        # The runs and their events are rows in PostgreSQL.
        connection = dagster_database(pg_env)
        with connection, connection.cursor() as cursor:
            cursor.execute("SELECT run_id FROM runs WHERE status = 'SUCCESS'")
            assert {r.dagster_run.run_id for r in records} <= {row[0] for row in cursor.fetchall()}
        connection.close()

        # Each run carried a batch of two documents, named by its range.
        carried = {r.dagster_run.run_id: run_documents(instance, r.dagster_run) for r in records}
    settings = Settings(data_dir=data_dir)
    assert all(len(keys) == BATCH_DOCUMENTS for keys in carried.values())
    keys = {key for batch in carried.values() for key in batch}
    assert len(keys) == len(DOCUMENTS)
    parts = {
        (key, r.dagster_run.tags[PART_TAG])
        for r in records
        for key in carried[r.dagster_run.run_id]
    }
    assert parts == {(key, part) for key in keys for part in ("landing", "checked")}
    # Two batches wrote one collection at once: every chunk once, nothing lost or doubled.
    with MilvusIndex(settings.resolved_milvus_uri) as index:
        (collection,) = index.list_collections()
        chunks = {key: read_chunks(settings, key) for key in keys}
        for key in keys:
            assert chunks[key] and index.count_document(collection, key) == len(chunks[key]), key
        rows = index.scan(collection, ["chunk_id"])
        assert sorted(r["chunk_id"] for r in rows) == sorted(
            c.chunk_id for key in keys for c in chunks[key]
        )
