"""The refresh schedule: rescan the inbox and the settings, then run only what is stale; and the
evaluation schedule, which scores retrieval again on what is indexed."""

from pathlib import Path

from dagster import (
    DefaultScheduleStatus,
    RunRequest,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    SkipReason,
    schedule,
)

from rag_assets.defs.assets.evaluation import EvaluationResource, no_questions_reason
from rag_assets.defs.batches import batch_request, cut_batches, partition_positions, plan_document
from rag_assets.defs.change_reports import report_changes
from rag_assets.defs.partitions import documents_partitions
from rag_assets.defs.resources import (
    CollectionsResource,
    EmbeddingResource,
    InboxResource,
    LLMResource,
    MilvusResource,
    ParserResource,
)
from rag_assets.defs.run_plan import plan_runs
from rag_assets.retrieval.evaluation.sets import find_eval_sets
from rag_assets.sources.inbox import scan_folder


def build_refresh_schedule(job, cron_schedule: str):
    @schedule(
        cron_schedule=cron_schedule,
        job=job,
        default_status=DefaultScheduleStatus.RUNNING,
        description=(
            "Rescans the inbox and the settings (collections, models) and runs, per document, "
            "only the steps that are stale; unchanged documents cost nothing."
        ),
    )
    def refresh_schedule(
        context: ScheduleEvaluationContext,
        inbox: InboxResource,
        parser: ParserResource,
        collections: CollectionsResource,
        embedding: EmbeddingResource,
        llm: LLMResource,
        milvus: MilvusResource,
    ):
        known = set(context.instance.get_dynamic_partitions(documents_partitions.name))
        # New and removed files are the inbox sensor's; this refreshes the documents it knows.
        files = [
            f
            for f in scan_folder(inbox.inbox, inbox.follow_symlinks).files
            if f.partition_key in known
        ]
        resources = {
            "parser": parser,
            "collections": collections,
            "embedding": embedding,
            "llm": llm,
            "milvus": milvus,
        }
        changed = report_changes(context.instance, resources, files)
        plans = plan_runs(
            context.instance, context.repository_def.asset_graph, [f.partition_key for f in files]
        )
        paths = {f.partition_key: f.relative_path for f in files}
        # Batched as an ingest batches them; `checked_part_sensor` follows a landing part with
        # the rest, `batch_split_sensor` splits a batch whose run failed.
        order = partition_positions(
            context.instance.get_dynamic_partitions(documents_partitions.name)
        )
        planned = [
            plan_document(
                inbox,
                p.partition_key,
                paths[p.partition_key],
                p.assets,
                order[p.partition_key],
            )
            for p in plans
            if p.assets
        ]
        requests = [
            batch_request(batch, None, {"rag_assets/refresh": "stale"})
            for batch in cut_batches(planned, inbox.batch_documents, inbox.batch_pages)
        ]
        for p in plans:
            if p.assets:
                context.log.info(f"{p.partition_key}: {', '.join(p.reasons)}")
        if not requests:
            return SkipReason(f"{len(files)} documents, {changed} new observations, nothing stale")
        return requests

    return refresh_schedule


def build_evaluation_schedule(job, cron_schedule: str) -> ScheduleDefinition:
    @schedule(
        name="evaluation_schedule",
        cron_schedule=cron_schedule,
        job=job,
        default_status=DefaultScheduleStatus.RUNNING,
        description=(
            "Re-runs retrieval_evaluation, so quality drift after new documents shows; "
            "skips the tick while the evaluation folder holds no set."
        ),
    )
    def evaluation_schedule(context: ScheduleEvaluationContext, evaluation: EvaluationResource):
        eval_dir = Path(evaluation.eval_dir)
        if not find_eval_sets(eval_dir):
            return SkipReason(no_questions_reason(eval_dir))
        return RunRequest()

    return evaluation_schedule
