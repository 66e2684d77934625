"""The deployments, checked statically: Docker and Kubernetes do not run here.

Every instance config validates against Dagster's schema; the compose file is parsed and its
services, volumes, dependencies, environment and workspace checked against each other and the
project; the Helm values are validated against `deployments/kubernetes/chart-schema-excerpt.json`
(the part of the Dagster chart's schema they use, written from the chart's own) and against the
Secrets and volumes they name; their object store runs for real as a local S3 server (moto).
PostgreSQL itself runs for real in test_postgres_deployment.py.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import jsonschema
import pytest
import s3fs
import yaml
from dagster._core.instance.config import dagster_instance_config
from moto.server import ThreadedMotoServer

from rag_assets.index.store import MilvusIndex
from rag_assets.runner.ingest import ingest
from rag_assets.settings import Settings
from rag_assets.settings_doc import rows
from rag_assets.storage import read_chunks
from rag_assets_tests.conftest import REPO_ROOT

DEPLOYMENTS = REPO_ROOT / "deployments"
COMPOSE_DIR = DEPLOYMENTS / "compose"
K8S_DIR = DEPLOYMENTS / "kubernetes"
SCALE_INSTANCE = DEPLOYMENTS / "scale" / "dagster.yaml"
INSTANCE_FILES = [REPO_ROOT / "dagster.yaml", *sorted(DEPLOYMENTS.rglob("dagster.yaml"))]
DAGSTER_SERVICES = ("code-location", "webserver", "daemon")
PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())


def instance_env_vars(path: Path) -> set[str]:
    """The variables an instance config reads through `{env: NAME}`."""
    found: set[str] = set()

    def walk(node) -> None:
        if isinstance(node, dict):
            if set(node) == {"env"}:
                found.add(node["env"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(yaml.safe_load(path.read_text()))
    return found


def project_env_vars() -> set[str]:
    """Every RAG_ASSETS_* variable the package reads: its configuration reference."""
    return {variable for variable, _, _ in rows()}


def env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines, and the names of commented-out `# KEY=...` examples (as "")."""
    values: dict[str, str] = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^(#\s*)?([A-Z][A-Z0-9_]*)=(.*)$", line.strip())
        if match:
            values.setdefault(match[2], "" if match[1] else match[3])
    return values


def compose() -> dict:
    return yaml.safe_load((COMPOSE_DIR / "docker-compose.yml").read_text())


def option(command: list[str], *flags: str) -> str:
    (index,) = [i for i, arg in enumerate(command) if arg in flags]
    return command[index + 1]


@pytest.mark.parametrize("path", INSTANCE_FILES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_instance_config_validates(path, monkeypatch):
    for name in instance_env_vars(path):
        monkeypatch.setenv(name, "5432" if name.endswith("_PORT") else "placeholder")
    config, _ = dagster_instance_config(str(path.parent), path.name)
    assert config["run_coordinator"]["class"] == "QueuedRunCoordinator"
    assert config["concurrency"]["runs"]["max_concurrent_runs"] >= 1


def test_there_is_more_than_the_local_instance():
    assert len(INSTANCE_FILES) >= 2


# --- docker compose ---------------------------------------------------------------------------


def test_compose_has_every_part():
    services = compose()["services"]
    assert set(services) == {"postgres", "etcd", "minio", "milvus", *DAGSTER_SERVICES}
    assert services["milvus"]["command"] == ["milvus", "run", "standalone"]
    assert services["milvus"]["environment"]["ETCD_ENDPOINTS"] == "etcd:2379"
    assert services["milvus"]["environment"]["MINIO_ADDRESS"] == "minio:9000"
    assert services["daemon"]["command"][:2] == ["dagster-daemon", "run"]
    assert services["webserver"]["command"][0] == "dagster-webserver"
    assert services["code-location"]["command"][:3] == ["dagster", "code-server", "start"]


def test_compose_dependencies_name_services_that_report_health():
    services = compose()["services"]
    for name, service in services.items():
        depends = service.get("depends_on", {})
        for target in depends:
            assert target in services and target != name, f"{name} depends on {target}"
            if isinstance(depends, dict) and depends[target]["condition"] == "service_healthy":
                assert "healthcheck" in services[target], f"{target} has no healthcheck"
    # Everything Dagster needs is up before a Dagster process starts.
    for name in DAGSTER_SERVICES:
        assert "postgres" in services[name]["depends_on"]
    assert "milvus" in services["code-location"]["depends_on"]


def test_compose_data_lives_on_named_volumes_and_mounts_exist():
    spec = compose()
    declared = set(spec["volumes"])
    used: set[str] = set()
    for name, service in spec["services"].items():
        for mount in service.get("volumes", []):
            source, target = mount.split(":")[:2]
            if source.startswith((".", "/")):
                assert (COMPOSE_DIR / source).resolve().is_file(), f"{name}: {source} is missing"
            else:
                assert source in declared, f"{name}: volume {source} is not declared"
                used.add(source)
    assert used == declared
    stateful = {
        "postgres": "/var/lib/postgresql/data",
        "etcd": "/etcd",
        "minio": "/minio_data",
        "milvus": "/var/lib/milvus",
        "code-location": "/data",
    }
    for name, target in stateful.items():
        mounts = {m.split(":")[1]: m.split(":")[0] for m in spec["services"][name]["volumes"]}
        assert mounts[target] in declared, f"{name}: {target} is not on a named volume"


def compose_environment(name: str) -> dict[str, str]:
    """A service's environment as the container sees it: its env file's example, then
    `environment:` over it (as compose does)."""
    service = compose()["services"][name]
    values: dict[str, str] = {}
    for path in [service["env_file"]] if isinstance(service.get("env_file"), str) else []:
        values |= env_file(COMPOSE_DIR / f"{path}.example")
    return values | {k: str(v) for k, v in service.get("environment", {}).items()}


def test_compose_secrets_come_from_an_env_file_kept_out_of_git():
    services = compose()["services"]
    for name in ("postgres", *DAGSTER_SERVICES):
        path = services[name]["env_file"]
        assert (COMPOSE_DIR / f"{path}.example").is_file()
    ignored = (REPO_ROOT / ".gitignore").read_text().splitlines()
    assert "deployments/compose/rag_assets.env" in ignored
    secrets = env_file(COMPOSE_DIR / "rag_assets.env.example")
    for name in DAGSTER_SERVICES:
        assert "DAGSTER_PG_PASSWORD" not in services[name]["environment"]
    assert secrets["DAGSTER_PG_PASSWORD"]
    # The server creates the user and database Dagster logs in with.
    for part in ("USER", "PASSWORD", "DB"):
        assert secrets[f"POSTGRES_{part}"] == secrets[f"DAGSTER_PG_{part}"]


def test_compose_dagster_services_have_what_the_instance_and_project_read():
    services = compose()["services"]
    mounted = {}
    for name in DAGSTER_SERVICES:
        env = compose_environment(name)
        mounts = {m.split(":")[1]: m.split(":")[0] for m in services[name]["volumes"]}
        instance_yaml = mounts[f"{env['DAGSTER_HOME']}/dagster.yaml"]
        mounted[name] = (COMPOSE_DIR / instance_yaml).resolve()
        for variable in instance_env_vars(mounted[name]):
            assert env.get(variable), f"{name}: {variable} is not set"
        assert env["DAGSTER_PG_HOST"] in services
        # The instance lives in the data volume, where `rag-assets ingest` in the container
        # looks for it (<data dir>/dagster), so CLI runs land in PostgreSQL too.
        assert env["DAGSTER_HOME"] == f"{env['RAG_ASSETS_DATA_DIR']}/dagster"
        assert mounts[env["RAG_ASSETS_DATA_DIR"]] == "rag_data"
    assert set(mounted.values()) == {SCALE_INSTANCE}
    milvus = re.fullmatch(
        r"http://([\w-]+):(\d+)", compose_environment("code-location")["RAG_ASSETS_MILVUS_URI"]
    )
    assert milvus and milvus[1] in services and milvus[2] == "19530"


def test_every_variable_the_deployments_name_is_read_by_someone():
    """A misspelt RAG_ASSETS_* name in a deployment would be silently ignored."""
    named: set[str] = set()
    for path in [*COMPOSE_DIR.iterdir(), *K8S_DIR.iterdir(), *(DEPLOYMENTS / "local").iterdir()]:
        named |= set(re.findall(r"RAG_ASSETS_[A-Z0-9_]*[A-Z0-9]", path.read_text()))
    assert named - project_env_vars() == set()
    assert {"RAG_ASSETS_DATA_DIR", "RAG_ASSETS_MILVUS_URI", "RAG_ASSETS_STORAGE_ROOT"} <= named


def test_compose_workspace_points_at_the_code_location():
    services = compose()["services"]
    (entry,) = yaml.safe_load((COMPOSE_DIR / "workspace.yaml").read_text())["load_from"]
    server = entry["grpc_server"]
    command = services["code-location"]["command"]
    assert server["host"] in services and server["host"] == "code-location"
    assert str(server["port"]) == option(command, "-p", "--port")
    assert option(command, "-h", "--host") == "0.0.0.0"
    assert services["code-location"]["healthcheck"]["test"][-1] == str(server["port"])
    tool = PYPROJECT["tool"]["dagster"]
    assert option(command, "-m", "--module-name") == tool["module_name"]
    assert server["location_name"] == option(command, "--location-name")
    assert server["location_name"] == tool["code_location_name"]
    for name in ("webserver", "daemon"):
        mounts = {m.split(":")[0]: m.split(":")[1] for m in services[name]["volumes"]}
        assert option(services[name]["command"], "-w") == mounts["./workspace.yaml"]


def test_the_image_is_built_as_setup_sh_installs():
    dockerfile = (COMPOSE_DIR / "Dockerfile").read_text()
    build = compose()["services"]["code-location"]["build"]
    assert (
        COMPOSE_DIR / build["context"] / build["dockerfile"]
    ).resolve() == COMPOSE_DIR / "Dockerfile"
    torch_pin = re.search(r"^torch==\S+$", (REPO_ROOT / "constraints.txt").read_text(), re.M)[0]
    assert f'{torch_pin} \\\n && pip install -c constraints.txt ".[postgres,s3]"' in dockerfile
    assert "pip uninstall -y torchvision" in dockerfile
    for copied in re.findall(r"^COPY (.+) \S+$", dockerfile, re.M):
        for path in copied.split():
            assert (REPO_ROOT / path).exists(), path
    cmd = json.loads(re.search(r"^CMD (.+)$", dockerfile, re.M)[1])
    assert cmd == compose()["services"]["code-location"]["command"]
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert "dagster-postgres" in " ".join(extras["postgres"]) and "s3fs" in " ".join(extras["s3"])


# --- Kubernetes (Helm values for the official Dagster chart) ---------------------------------


def helm_values() -> dict:
    return yaml.safe_load((K8S_DIR / "values.yaml").read_text())


def schema_validator() -> jsonschema.Draft7Validator:
    schema = json.loads((K8S_DIR / "chart-schema-excerpt.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def test_helm_values_validate_against_the_chart_schema():
    errors = [
        f"{list(e.absolute_path)}: {e.message}"
        for e in schema_validator().iter_errors(helm_values())
    ]
    assert errors == []


def test_the_schema_excerpt_refuses_a_misspelt_key():
    values = helm_values()
    deployment = values["dagster-user-deployments"]["deployments"][0]
    deployment["envSecret"] = deployment.pop("envSecrets")
    assert not schema_validator().is_valid(values)


def test_helm_values_name_the_chart_of_the_pinned_dagster():
    (dagster_pin,) = [d for d in PYPROJECT["project"]["dependencies"] if d.startswith("dagster==")]
    version = dagster_pin.split("==")[1]
    assert f"--version {version} " in (K8S_DIR / "values.yaml").read_text()


def test_helm_values_run_the_code_location_on_kubernetes_with_postgres():
    values = helm_values()
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    assert values["dagsterDaemon"]["runCoordinator"]["type"] == "QueuedRunCoordinator"
    assert values["postgresql"]["enabled"] is False and values["postgresql"]["postgresqlHost"]
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    args = deployment["codeServerArgs"]
    assert option(args, "-m", "--module-name") == PYPROJECT["tool"]["dagster"]["module_name"]
    assert deployment["includeConfigInLaunchedRuns"]["enabled"] is True
    env = {e["name"]: e["value"] for e in deployment["env"]}
    assert env["RAG_ASSETS_STORAGE_ROOT"].startswith("s3://")
    assert re.fullmatch(r"https?://[\w.-]+:\d+", env["RAG_ASSETS_MILVUS_URI"])
    scale = yaml.safe_load(SCALE_INSTANCE.read_text())["event_log_storage"]["config"]["postgres_db"]
    assert values["postgresql"]["postgresqlScheme"] == scale["scheme"]
    # Secrets never sit in the values.
    assert "postgresqlPassword" not in values["postgresql"]
    assert values["generatePostgresqlPasswordSecret"] is False
    assert not {"RAG_ASSETS_MILVUS_TOKEN", "RAG_ASSETS_LLM_API_KEY"} & set(env)


def test_helm_values_name_secrets_and_volumes_that_exist():
    values = helm_values()
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    manifests = [
        doc
        for path in ("secrets.example.yaml", "storage.yaml")
        for doc in yaml.safe_load_all((K8S_DIR / path).read_text())
    ]
    secrets = {m["metadata"]["name"]: m["stringData"] for m in manifests if m["kind"] == "Secret"}
    claims = {m["metadata"]["name"] for m in manifests if m["kind"] == "PersistentVolumeClaim"}
    assert "postgresql-password" in secrets[values["global"]["postgresqlSecretName"]]
    for ref in deployment["envSecrets"]:
        assert set(secrets[ref["name"]]) >= {"RAG_ASSETS_MILVUS_TOKEN", "AWS_ACCESS_KEY_ID"}
    volumes = {v["name"]: v for v in deployment["volumes"]}
    assert {v["persistentVolumeClaim"]["claimName"] for v in volumes.values()} == claims
    env = {e["name"]: e["value"] for e in deployment["env"]}
    mounts = {m["mountPath"]: m["name"] for m in deployment["volumeMounts"]}
    assert set(mounts.values()) == set(volumes)
    assert env["RAG_ASSETS_DATA_DIR"] in mounts
    assert Path(env["RAG_ASSETS_EMBEDDING_MODEL"]).parent.as_posix() in mounts


def test_helm_concurrency_matches_the_scale_instance():
    """The chart writes these into its dagster.yaml; they must be the limits of deployments/scale."""
    helm = helm_values()["concurrency"]
    scale = yaml.safe_load(SCALE_INSTANCE.read_text())["concurrency"]
    assert helm["enabled"] is True
    assert helm["pools"]["defaultLimit"] == scale["pools"]["default_limit"]
    assert helm["pools"]["granularity"] == scale["pools"]["granularity"] == "run"
    assert helm["runs"]["maxConcurrentRuns"] == scale["runs"]["max_concurrent_runs"]
    assert helm["runs"]["tagConcurrencyLimits"] == scale["runs"]["tag_concurrency_limits"]
    # The chart refuses limits set both here and in the run coordinator's config.
    assert "config" not in helm_values()["dagsterDaemon"]["runCoordinator"]


@pytest.mark.slow
def test_assets_land_on_the_object_store_the_helm_values_name(tmp_path, monkeypatch):
    """RAG_ASSETS_STORAGE_ROOT=s3://... as values.yaml sets it: every asset partition is written
    through the UPath IO managers to S3 (a local S3 server here) and read back from there."""
    (deployment,) = helm_values()["dagster-user-deployments"]["deployments"]
    root = {e["name"]: e["value"] for e in deployment["env"]}["RAG_ASSETS_STORAGE_ROOT"]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        for name, value in {
            "AWS_ACCESS_KEY_ID": "rag-assets-test",
            "AWS_SECRET_ACCESS_KEY": "rag-assets-test",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT_URL_S3": f"http://{host}:{port}",
            "RAG_ASSETS_DATA_DIR": str(tmp_path / "data"),
            "RAG_ASSETS_STORAGE_ROOT": root,
        }.items():
            monkeypatch.setenv(name, value)
        bucket_root = root.removeprefix("s3://")
        store = s3fs.S3FileSystem(skip_instance_cache=True)
        store.mkdir(bucket_root.split("/")[0])
        source = tmp_path / "pumps.md"
        source.write_text("# Pumps\n\n## Priming\n\nPrime the pump before the first start.\n")

        settings = Settings.from_env()
        (outcome,) = ingest(settings, [source])
        assert outcome.success, outcome.summary()
        stored = store.find(bucket_root)
        for asset in ("parsed_documents", "normalized_documents", "document_chunks"):
            assert any(f"/{asset}/{outcome.doc_id}." in key for key in stored), asset
        assert not [key for key in stored if key.endswith(".tmp")]
        assert not (settings.data_dir / "assets").exists()
        chunks = read_chunks(settings, outcome.doc_id)
        with MilvusIndex(settings.resolved_milvus_uri) as index:
            (collection,) = index.list_collections()
            assert chunks and index.count_document(collection, outcome.doc_id) == len(chunks)
    finally:
        server.stop()
