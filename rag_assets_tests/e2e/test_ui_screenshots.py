"""What a person sees: the UI over an ingested document, read through GraphQL and in Chromium.

The webserver runs over the instance `ingest` wrote, as `rag-assets ui` serves it; Debian's
headless Chromium renders three pages to PNG under test-output/ui/ and dumps their DOM, which
must hold what the page claims to show and no error.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from dagster import DagsterInstance, build_sensor_context

from rag_assets.cli import main
from rag_assets.defs.assets import PIPELINE
from rag_assets.defs.assets.evaluation import EVALUATION, FLOORS_CHECK
from rag_assets.defs.dagster_private import run_documents
from rag_assets.defs.landing import PART_TAG
from rag_assets.defs.sensors import recovery_sensor
from rag_assets.instance import open_instance
from rag_assets.runner.evaluation import evaluate
from rag_assets.runner.ingest import DocumentOutcome, ingest
from rag_assets.settings import Settings
from rag_assets_tests.conftest import REPO_ROOT
from rag_assets_tests.e2e.test_webserver import graphql, webserver
from rag_assets_tests.support.sample_corpus import CORPUS

pytestmark = pytest.mark.slow

OUTPUT = REPO_ROOT / "test-output" / "ui"
DOCUMENT = CORPUS / "operator-guide.md"
TITLE = (
    "ASHC Driver Operator Guide"  # the document's first heading: the chunk preview opens with it
)
CHUNK_CHECKS = {
    "chunk_ids_unique_deterministic",
    "chunk_metadata_complete",
    "chunks_cover_document",
    "chunks_have_content",
    "header_paths_consistent",
    "pages_within_document",
}
# What Dagster's UI prints when a page or a query breaks, or what it was asked for is missing.
ERROR_TEXT = re.compile(
    r"unexpected (graphql )?error|something went wrong|pythonerror|traceback|"
    r"not found|does not exist|failed to (fetch|load)|could not be loaded|error loading",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class UI:
    port: int
    key: str  # operator-guide.md: landed
    pdf_key: str  # a two-page PDF: landed
    failed: DocumentOutcome  # a text file named .pdf: failed in raw_documents
    corrupt: DocumentOutcome  # a PDF no parser opens: failed in parsed_documents
    data_dir: Path


def _two_page_pdf(path: Path) -> Path:
    import pymupdf

    bodies = (
        "The reset register clears every pending interrupt when software writes one to bit 0. "
        "Drivers poll the busy flag until the controller reports that the reset completed.",
        "Clock control selects the card clock divider. Firmware must stop the clock before "
        "changing the divider, wait for the stable flag, and only then enable it again.",
    )
    with pymupdf.open() as pdf:
        for number, body in enumerate(bodies, start=1):
            page = pdf.new_page()
            page.insert_text((72, 72), f"{number} Section {number}", fontsize=16)
            page.insert_textbox(pymupdf.Rect(72, 100, 520, 300), body, fontsize=11)
        pdf.save(path)
    return path


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UI]:
    folder = tmp_path_factory.mktemp("ui")
    broken = folder / "broken.pdf"
    broken.write_text("plain text under a .pdf name\n")
    corrupt = folder / "corrupt.pdf"
    corrupt.write_bytes(b"%PDF-1.7\n" + b"damaged in transit\n" * 40)
    data_dir = folder / "data"
    # The failed documents last: their runs are the latest, whose checks the summaries read first.
    guide, pdf, failed, unparsed = ingest(
        Settings(data_dir=data_dir),
        [DOCUMENT, _two_page_pdf(folder / "two-pages.pdf"), broken, corrupt],
    )
    assert guide.success and pdf.success, (guide.summary(), pdf.summary())
    assert not failed.success and failed.error, failed.summary()
    assert not unparsed.success and "corrupt" in unparsed.error, unparsed.summary()
    with webserver(data_dir) as port:
        # What "Skip" on the community pop-up stores, so it does not cover the pages.
        assert graphql(port, "mutation { setNuxSeen }")["setNuxSeen"] is True
        yield UI(port, guide.doc_id, pdf.doc_id, failed, unparsed, data_dir)


def _chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is missing; scripts/setup.sh installs it")
        pytest.skip("Debian's chromium is not installed (scripts/setup.sh installs it)")
    return found


def _visible_text(dom: str) -> str:
    dom = re.sub(r"<(script|style)\b[^>]*>.*?</\1>", " ", dom, flags=re.DOTALL | re.IGNORECASE)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", dom)).split())


def _render(chromium: str, url: str, png: Path, height: int) -> subprocess.Popen:
    """Screenshot and DOM of `url` once the app has rendered (its queries answered)."""
    return subprocess.Popen(
        [
            chromium,
            "--headless",
            "--no-sandbox",  # CI runs as root
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size=1600,{height}",
            # Virtual time stands still while requests are pending, so the budget is the
            # SPA's own timers after its data arrived, however slow the server.
            "--virtual-time-budget=20000",
            f"--screenshot={png}",
            "--dump-dom",
            url,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def _page_text(ui: UI, name: str, path: str, height: int = 1000) -> str:
    """One page rendered to OUTPUT/<name>.png, its visible text checked for error messages."""
    OUTPUT.mkdir(parents=True, exist_ok=True)
    process = _render(
        _chromium(), f"http://127.0.0.1:{ui.port}{path}", OUTPUT / f"{name}.png", height
    )
    return _rendered_text(name, process)


def _rendered_text(name: str, process: subprocess.Popen) -> str:
    """The visible text of a page `_render` is rendering, its DOM kept as OUTPUT/<name>.html,
    checked for error messages."""
    dom, _ = process.communicate(timeout=180)
    assert process.returncode == 0, name
    (OUTPUT / f"{name}.html").write_text(dom)
    text = _visible_text(dom)
    error = ERROR_TEXT.search(text)
    assert error is None, f"{name} shows {text[max(0, error.start() - 200) :][:400]!r}"
    return text


CHECKED = ("document_chunks", "chunk_embeddings", "vector_index")
CHECK_STATES = """{ assetNodeOrError(assetKey: {path: ["%s"]}) { ... on AssetNode {
    partitionKeys partitionStats { numFailed numMaterialized numPartitions }
    assetChecksOrError { ... on AssetChecks { checks { name
      executionForLatestMaterialization { status partition }
      partitionStatuses { ... on AssetCheckDefaultPartitionStatuses { succeededPartitions
        failedPartitions inProgressPartitions skippedPartitions executionFailedPartitions } }
    } } } } } }"""


def _asset_state(port: int, asset: str) -> dict:
    return graphql(port, CHECK_STATES % asset)["assetNodeOrError"]


def _assert_checks_read_passed(ui: UI, documents: set[str]) -> None:
    """Every check of every checked asset: its latest execution passed, and per document,
    passed for `documents` and nothing (not run) for any other."""
    for asset in CHECKED:
        node = _asset_state(ui.port, asset)
        for check in node["assetChecksOrError"]["checks"]:
            latest = check["executionForLatestMaterialization"]
            assert latest["status"] == "SUCCEEDED", (asset, check["name"], latest)
            statuses = check["partitionStatuses"]
            assert set(statuses.pop("succeededPartitions")) == documents, (asset, check["name"])
            assert not any(statuses.values()), (asset, check["name"], statuses)


def test_graphql_shows_assets_partitions_checks_and_metadata(ui):
    nodes = graphql(ui.port, "{ assetNodes { assetKey { path } partitionKeys } }")["assetNodes"]
    partitions = {n["assetKey"]["path"][0]: n["partitionKeys"] for n in nodes}
    assert partitions.keys() >= set(PIPELINE)
    keys = {ui.key, ui.pdf_key, ui.failed.doc_id, ui.corrupt.doc_id}
    assert all(set(partitions[asset]) == keys for asset in PIPELINE)

    for asset in PIPELINE:
        node = graphql(
            ui.port,
            f"""{{ assetNodeOrError(assetKey: {{path: ["{asset}"]}}) {{ ... on AssetNode {{
                assetMaterializations(partitions: ["{ui.key}"]) {{ partition
                  metadataEntries {{ label ... on MarkdownMetadataEntry {{ mdStr }}
                                          ... on IntMetadataEntry {{ intValue }} }} }}
                assetChecksOrError {{ ... on AssetChecks {{ checks {{ name }} }} }} }} }} }}""",
        )["assetNodeOrError"]
        [materialization] = node["assetMaterializations"]
        assert materialization["partition"] == ui.key
        metadata = {e["label"]: e for e in materialization["metadataEntries"]}
        assert metadata, f"{asset}: no materialization metadata"
        if asset == "document_chunks":
            assert metadata["chunks"]["intValue"] > 0
            assert metadata["preview"]["mdStr"].startswith("**#0**")
            assert TITLE in metadata["preview"]["mdStr"]
            assert {c["name"] for c in node["assetChecksOrError"]["checks"]} == CHUNK_CHECKS
        for check in node["assetChecksOrError"]["checks"]:
            executions = graphql(
                ui.port,
                f"""{{ assetCheckExecutions(assetKey: {{path: ["{asset}"]}},
                       checkName: "{check["name"]}", limit: 5) {{
                       status evaluation {{ partition success }} }} }}""",
            )["assetCheckExecutions"]
            # The failed document's checks never ran: they hold no evaluation.
            by_partition = {
                e["evaluation"]["partition"]: e["status"] for e in executions if e["evaluation"]
            }
            assert by_partition == {ui.key: "SUCCEEDED", ui.pdf_key: "SUCCEEDED"}, (asset, check)


def _run_log(ui: UI, key: str) -> tuple[list[dict], list[dict]]:
    """A document's runs (its own, and the batches' that carried it), first first, and their
    events one run after the other."""
    instance = open_instance(Settings(data_dir=ui.data_dir))
    carried = [r.run_id for r in instance.get_runs() if key in run_documents(instance, r)]
    runs = graphql(
        ui.port,
        f"""{{ runsOrError(filter: {{runIds: {json.dumps(carried)}}}) {{
               ... on Runs {{ results {{ runId status stepKeysToExecute
                 tags {{ key value }} }} }} }} }}""",
    )["runsOrError"]["results"][::-1]
    events = [
        event
        for run in runs
        for event in graphql(
            ui.port,
            f"""{{ logsForRun(runId: "{run["runId"]}") {{ ... on EventConnection {{
               events {{ __typename ... on MessageEvent {{ message level stepKey }} }} }} }} }}""",
        )["logsForRun"]["events"]
    ]
    return runs, events


def _part(run: dict) -> str:
    return {t["key"]: t["value"] for t in run["tags"]}[PART_TAG]


def test_run_logs_show_progress_at_info(ui):
    runs, events = _run_log(ui, ui.pdf_key)
    # Two runs: the steps without checks, then the checked ones.
    assert [(_part(r), r["status"]) for r in runs] == [
        ("landing", "SUCCESS"),
        ("checked", "SUCCESS"),
    ]
    assert [r["stepKeysToExecute"] for r in runs] == [PIPELINE[:4], list(CHECKED)]
    # A batch's lines of its documents come as one message, a line each.
    info = [line for e in events if e.get("level") == "INFO" for line in e["message"].splitlines()]
    assert "two-pages.pdf: parsing 2 pages" in info
    assert "two-pages.pdf: pages parsed: 2 of 2" in info
    assert any(re.fullmatch(r"chunks embedded: (\d+) of \1", m) for m in info), info


def test_a_failed_documents_run_shows_its_one_line_reason_first(ui):
    [run], events = _run_log(ui, ui.failed.doc_id)
    assert run["status"] == "FAILURE"
    errors = [e for e in events if e.get("level") == "ERROR"]
    # The first error of the run is the reason the CLI prints, on one line.
    assert errors[0]["message"] == ui.failed.error, (errors[0], ui.failed.error)
    assert "\n" not in ui.failed.error and "not a PDF" in ui.failed.error


def test_screenshots_of_the_graph_a_partition_and_its_checks(ui):
    chromium = _chromium()
    OUTPUT.mkdir(parents=True, exist_ok=True)
    base = f"http://127.0.0.1:{ui.port}"
    pages = {
        # The document assets and their settings sources, upstream of the index.
        "asset-graph": (
            f"{base}/assets/vector_index?view=lineage&lineageScope=upstream&lineageDepth=10",
            1000,
            ["document_chunks", "chunk_embeddings", "vector_index", "raw_documents"],
        ),
        # Tall enough for the metadata table down to the chunk preview.
        "document-chunks-partition": (
            f"{base}/assets/document_chunks?view=partitions&partition={ui.key}",
            1700,
            [f"{ui.key} Materialized", "preview #0", TITLE, "tokens_max"],
        ),
        "document-chunks-checks": (
            f"{base}/assets/document_chunks?view=checks",
            1000,
            [f"Checks ({len(CHUNK_CHECKS)})", "Passed", *sorted(CHUNK_CHECKS)],
        ),
    }
    running = {
        name: _render(chromium, url, OUTPUT / f"{name}.png", height)
        for name, (url, height, _) in pages.items()
    }
    for name, process in running.items():
        text = _rendered_text(name, process)
        for expected in pages[name][2]:
            assert expected in text, f"{name} does not show {expected!r}: {text[:1500]!r}"
        if name == "document-chunks-checks":
            # The latest execution's document: one of the two, checked in one batch.
            assert ui.key in text or ui.pdf_key in text, text[:1500]
        # A rendered page, not a blank one: Dagster's UI in 1600 px is well over 50 KB of PNG.
        assert (OUTPUT / f"{name}.png").stat().st_size > 50_000, name


def test_a_document_failed_upstream_has_its_checks_not_run_and_the_others_passed(ui):
    # The file raw_documents refuses ran that step alone: nothing below it was planned.
    [run], _ = _run_log(ui, ui.failed.doc_id)
    assert run["stepKeysToExecute"] == ["raw_documents"]
    # The PDF no parser opens ran the steps without checks, and failed there: no check of its
    # was planned, so none reads "execution failed".
    [run], _ = _run_log(ui, ui.corrupt.doc_id)
    assert (_part(run), run["status"]) == ("landing", "FAILURE")
    assert run["stepKeysToExecute"] == PIPELINE[:4]
    _assert_checks_read_passed(ui, {ui.key, ui.pdf_key})
    # Each failed in its landing run; the checked steps below are missing, not failed.
    for asset in PIPELINE:
        stats = _asset_state(ui.port, asset)["partitionStats"]
        failed = {"raw_documents": 1}.get(asset, 0 if asset in CHECKED else 1)
        assert stats["numFailed"] == failed, (asset, stats)

    text = _page_text(
        ui, "document-chunks-graph", "/assets/document_chunks?view=lineage&lineageDepth=1"
    )
    assert "document_chunks Latest event" in text
    summary = re.search(r"document_chunks Latest event .*? Asset checks (\d+) / (\d+) Passed", text)
    assert summary and summary.groups() == (str(len(CHUNK_CHECKS)),) * 2, text[:1500]
    checks = _page_text(ui, "document-chunks-checks-latest", "/assets/document_chunks?view=checks")
    assert "Execution failed" not in checks and "Passed" in checks


def test_job_pages_show_automation_on_while_the_automation_sensor_runs(ui):
    instance = graphql(ui.port, "{ instance { autoMaterializePaused useAutoMaterializeSensors } }")
    assert instance["instance"] == {
        "autoMaterializePaused": False,
        "useAutoMaterializeSensors": True,
    }
    selector = (
        '{repositoryName: "__repository__", repositoryLocationName: "rag_assets", '
        'sensorName: "automation_sensor"}'
    )
    query = f"{{ sensorOrError(sensorSelector: {selector}) {{ ... on Sensor {{ sensorState {{"
    sensor = graphql(ui.port, query + " id status } } } }")["sensorOrError"]
    assert sensor["sensorState"]["status"] == "RUNNING"
    text = _page_text(ui, "ingest-job", "/locations/rag_assets/jobs/ingest_documents", 900)
    assert "Auto-materialize on" in text and "Auto-materialize off" not in text

    # Stopped in the UI, the sensor's state reaches the tag at the recovery sensor's next tick.
    graphql(
        ui.port, f'mutation {{ stopSensor(id: "{sensor["sensorState"]["id"]}") {{ __typename }} }}'
    )
    try:
        with DagsterInstance.from_config(
            str(Settings(data_dir=ui.data_dir).dagster_home)
        ) as instance:
            recovery_sensor(build_sensor_context(instance=instance))
        paused = graphql(ui.port, "{ instance { autoMaterializePaused } }")["instance"]
        assert paused == {"autoMaterializePaused": True}
    finally:
        graphql(ui.port, f"mutation {{ startSensor(sensorSelector: {selector}) {{ __typename }} }}")
        with DagsterInstance.from_config(
            str(Settings(data_dir=ui.data_dir).dagster_home)
        ) as instance:
            recovery_sensor(build_sensor_context(instance=instance))
    assert not graphql(ui.port, "{ instance { autoMaterializePaused } }")["instance"][
        "autoMaterializePaused"
    ]


def test_an_evaluation_without_a_set_reads_skipped_not_failed(ui):
    result = evaluate(Settings(data_dir=ui.data_dir))  # this data folder holds no set
    assert result.success
    [run] = graphql(
        ui.port,
        f"""{{ runsOrError(filter: {{runIds: ["{result.run_id}"]}}) {{
               ... on Runs {{ results {{ status }} }} }} }}""",
    )["runsOrError"]["results"]
    assert run["status"] == "SUCCESS"
    executions = graphql(
        ui.port,
        f"""{{ assetCheckExecutions(assetKey: {{path: ["{EVALUATION}"]}},
               checkName: "{FLOORS_CHECK}", limit: 1) {{ runId status }} }}""",
    )["assetCheckExecutions"]
    assert executions == [{"runId": result.run_id, "status": "SKIPPED"}]
    node = graphql(
        ui.port,
        f"""{{ assetNodeOrError(assetKey: {{path: ["{EVALUATION}"]}}) {{ ... on AssetNode {{
               assetMaterializations {{ runId }}
               assetObservations {{ runId metadataEntries {{ label
                 ... on TextMetadataEntry {{ text }} }} }} }} }} }}""",
    )["assetNodeOrError"]
    assert node["assetMaterializations"] == []
    [observation] = node["assetObservations"]
    [reason] = observation["metadataEntries"]
    assert reason["label"] == "skipped" and reason["text"].startswith("no evaluation questions")


def _shown_partition_keys(dom: str) -> dict[str, str]:
    """Each partition key in the list, and what Dagster's MiddleTruncate leaves of it on screen."""
    found = re.findall(r'class="MiddleTruncate_[^"]*" title="([^"]*)"><span>([^<]*)</span>', dom)
    return {html.unescape(key): html.unescape(shown) for key, shown in found}


def test_a_folder_of_look_alike_names_shows_every_key_whole_and_each_partition_its_file(
    tmp_path,
):
    """Files named alike but for the end of their stem, as a filing cut into pages is: the
    asset's partition list shows every key uncut and each one's readable part its own, a
    partition's page names its file, and so does the observed source of that file, whose
    documents read filled, not missing."""
    chromium = _chromium()
    folder = tmp_path / "filings"
    folder.mkdir()
    for page in (1, 2, 3, 10):
        text = DOCUMENT.read_text().replace("Operator Guide", f"Operator Guide, part {page}")
        (folder / f"JOHNSON_JOHNSON_2022_10K_p{page:03}.md").write_text(text)
    shutil.copyfile(DOCUMENT, folder / "host-controller-specification.md")
    data_dir = tmp_path / "data"
    outcomes = ingest(Settings(data_dir=data_dir), [folder])
    assert all(o.success for o in outcomes), [o.summary() for o in outcomes]
    keys = {o.doc_id: o.source_path for o in outcomes}
    OUTPUT.mkdir(parents=True, exist_ok=True)
    with webserver(data_dir) as port:
        assert graphql(port, "mutation { setNuxSeen }")["setNuxSeen"] is True
        base = f"http://127.0.0.1:{port}/assets"
        key = next(k for k, path in keys.items() if path.endswith("_p003.md"))
        pages = {
            "partition-keys": f"{base}/raw_documents?view=partitions",
            "partition-file": f"{base}/vector_index?view=partitions&partition={key}",
            "source-file": f"{base}/inbox_files?view=partitions&partition={key}",
            "source-in-graph": f"{base}/raw_documents?view=lineage&lineageDepth=1",
        }
        running = {
            name: _render(chromium, url, OUTPUT / f"{name}.png", 1400)
            for name, url in pages.items()
        }
        rendered = {name: process.communicate(timeout=180)[0] for name, process in running.items()}
    for name, dom in rendered.items():
        assert running[name].returncode == 0, name
        (OUTPUT / f"{name}.html").write_text(dom)
    shown = _shown_partition_keys(rendered["partition-keys"])
    assert {k: shown.get(k) for k in keys} == {k: k for k in keys}
    assert len({k.rsplit("-", 1)[0] for k in keys}) == len(keys), sorted(keys)
    text = _visible_text(rendered["partition-file"])
    assert f"source_path {keys[key]}" in text, text[:2000]
    source = _visible_text(rendered["source-file"])
    filled = f"Materialized ({len(keys)}) Materializing (0) Missing (0)"
    assert f"path {keys[key]}" in source and filled in source, source[:2000]
    graph = _visible_text(rendered["source-in-graph"])
    assert "inbox_files" in graph and "Partitions 100% filled" in graph, graph[:2000]


# Last in the module: it removes the failed documents from the instance the other tests read.
def test_after_the_failed_file_is_removed_only_existing_documents_count(ui):
    removed = [ui.failed.doc_id, ui.corrupt.doc_id]
    assert main(["remove", "--data-dir", str(ui.data_dir), *removed]) == 0
    for asset in PIPELINE:
        node = _asset_state(ui.port, asset)
        assert set(node["partitionKeys"]) == {ui.key, ui.pdf_key}, asset
        assert node["partitionStats"] == {"numFailed": 0, "numMaterialized": 2, "numPartitions": 2}
    _assert_checks_read_passed(ui, {ui.key, ui.pdf_key})
    text = _page_text(
        ui, "asset-graph-after-removal", "/assets/document_chunks?view=lineage&lineageDepth=1"
    )
    assert "Asset checks 6 / 6 Passed Partitions 100% filled" in text, text[:1500]
