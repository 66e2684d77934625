"""The inbox sensor: new file -> partition + run, changed content -> run, removed -> cleanup.

A document is removed, every stored trace of it (`rag_assets.removal`, `defs.lifecycle`), when
its file leaves the inbox or when its partition is deleted (the UI's "delete partition"): a
partition that no longer exists while its file is still tracked, or its fixed copy still kept,
takes its file out of the inbox too, so it is not added again.

Each tick also reports the files' and settings' new versions (see `incremental`), so the UI's
stale status follows the inbox between runs. A document still stored under the key its path had
before keys began with the file's name gets a partition under its key now, and the earlier one
goes once that is indexed (`lifecycle.superseded_keys`).

A document's run is its landing part; `checked_part_sensor` requests its checked part once that
succeeded (`defs/landing.py`)."""

import json

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunStatusSensorContext,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    run_status_sensor,
    sensor,
)

from rag_assets.defs.assets import PIPELINE
from rag_assets.defs.dagster_private import PARTITION_NAME_TAG
from rag_assets.defs.incremental import changed_observations
from rag_assets.defs.jobs import LAUNCHED_BY_TAG
from rag_assets.defs.landing import LANDING_PART, PART_TAG, next_part, run_parts
from rag_assets.defs.lifecycle import remove_documents, superseded_keys
from rag_assets.defs.partitions import documents_partitions
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
from rag_assets.sources.watch import TrackedFile, plan_inbox_changes


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


def _first_part_request(key: str, sha: str, inbox: InboxResource, relative_path: str):
    first = run_parts(PIPELINE, inbox, relative_path)[0]
    return RunRequest(
        run_key=f"{key}:{sha}",
        partition_key=key,
        # Named, not implied by the job: automation then knows this run executes every step
        # below a parent it updates, and requests none of them again.
        asset_selection=[AssetKey(a) for a in first.assets],
        tags={"rag_assets/sha256": sha, **first.tags},
    )


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
        previous = {
            path: TrackedFile.model_validate(item)
            for path, item in json.loads(context.cursor or "{}").items()
        }
        # Listed before the partitions are read: a copy is made only after its partition exists,
        # so a copy without one is a partition deleted, never one being added now.
        copies = folder.keys_with_copies()
        known = set(context.instance.get_dynamic_partitions(documents_partitions.name))
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
        # A document stored under the key its path had before keys put the name first stays
        # searchable until its run under the key now has indexed it, then goes.
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
            run_requests=[
                _first_part_request(key, sha, inbox, paths[key]) for key, sha in plan.runs
            ],
            dynamic_partitions_requests=requests,
            asset_events=changed_observations(
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
            cursor=json.dumps({p: t.model_dump() for p, t in plan.state.items()}, sort_keys=True),
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
        key = run.tags.get(PARTITION_NAME_TAG)
        # The CLI runs a document's next part itself, in its own process.
        if run.tags.get(PART_TAG) != LANDING_PART or run.tags.get(LAUNCHED_BY_TAG) == "cli":
            return SkipReason(f"run {run.run_id} is no landing run of the daemon")
        if key is None or not context.instance.has_dynamic_partition(
            documents_partitions.name, key
        ):
            return SkipReason(f"run {run.run_id}: its document is gone")
        landed = [k.to_user_string() for k in run.asset_selection or ()]
        part = next_part(landed or PIPELINE)
        if part is None:
            return SkipReason(f"run {run.run_id} ran every step of {key}")
        carried = {
            k: v for k, v in run.tags.items() if k in ("rag_assets/sha256", "rag_assets/refresh")
        }
        return RunRequest(
            run_key=f"{run.run_id}:{part.name}",
            partition_key=key,
            asset_selection=[AssetKey(a) for a in part.assets],
            tags={**carried, **part.tags},
        )

    return checked_part_sensor
