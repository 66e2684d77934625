"""The commands that run the pipeline on a data folder: ingest, remove, evaluate, and the
Dagster UI on it."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path

from rag_assets.cli.settings import command_settings
from rag_assets.interrupts import Interrupted, StopSignals
from rag_assets.runner.sample import place_sample_evaluation
from rag_assets.sources.keys import is_valid_partition_key
from rag_assets.text.terminal import visible, visible_line


class VisibleFormatter(logging.Formatter):
    """Log lines on the terminal as text: a file name's escape sequence shown, not run."""

    def format(self, record: logging.LogRecord) -> str:
        return visible(super().format(record))


def cmd_ingest(args: argparse.Namespace) -> int:
    # Loaded when the command runs: `--help` and the other commands start without it.
    from rag_assets.cli.progress import command_progress
    from rag_assets.runner.receipt import replay

    project_logger = logging.getLogger("rag_assets")
    project_logger.setLevel(logging.INFO)
    log_level = "DEBUG" if args.verbose else "WARNING"
    settings, paths = command_settings(args), [Path(p) for p in args.paths]

    if placed := place_sample_evaluation(settings.evaluation_dir, paths):
        print(
            f"the sample corpus's evaluation set is in place: {visible_line(str(placed))}",
            flush=True,
        )
    signum = None
    handler = None
    try:
        # Each document's line as it ends, under live bars on a terminal.
        with StopSignals(), command_progress() as progress:
            # Waits (for the data folder, a pool slot, the Milvus Lite file) are said at INFO on
            # stderr; made once the bars run, whose stderr prints above them.
            handler = logging.StreamHandler()
            handler.setFormatter(VisibleFormatter("%(asctime)s %(message)s", "%H:%M:%S"))
            project_logger.addHandler(handler)
            # Unchanged since the last ingest: its receipt, without importing Dagster.
            outcomes = replay(settings, paths)
            if outcomes is None:
                # Dagster is imported only when the receipt does not answer.
                from rag_assets.runner.ingest import IngestInterrupted, ingest

                try:
                    outcomes = ingest(settings, paths, log_level=log_level, progress=progress)
                except IngestInterrupted as stopped:
                    outcomes, signum = stopped.outcomes, stopped.signum
            else:
                progress.documents(len(outcomes))
                for outcome in outcomes:
                    progress.document_finished(outcome)
    except Interrupted as stopped:  # before any document started (a wait, the receipt, imports)
        outcomes, signum = [], stopped.signum
    finally:
        # main() may run again in the same process (tests, scripts): one handler per call.
        project_logger.removeHandler(handler)
    documents = [o for o in outcomes if not o.skipped]
    failed = [o for o in documents if not o.success]
    skipped = len(outcomes) - len(documents)
    summary = f"{len(documents) - len(failed)} of {len(documents)} documents indexed" + (
        f", {skipped} files skipped" if skipped else ""
    )
    if signum is not None:
        interrupted = sum(1 for o in documents if o.stopped == "interrupted")
        not_started = sum(1 for o in documents if o.stopped == "not started")
        print(
            f"{summary}; stopped by {signal.Signals(signum).name}: {interrupted} interrupted, "
            f"{not_started} not started (run the same ingest again to finish)"
        )
        return 128 + signum  # the shell's convention for a process ended by a signal
    print(summary)
    return 1 if failed else 0


def cmd_remove(args: argparse.Namespace) -> int:
    # Loaded when the command runs: `--help` and the other commands start without it.
    from rag_assets.defs.lifecycle import remove_documents
    from rag_assets.defs.partitions import documents_partitions
    from rag_assets.defs.resources import MilvusResource
    from rag_assets.instance import hold_data_folder, open_instance
    from rag_assets.removal import DataFolder
    from rag_assets.storage import resolve_doc_ids

    settings = command_settings(args)
    folder = DataFolder.of(settings)
    # Held as an ingest holds it: no document is removed while an ingest writes it.
    with hold_data_folder(settings.data_dir):
        instance = open_instance(settings)
        known = set(instance.get_dynamic_partitions(documents_partitions.name))
        here = known | folder.keys_with_copies()
        named = [d for d in args.documents if not (is_valid_partition_key(d) and d in here)]
        try:
            resolved = dict(zip(named, resolve_doc_ids(settings, named), strict=True))
        except LookupError as error:
            print(f"rag-assets remove: {visible_line(str(error))}", file=sys.stderr)
            return 1
        keys = [resolved.get(d, d) for d in args.documents]
        removed = remove_documents(instance, folder, MilvusResource.of(settings), keys)
        for key in set(keys) & known:
            instance.delete_dynamic_partition(documents_partitions.name, key)
    for done in removed:
        print(visible_line(done.summary()))
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    # Loaded when the command runs: `--help` and the other commands start without it.
    from rag_assets.cli.progress import command_progress
    from rag_assets.runner.evaluation import (
        comparison_of,
        evaluate,
        generate_set,
        pick_template,
        skip_reason,
    )

    settings = command_settings(args)
    if args.eval_dir:
        settings = settings.model_copy(update={"eval_dir": Path(args.eval_dir).resolve()})
    if args.generate:
        generated = generate_set(
            settings, args.collection, args.per_document, use_llm=not args.no_llm
        )
        for problem in generated.problems:
            print(f"skipped {visible_line(str(problem))}", file=sys.stderr)
        print(generated.summary())
        return 0 if generated.questions else 1
    if args.pick_template:
        with command_progress() as progress:
            picked = pick_template(settings, args.collection, args.templates, progress)
        print(visible(picked.comparison.markdown_table()))
        print(picked.summary())
        return 0
    with command_progress() as progress:  # live bars on a terminal
        result = evaluate(settings, templates=args.templates, progress=progress)
    comparison = comparison_of(result)
    if comparison is None:
        failure = next((e for e in result.all_events if e.is_step_failure), None)
        error = failure.event_specific_data.error if failure else None
        skipped = skip_reason(result)
        reason = error.message.strip() if error else f"skipped: {skipped}" if skipped else "failed"
        print(f"rag-assets evaluate: {visible(reason)}", file=sys.stderr)
        return 1
    print(visible(comparison.markdown_table()))
    print(
        f"{comparison.questions} questions over {comparison.documents} documents"
        + (
            f", {len(comparison.skipped)} skipped (document not ingested)"
            if comparison.skipped
            else ""
        )
    )
    checks = result.get_asset_check_evaluations()
    for check in checks:
        print(
            f"check {check.check_name}: {'passed' if check.passed else 'FAILED'} "
            f"{visible_line(check.description or '')}"
        )
    return 0 if all(c.passed for c in checks) else 1


def cmd_ui(args: argparse.Namespace) -> int:
    # Loaded when the command runs: `--help` and the other commands start without it.
    from rag_assets.cli.supervisor import supervise
    from rag_assets.defs.automation import show_automation_state
    from rag_assets.instance import open_instance

    settings = command_settings(args)
    # The UI's "Auto-materialize" tag says from the start whether automation_sensor runs.
    with open_instance(settings) as instance:
        show_automation_state(instance)
    env = {
        **os.environ,
        "DAGSTER_HOME": str(settings.dagster_home),
        "RAG_ASSETS_DATA_DIR": str(settings.data_dir),
    }
    # `dg dev` on the code location of workspace.yaml (a checkout) or on the definitions module
    # (installed), run in the Dagster home rather than the checkout: there Dagster would say the
    # checkout's dagster.yaml is ignored (the home holds a copy of it), and dg would check the
    # project's virtual environment and components, notices for editing the project that ask
    # nothing of whoever opens the UI.
    workspace = Path(__file__).resolve().parents[2] / "workspace.yaml"
    target = ["-w", str(workspace)] if workspace.is_file() else ["-m", "rag_assets.definitions"]
    command = [
        sys.executable,
        "-m",
        "dagster_dg_cli.cli",
        "dev",
        "-h",
        "127.0.0.1",
        "-p",
        str(args.port),
        *target,
    ]
    return supervise(command, env, cwd=settings.dagster_home)
