"""The inbox sensor: new file -> partition + run, changed content -> run, removed -> cleanup.

A document is removed, every stored trace of it (`rag_assets.removal`, `defs.lifecycle`), when
its file leaves the inbox or when its partition is deleted (the UI's "delete partition"): a
partition that no longer exists while its file is still tracked, or its fixed copy still kept,
takes its file out of the inbox too, so it is not added again.

Its cursor, shown on its page, is a summary: how many files it tracks and the digest of their
manifest (every file's size, time and sha256), kept in the Dagster home's `inbox-manifests/`
(`sources.watch`); a cursor of the earlier form, the manifest itself, is read once.

Each tick also reports the files' and settings' new versions (`change_reports`), so the UI's
stale status follows the inbox between runs. A document still stored under a key its path had
under an earlier key scheme gets a partition under its key now, and the earlier one goes once
that is indexed (`lifecycle.superseded_keys`).

Documents run in batches as an ingest cuts them (`defs/batches.py`), each batch's run its landing
part; `checked_part_sensor` requests its checked part once that succeeded (`defs/landing.py`),
and `batch_split_sensor` splits a batch whose run failed.

`recovery_sensor` is the daemon's housekeeping each minute: it fails this host's runs whose
process is gone (`defs/recovery.py`) and sets the UI's Auto-materialize tag to whether
`automation_sensor` runs (`defs/automation.py`)."""

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    DagsterEventType,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunFailureSensorContext,
    RunRequest,
    RunStatusSensorContext,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    run_failure_sensor,
    run_status_sensor,
    sensor,
)

from rag_assets.defs.assets import PIPELINE
from rag_assets.defs.automation import show_automation_state
from rag_assets.defs.batch import failed_documents
from rag_assets.defs.batches import (
    Batch,
    PlannedDocument,
    batch_request,
    cut_batches,
    partition_positions,
    plan_document,
    split_failed,
)
from rag_assets.defs.change_reports import source_events
from rag_assets.defs.dagster_private import run_documents
from rag_assets.defs.data_versions import digest
from rag_assets.defs.jobs import LAUNCHED_BY_TAG
from rag_assets.defs.landing import DOCUMENTS_TAG, LANDING_PART, PART_TAG, RunPart, next_part
from rag_assets.defs.lifecycle import remove_documents, superseded_keys
from rag_assets.defs.partitions import documents_partitions
from rag_assets.defs.recovery import recover_dead_runs
from rag_assets.defs.resources import (
    CollectionsResource,
    EmbeddingResource,
    InboxResource,
    LLMResource,
    MilvusResource,
    ParserResource,
)
from rag_assets.removal import DataFolder
from rag_assets.sources.inbox import scan_folder
from rag_assets.sources.keys import is_valid_partition_key
from rag_assets.sources.watch import plan_inbox_changes, read_manifest, write_manifest


def _last_ingested_sha(context: SensorEvaluationContext, key: str) -> str | None:
    records = context.instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey("raw_documents"), asset_partitions=[key]), limit=1
    ).records
    if not records:
        return None
    metadata = records[0].asset_materialization.metadata
    return metadata["sha256"].value if "sha256" in metadata else None


def _indexed(context: SensorEvaluationContext, key: str) -> bool:
    return bool(
        context.instance.fetch_materializations(
            AssetRecordsFilter(asset_key=AssetKey("vector_index"), asset_partitions=[key]), limit=1
        ).records
    )


def _first_part_requests(
    known: list[str], adding: list[str], runs: list[tuple[str, str]], inbox, paths
) -> list[RunRequest]:
    """The first part of every document to run, batched as an ingest batches them; a run key
    per document and content, or per batch of them, so a tick never requests one twice."""
    order = partition_positions(known, adding)
    shas = dict(runs)
    planned = [plan_document(inbox, key, paths[key], PIPELINE, order[key]) for key in shas]
    requests = []
    for batch in cut_batches(planned, inbox.batch_documents, inbox.batch_pages):
        contents = [f"{key}:{shas[key]}" for key in batch.keys]
        if len(contents) == 1:
            tags = {"rag_assets/sha256": shas[batch.keys[0]]}
            requests.append(batch_request(batch, contents[0], tags))
        else:
            requests.append(batch_request(batch, f"batch:{digest(contents)}", {}))
    return requests


def build_inbox_sensor(job, folder: DataFolder, minimum_interval_seconds: int = 30):
    @sensor(
        job=job,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=DefaultSensorStatus.RUNNING,
        description="Watches the inbox: adds, re-runs and removes document partitions.",
    )
    def inbox_sensor(
        context: SensorEvaluationContext,
        inbox: InboxResource,
        parser: ParserResource,
        collections: CollectionsResource,
        embedding: EmbeddingResource,
        llm: LLMResource,
        milvus: MilvusResource,
    ) -> SensorResult:
        previous = read_manifest(context.cursor, folder.inbox_manifests)
        # Listed before the partitions are read: a copy is made only after its partition exists,
        # so a copy without one is a partition deleted, never one being added now.
        copies = folder.keys_with_copies()
        in_order = context.instance.get_dynamic_partitions(documents_partitions.name)
        known = set(in_order)
        # Keys added by hand (the UI's "add partition") never reach a path or an index filter.
        refused = sorted(k for k in known if not is_valid_partition_key(k))
        for key in refused:
            context.log.warning(
                f"{key!r}: partition key not made by rag_assets; partition deleted, no file touched"
            )
        tracked = {t.key for t in previous.values()}
        deleted = {k for k in tracked | copies if is_valid_partition_key(k)} - known
        for removed in remove_documents(context.instance, folder, milvus, deleted):
            context.log.info(f"partition deleted; {removed.summary()}")
        scan = scan_folder(inbox.inbox, inbox.follow_symlinks)
        for skipped in scan.skipped:
            context.log.info(skipped.summary())
        plan = plan_inbox_changes(
            scan.files,
            previous,
            known - set(refused),
            lambda key: _last_ingested_sha(context, key),
        )
        # A document stored under a key its path had under an earlier scheme stays searchable
        # until its run under the key now has indexed it, then goes.
        superseded = superseded_keys(
            context.instance, {f.relative_path: f.partition_key for f in scan.files}
        )
        retired = sorted(k for k, key in superseded.items() if _indexed(context, key))
        gone = [k for k in plan.remove_partitions if k not in superseded]
        for removed in remove_documents(context.instance, folder, milvus, gone):
            context.log.info(f"file removed from the inbox; {removed.summary()}")
        for removed in remove_documents(
            context.instance, folder, milvus, retired, keep_inbox_files=True
        ):
            context.log.info(
                f"indexed again as {superseded[removed.doc_id]}; earlier key {removed.summary()}"
            )
        paths = {f.partition_key: f.relative_path for f in scan.files}
        requests = []
        if plan.add_partitions:
            requests.append(documents_partitions.build_add_request(plan.add_partitions))
        if gone or retired or refused:
            requests.append(documents_partitions.build_delete_request([*gone, *retired, *refused]))
        return SensorResult(
            run_requests=_first_part_requests(
                in_order, plan.add_partitions, plan.runs, inbox, paths
            ),
            dynamic_partitions_requests=requests,
            asset_events=source_events(
                context.instance,
                {
                    "parser": parser,
                    "collections": collections,
                    "embedding": embedding,
                    "llm": llm,
                    "milvus": milvus,
                },
                scan.files,
            ),
            cursor=write_manifest(plan.state, folder.inbox_manifests, context.cursor),
        )

    return inbox_sensor


def build_checked_part_sensor(job):
    @run_status_sensor(
        run_status=DagsterRunStatus.SUCCESS,
        name="checked_part_sensor",
        monitored_jobs=[job],
        request_job=job,
        default_status=DefaultSensorStatus.RUNNING,
        description="Runs a document's checked steps once its landing run succeeded.",
    )
    def checked_part_sensor(context: RunStatusSensorContext):
        run = context.dagster_run
        keys = run_documents(context.instance, run)
        # The CLI runs a document's next part itself, in its own process.
        if run.tags.get(PART_TAG) != LANDING_PART or run.tags.get(LAUNCHED_BY_TAG) == "cli":
            return SkipReason(f"run {run.run_id} is no landing run of the daemon")
        known = set(context.instance.get_dynamic_partitions(documents_partitions.name))
        if not keys or not set(keys) <= known:
            return SkipReason(f"run {run.run_id}: a document of it is gone")
        landed = [k.to_user_string() for k in run.asset_selection or ()]
        part = next_part(landed or PIPELINE)
        if part is None:
            return SkipReason(f"run {run.run_id} ran every step of {', '.join(keys)}")
        carried = {
            k: v
            for k, v in run.tags.items()
            if k in ("rag_assets/sha256", "rag_assets/refresh", DOCUMENTS_TAG)
        }
        documents = tuple(PlannedDocument(k, "", (part,), 1, i) for i, k in enumerate(keys))
        return batch_request(Batch(documents, (part,)), f"{run.run_id}:{part.name}", carried)

    return checked_part_sensor


def build_batch_split_sensor(job):
    # Every job of the code location: a backfill's runs are of Dagster's own asset job.
    @run_failure_sensor(
        name="batch_split_sensor",
        request_job=job,
        default_status=DefaultSensorStatus.RUNNING,
        description=(
            "Splits a batch's failed run: the documents its failure names run alone, each failing "
            "on its own partition, and the others again together."
        ),
    )
    def batch_split_sensor(context: RunFailureSensorContext):
        run = context.dagster_run
        if run.tags.get(LAUNCHED_BY_TAG) == "cli":
            return SkipReason(f"run {run.run_id}: the CLI splits its own batches")
        keys = run_documents(context.instance, run)
        steps = {k.to_user_string() for k in run.asset_selection or ()}
        if not steps or not steps <= set(PIPELINE):
            return SkipReason(f"run {run.run_id} is no run of documents' steps")
        if len(keys) < 2:
            return SkipReason(f"run {run.run_id} carried one document: its failure is its own")
        known = set(context.instance.get_dynamic_partitions(documents_partitions.name))
        if not set(keys) <= known:
            return SkipReason(f"run {run.run_id}: a document of it is gone")
        events = context.instance.all_logs(run.run_id, of_type=DagsterEventType.STEP_FAILURE)
        failed = failed_documents(e.dagster_event for e in events)
        part = RunPart(
            run.tags.get(PART_TAG, ""),
            tuple(a for a in PIPELINE if a in steps),
        )
        documents = tuple(PlannedDocument(k, "", (part,), 1, i) for i, k in enumerate(keys))
        carried = {k: v for k, v in run.tags.items() if k == "rag_assets/refresh"}
        return [
            batch_request(b, f"{run.run_id}:split:{b.keys[0]}", carried)
            for b in split_failed(Batch(documents, (part,)), failed)
        ]

    return batch_split_sensor


@sensor(
    minimum_interval_seconds=60,
    default_status=DefaultSensorStatus.RUNNING,
    description="Fails this host's runs whose process is gone and frees their pool slots, so a "
    "run killed with its code server (`rag-assets ui` killed) does not hold the queue; sets the "
    "UI's Auto-materialize tag to whether automation_sensor runs.",
)
def recovery_sensor(context: SensorEvaluationContext) -> SkipReason:
    recovered = recover_dead_runs(context.instance)
    # The UI's "Auto-materialize on/off" tag follows automation_sensor started or stopped since.
    show_automation_state(context.instance)
    return SkipReason(
        f"failed the runs whose process is gone: {', '.join(recovered)}"
        if recovered
        else "no run of this host has lost its process"
    )
