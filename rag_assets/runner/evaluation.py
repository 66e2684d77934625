"""An evaluation run from the CLI: the code location's evaluation job, in this process."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from dagster import ExecuteInProcessResult
from upath import UPath

from rag_assets.defs.assets.evaluation import EVALUATION
from rag_assets.defs.build import build_defs
from rag_assets.defs.jobs import EVALUATION_JOB
from rag_assets.errors import ConfigurationError
from rag_assets.instance import open_instance
from rag_assets.retrieval.answer import model_client
from rag_assets.retrieval.evaluation.comparison import Comparison
from rag_assets.retrieval.evaluation.generate import (
    QUESTIONS_PER_DOCUMENT,
    GeneratedQuestion,
    model_questions,
    structural_questions,
)
from rag_assets.retrieval.evaluation.picks import best_template, collection_tag
from rag_assets.runner.progress import RunProgress, watch_run
from rag_assets.settings import Settings
from rag_assets.sources.collections import load_collections
from rag_assets.sources.template_picks import EVERY_COLLECTION, PICKS_FILE, TemplatePick, save_pick
from rag_assets.storage import read_documents
from rag_assets.templates.registry import available_templates


def evaluate(
    settings: Settings,
    templates: list[str] | None = None,
    instance=None,
    log_level: str = "WARNING",
    progress: RunProgress | None = None,
) -> ExecuteInProcessResult:
    """Materialize retrieval_evaluation on the instance under the data dir (the CLI's path);
    `progress` hears the run's progress lines (templates evaluated, chunks embedded)."""
    job = build_defs(settings).resolve_job_def(EVALUATION_JOB)
    config = {"templates": templates} if templates else {}
    instance = instance or open_instance(settings)
    run_id = str(uuid.uuid4())  # known before the run starts, to listen to it
    watch_run(instance, run_id, progress or RunProgress())
    return job.execute_in_process(
        instance=instance,
        run_id=run_id,
        raise_on_error=False,
        run_config={
            "ops": {EVALUATION: {"config": config}},
            "loggers": {"console": {"config": {"log_level": log_level}}},
        },
    )


def comparison_of(result: ExecuteInProcessResult) -> Comparison | None:
    """The comparison the run materialized; None when it failed or skipped (no question)."""
    if not result.success or not result.get_asset_materialization_events():
        return None
    return result.output_for_node(EVALUATION, EVALUATION)


def skip_reason(result: ExecuteInProcessResult) -> str | None:
    """Why a successful run materialized nothing (no evaluation question), as it logged it."""
    for observation in result.asset_observations_for_node(EVALUATION):
        if "skipped" in observation.metadata:
            return str(observation.metadata["skipped"].value)
    return None


@dataclass(frozen=True)
class GeneratedSet:
    path: Path
    questions: list[GeneratedQuestion]
    by: str  # "LLM" or "the documents' structure"
    problems: list[str]  # passages the model asked nothing of, and why

    def summary(self) -> str:
        kinds = Counter(q.kind for q in self.questions)
        made = ", ".join(f"{count} from {kind}s" for kind, count in sorted(kinds.items()))
        return (
            f"wrote {len(self.questions)} questions ({made or 'none'}) by {self.by} to "
            f"{self.path}; `rag-assets evaluate` scores every template on it"
        )


def generate_set(
    settings: Settings,
    collection: str | None = None,
    per_document: int | None = None,
    use_llm: bool = True,
) -> GeneratedSet:
    """A question set for the ingested documents (of one collection of rag_collections.yaml
    when named), written as JSONL into the evaluation folder: asked of the configured LLM,
    else built from the documents' headings, table rows and defined terms."""
    root = UPath(settings.asset_storage_root) / "normalized_documents"
    keys = sorted(p.stem for p in root.glob("*.json")) if root.exists() else []
    documents, _ = read_documents(settings.asset_storage_root, keys)
    if collection is not None:
        rules = {r.name: r for r in load_collections(settings.collections_path).collections}
        if collection not in rules:
            known = ", ".join(sorted(rules)) or "none"
            raise ConfigurationError(
                f"{settings.collections_path}: no collection {collection!r} (known: {known})"
            )
        documents = [d for d in documents if rules[collection].matches(d.source_path)]
    if not documents:
        raise ConfigurationError("no ingested document to ask questions of: ingest some first")
    per_document = per_document or QUESTIONS_PER_DOCUMENT
    llm = model_client(settings) if use_llm else None
    if llm is not None:
        questions, problems = model_questions(documents, llm, per_document)
        by = f"the LLM ({llm.settings.model})"
    else:
        questions, problems = structural_questions(documents, per_document), []
        by = "the documents' structure"
    path = settings.evaluation_dir / f"generated-{collection or 'all'}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    tag = collection_tag(collection)
    lines = [json.dumps(q.record(n, tag), ensure_ascii=False) for n, q in enumerate(questions, 1)]
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return GeneratedSet(path, questions, by, problems)


@dataclass(frozen=True)
class PickedTemplate:
    comparison: Comparison
    pick: TemplatePick
    path: Path  # where the pick is kept

    def summary(self) -> str:
        kept = (
            "`auto` retrieved best, so it keeps choosing per document"
            if self.pick.template == "auto"
            else f"picked {self.pick.template}; the next ingest re-chunks the collection's "
            "documents with it"
        )
        return f"{kept} ({self.pick.reason().removeprefix('auto: ')}); kept in {self.path}"


def pick_template(
    settings: Settings,
    collection: str | None = None,
    templates: list[str] | None = None,
    progress: RunProgress | None = None,
) -> PickedTemplate:
    """Score `templates` (default: `auto` and every installed one) on the evaluation sets, and
    keep the one with the best MRR@10 on the questions tagged for `collection` as its pick:
    `auto` then plans the collection's documents with it. `auto` winning forgets the pick."""
    compared = templates or ["auto", *available_templates()]
    result = evaluate(settings, templates=compared, progress=progress)
    comparison = comparison_of(result)
    if comparison is None:
        failure = next((e for e in result.all_events if e.is_step_failure), None)
        error = failure.event_specific_data.error if failure else None
        raise ConfigurationError(
            error.message.strip() if error else f"skipped: {skip_reason(result) or 'failed'}"
        )
    pick = best_template(comparison, collection)
    path = settings.data_dir / PICKS_FILE
    save_pick(path, collection or EVERY_COLLECTION, None if pick.template == "auto" else pick)
    return PickedTemplate(comparison, pick, path)
