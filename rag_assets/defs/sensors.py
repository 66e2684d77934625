"""The inbox sensor: new file -> partition + run, changed content -> run, removed -> cleanup.

Each tick also reports the files' and settings' new versions (see `incremental`), so the UI's
stale status follows the inbox between runs."""

import json
import shutil

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from rag_assets.defs.incremental import PIPELINE, changed_observations
from rag_assets.defs.partitions import documents_partitions
from rag_assets.defs.resources import (
    CollectionsResource,
    EmbeddingResource,
    InboxResource,
    LLMResource,
    MilvusResource,
    ParserResource,
)
from rag_assets.sources.inbox import scan_folder
from rag_assets.sources.keys import check_partition_key, is_valid_partition_key
from rag_assets.sources.paths import inside
from rag_assets.sources.watch import TrackedFile, plan_inbox_changes


def _last_ingested_sha(context: SensorEvaluationContext, key: str) -> str | None:
    records = context.instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey("raw_documents"), asset_partitions=[key]), limit=1
    ).records
    if not records:
        return None
    metadata = records[0].asset_materialization.metadata
    return metadata["sha256"].value if "sha256" in metadata else None


def remove_document(inbox: InboxResource, milvus: MilvusResource, key: str) -> int:
    """Delete a vanished document's rows from every collection and its fixed copy."""
    shutil.rmtree(inside(inbox.raw, check_partition_key(key)), ignore_errors=True)
    with milvus.open() as index:
        return sum(index.delete_document(name, key) for name in index.list_collections())


def build_inbox_sensor(job, minimum_interval_seconds: int = 30):
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
        known = set(context.instance.get_dynamic_partitions(documents_partitions.name))
        # Keys added by hand (the UI's "add partition") never reach a path or an index filter.
        refused = sorted(k for k in known if not is_valid_partition_key(k))
        for key in refused:
            context.log.warning(
                f"{key!r}: partition key not made by rag_assets; partition deleted, no file touched"
            )
        scan = scan_folder(inbox.inbox, inbox.follow_symlinks)
        for skipped in scan.skipped:
            context.log.info(skipped.summary())
        plan = plan_inbox_changes(
            scan.files,
            previous,
            known - set(refused),
            lambda key: _last_ingested_sha(context, key),
        )
        for key in plan.remove_partitions:
            removed = remove_document(inbox, milvus, key)
            context.log.info(f"{key}: file removed from the inbox; deleted {removed} index rows")
        requests = []
        if plan.add_partitions:
            requests.append(documents_partitions.build_add_request(plan.add_partitions))
        if plan.remove_partitions or refused:
            requests.append(
                documents_partitions.build_delete_request([*plan.remove_partitions, *refused])
            )
        return SensorResult(
            run_requests=[
                RunRequest(
                    run_key=f"{key}:{sha}",
                    partition_key=key,
                    # Named, not implied by the job: automation then knows this run executes
                    # every step below a parent it updates, and requests none of them again.
                    asset_selection=[AssetKey(a) for a in PIPELINE],
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
