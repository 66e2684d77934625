"""Progress lines: written by the steps, read back from a run's log by the runner's listener."""

import uuid

from dagster import DagsterInstance, OpExecutionContext, job, op

from rag_assets.runner.progress import RunProgress, watch_run
from rag_assets.text.progress import (
    CHUNKS_EMBEDDED,
    PAGES_PARSED,
    TEMPLATES_EVALUATED,
    ProgressLine,
    progress_line,
    read_progress_line,
)


def test_a_progress_line_reads_back_alone_or_after_a_prefix():
    line = progress_line(CHUNKS_EMBEDDED, 256, 1400)
    assert line == "chunks embedded: 256 of 1400"
    assert read_progress_line(line) == (CHUNKS_EMBEDDED, 256, 1400)
    assert read_progress_line(f"docs/a: b.pdf: {progress_line(PAGES_PARSED, 3, 9)}") == (
        PAGES_PARSED,
        3,
        9,
    )
    assert read_progress_line(f"semantic: {progress_line(TEMPLATES_EVALUATED, 1, 2)}")
    for other in (
        "docs/a.pdf: parsing 9 pages",
        "chunks embedded: 3 of 9 (slow)",
        "rows written: 3 of 9",
        "the last batch of chunks embedded: 3 of 9",
    ):
        assert read_progress_line(other) is None, other


@op
def parse_and_embed(context: OpExecutionContext) -> None:
    context.log.info("docs/a.pdf: parsing 3 pages")
    context.log.info("docs/a.pdf: pages parsed: 3 of 3")
    context.log.info("chunks embedded: 256 of 300")
    context.log.info("chunks embedded: 300 of 300")


@job
def logs_progress() -> None:
    parse_and_embed()


class Recorded(RunProgress):
    def __init__(self) -> None:
        self.steps: list[ProgressLine] = []

    def measured(self, step: ProgressLine) -> None:
        self.steps.append(step)


def test_the_progress_lines_of_a_run_reach_the_commands_progress():
    """The listener on a run hands over its progress lines only, as the run logs them."""
    recorded, instance, run_id = Recorded(), DagsterInstance.ephemeral(), str(uuid.uuid4())
    watch_run(instance, run_id, recorded)
    assert logs_progress.execute_in_process(instance=instance, run_id=run_id).success
    assert recorded.steps == [
        (PAGES_PARSED, 3, 3),
        (CHUNKS_EMBEDDED, 256, 300),
        (CHUNKS_EMBEDDED, 300, 300),
    ]
