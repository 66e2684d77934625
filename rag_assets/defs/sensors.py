"""The inbox sensor: new file -> partition + run, changed content -> run, removed -> cleanup.

A document is removed, every stored trace of it (`rag_assets.removal`, `defs.lifecycle`), when
its file leaves the inbox or when its partition is deleted (the UI's "delete partition"): a
partition that no longer exists while its file is still tracked, or its fixed copy still kept,
takes its file out of the inbox too, so it is not added again.

Each tick also reports the files' and settings' new versions (see `incremental`), so the UI's
stale status follows the inbox between runs. A document still stored under the key its path had
before keys began with the file's name gets a partition under its key now, and the earlier one
goes once that is indexed (`lifecycle.superseded_keys`)."""

import json

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from rag_assets.defs.assets import PIPELINE
from rag_assets.defs.incremental import changed_observations
from rag_assets.defs.landing import run_selection
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
                RunRequest(
                    run_key=f"{key}:{sha}",
                    partition_key=key,
                    # Named, not implied by the job: automation then knows this run executes
                    # every step below a parent it updates, and requests none of them again;
                    # a file raw_documents refuses runs it alone (defs/landing.py).
                    asset_selection=[
                        AssetKey(a) for a in run_selection(PIPELINE, inbox, paths[key])
                    ],
                    tags={"rag_assets/sha256": sha},
                )
                for key, sha in plan.runs
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
