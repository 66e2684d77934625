"""Wall time, CPU seconds, peak RSS and busy cores per step of a run, for bench/throughput.py.

A thread samples this process and its children (the parse workers, Milvus Lite's engine, the
naive script's process) every 0.1 s, and each core's busy and total time from /proc/stat; a
step's figures are read off the samples between its start and end, so the Dagster runs (steps
from the run's events) and the scripts (steps they time themselves) are measured the same way.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

Span = tuple[float, float]


def cpu_seconds() -> tuple[float, float]:
    """CPU time of this process, and of it with its children (the parse workers), live or
    stopped."""
    import psutil  # a dependency of pymupdf

    me = psutil.Process()
    times = me.cpu_times()
    own = times.user + times.system
    stopped = times.children_user + times.children_system
    live = 0.0
    for child in me.children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):  # a worker ending now
            live += sum(child.cpu_times()[:2])
    return own, own + stopped + live


def core_jiffies() -> tuple[tuple[int, int], ...]:
    """(busy, total) clock ticks of each core this process may run on, from /proc/stat: the
    whole machine's work on them, not only this process's."""
    allowed = {f"cpu{n}" for n in os.sched_getaffinity(0)}
    found = []
    with open("/proc/stat") as stat:
        for line in stat:
            name, *ticks = line.split()
            if name in allowed:
                # user nice system idle iowait irq softirq steal; guest time is in user's
                counts = [int(t) for t in ticks[:8]]
                found.append((sum(counts) - counts[3] - counts[4], sum(counts)))
    return tuple(found)


@dataclass(frozen=True)
class Sample:
    at: float  # time.time(), the clock of Dagster's event timestamps
    rss: int  # this process plus its children, bytes
    own_cpu: float
    all_cpu: float  # with the children's
    cores: tuple[tuple[int, int], ...] = ()  # core_jiffies() then


class UsageSampler:
    """RSS and CPU seconds of this process plus its children, every `interval` seconds, and
    once on entry and on exit so every step inside the block lies between two samples."""

    def __init__(self, interval: float = 0.1) -> None:
        self.samples: list[Sample] = []
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        import psutil

        me = psutil.Process()
        rss = me.memory_info().rss
        for child in me.children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                rss += child.memory_info().rss
        self.samples.append(Sample(time.time(), rss, *cpu_seconds(), core_jiffies()))

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample()

    def __enter__(self) -> UsageSampler:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()


def _cpu_at(samples: list[Sample], at: float) -> tuple[float, float]:
    """(own, all) CPU seconds at `at`, interpolated between the samples around it."""
    times = [s.at for s in samples]
    i = bisect.bisect_left(times, at)
    if i == 0:
        return samples[0].own_cpu, samples[0].all_cpu
    if i == len(samples):
        return samples[-1].own_cpu, samples[-1].all_cpu
    before, after = samples[i - 1], samples[i]
    share = (at - before.at) / (after.at - before.at) if after.at > before.at else 1.0
    return (
        before.own_cpu + share * (after.own_cpu - before.own_cpu),
        before.all_cpu + share * (after.all_cpu - before.all_cpu),
    )


def _rss_during(samples: list[Sample], span: Span) -> int:
    """The largest RSS sampled in the span; for a span shorter than the sampling interval, the
    one sampled last before it."""
    start, end = span
    inside = [s.rss for s in samples if start <= s.at <= end]
    before = [s.rss for s in samples if s.at < start]
    return max(inside) if inside else (before[-1] if before else 0)


def usage(samples: list[Sample], spans: list[Span]) -> dict:
    """Summed seconds and CPU seconds (this process's, the children's) over `spans`, and the
    peak RSS sampled in any of them."""
    own = children = 0.0
    for start, end in spans:
        own_start, all_start = _cpu_at(samples, start)
        own_end, all_end = _cpu_at(samples, end)
        own += own_end - own_start
        # never below 0: a child that ended leaves the live sum before it is reaped
        children += max(0.0, (all_end - all_start) - (own_end - own_start))
    peak = max((_rss_during(samples, span) for span in spans), default=0)
    return {
        "runs": len(spans),
        "seconds": sum(b - a for a, b in spans),
        "own_cpu": own,
        "children_cpu": children,
        "peak_rss_gib": peak / 2**30,
    }


BUSY_SHARE = 0.8  # a core at least this busy between two samples counts as busy


def busy_intervals(samples: list[Sample], threshold: float = BUSY_SHARE) -> list[tuple]:
    """(start, end, cores busy) between consecutive samples; an interval in which some core's
    clock did not tick (shorter than a tick) is merged into the next."""
    timed = [s for s in samples if s.cores]
    found = []
    last = timed[0] if timed else None
    for sample in timed[1:]:
        ticks = [
            (busy - busy_before, total - total_before)
            for (busy_before, total_before), (busy, total) in zip(
                last.cores, sample.cores, strict=True
            )
        ]
        if any(total <= 0 for _, total in ticks):
            continue
        found.append((last.at, sample.at, sum(busy / total >= threshold for busy, total in ticks)))
        last = sample
    return found


def busy_seconds(intervals: list[tuple], spans: list[Span], cores: int) -> dict[int, float]:
    """Seconds of the spans during which k cores were busy, for k from `cores` down to 0."""
    found = dict.fromkeys(range(cores, -1, -1), 0.0)
    starts = [start for start, _, _ in intervals]
    for start, end in spans:
        # from the last interval starting before the span on
        for first, last, busy in intervals[max(0, bisect.bisect_right(starts, start) - 1) :]:
            if first >= end:
                break
            found[busy] += max(0.0, min(last, end) - max(first, start))
    return found


def busy_rows(path: str, spans: dict[str, list[Span]], samples: list[Sample]) -> list[dict]:
    """Per step and over the whole run: the share of its wall time during which all the cores
    were busy, fewer of them, none."""
    intervals = busy_intervals(samples)
    cores = max((len(s.cores) for s in samples), default=0)
    whole = [(samples[0].at, samples[-1].at)]
    rows = []
    for step, step_spans in [*spans.items(), ("whole", whole)]:
        seconds = busy_seconds(intervals, step_spans, cores)
        measured = sum(seconds.values())
        own = usage(samples, step_spans)
        wall = own["seconds"]
        rows.append(
            {"path": path, "step": step, "seconds": round(measured, 1)}
            | {
                f"{k} of {cores} cores busy": f"{100 * s / measured:.0f}%" if measured else ""
                for k, s in seconds.items()
            }
            # what the path itself kept busy, apart from other jobs on the machine
            | {
                "path's CPU s / wall s": round((own["own_cpu"] + own["children_cpu"]) / wall, 2)
                if wall
                else ""
            }
        )
    return rows


def busy_report(paths: dict[str, tuple]) -> str:
    """busy_rows of each path's (wall seconds, chunks, spans, samples), under a heading."""
    rows = [
        row
        for path, (_, _, spans, samples) in paths.items()
        for row in busy_rows(path, spans, samples)
    ]
    return (
        f"## Cores busy (a core at least {BUSY_SHARE:.0%} busy between two samples; the whole "
        f"machine's work counts)\n{table(rows)}\n"
    )


def dagster_step_spans(settings) -> dict[str, list[Span]]:
    """Each step's (start, end) in every run on the data folder's instance, by step key."""
    from dagster import DagsterEventType, EventRecordsFilter

    from rag_assets.instance import open_instance

    starts: dict[tuple[str, str], float] = {}
    ends: dict[str, list[tuple[tuple[str, str], float]]] = {}
    with open_instance(settings) as instance:
        for kind in (
            DagsterEventType.STEP_START,
            DagsterEventType.STEP_SUCCESS,
            DagsterEventType.STEP_FAILURE,
        ):
            for record in instance.get_event_records(EventRecordsFilter(event_type=kind)):
                entry = record.event_log_entry
                key = (entry.run_id, entry.step_key)
                if kind == DagsterEventType.STEP_START:
                    starts[key] = entry.timestamp
                else:
                    ends.setdefault(entry.step_key, []).append((key, entry.timestamp))
    return {
        step: [(starts[key], end) for key, end in finished if key in starts]
        for step, finished in sorted(ends.items())
    }


def step_rows(
    path: str, spans: dict[str, list[Span]], samples: list[Sample], pages: int
) -> list[dict]:
    """One row a step, then what ran outside the steps (for ingest: creating runs, storing
    events, planning) and the whole, CPU seconds a page with the children's share apart."""
    whole = (samples[0].at, samples[-1].at)
    figures = {step: usage(samples, step_spans) for step, step_spans in spans.items()}
    total = usage(samples, [whole])
    figures["outside steps"] = {
        "runs": "",
        "seconds": total["seconds"] - sum(f["seconds"] for f in figures.values()),
        "own_cpu": total["own_cpu"] - sum(f["own_cpu"] for f in figures.values()),
        "children_cpu": max(
            0.0, total["children_cpu"] - sum(f["children_cpu"] for f in figures.values())
        ),
        "peak_rss_gib": None,
    }
    figures["whole"] = total | {"runs": ""}
    return [
        {
            "path": path,
            "step": step,
            "runs": f["runs"],
            "seconds": round(f["seconds"], 1),
            "cpu_s_per_page": round((f["own_cpu"] + f["children_cpu"]) / pages, 3),
            "of_it_children": round(f["children_cpu"] / pages, 3),
            "peak_rss_gib": "" if f["peak_rss_gib"] is None else round(f["peak_rss_gib"], 2),
        }
        for step, f in figures.items()
    ]


def table(rows: list[dict]) -> str:
    if not rows:
        return ""
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(str(r.get(k, "")) for k in keys) + " |" for r in rows]
    return "\n".join(lines)


def samples_from(samples: list[Sample], start: float) -> list[Sample]:
    """The samples from `start` on, opened by one at `start` (CPU interpolated, RSS of the
    sample before): a path's figures without what ran before its clock started."""
    own, all_cpu = _cpu_at(samples, start)
    before = [s for s in samples if s.at <= start] or samples[:1]
    # the cores' ticks of the sample before: the first interval's busy share is read over
    # the sampling interval `start` falls in
    opening = Sample(start, before[-1].rss, own, all_cpu, before[-1].cores)
    return [opening] + [s for s in samples if s.at > start]


def side_by_side(
    pages: int,
    paths: dict[str, tuple[float, int, dict, list[Sample]]],
    ratios: list[tuple[str, str]],
) -> str:
    """Wall time, pages/s, CPU seconds and chunks a page and peak RSS per path, with a column
    per (numerator, denominator) pair of `ratios` whose paths both ran; then the same per step."""
    columns: dict[str, dict] = {}
    steps: list[dict] = []
    for path, (seconds, chunks, spans, samples) in paths.items():
        rows = step_rows(path, spans, samples, pages)
        steps += rows
        columns[path] = {
            "wall s": round(seconds, 1),
            "pages/s": round(pages / seconds, 2),
            "CPU s a page (process + children)": rows[-1]["cpu_s_per_page"],
            "chunks a page": round(chunks / pages, 2),
            "peak RSS GiB (process + children)": rows[-1]["peak_rss_gib"],
        }
    names = list(columns)
    shown = [(a, b) for a, b in ratios if a in columns and b in columns]
    header = "| | " + " | ".join(names + [f"{a} / {b}" for a, b in shown]) + " |"
    lines = [header, "|---|" + "---:|" * (len(names) + len(shown))]
    for figure in columns[names[0]]:
        values = [columns[n][figure] for n in names]
        for a, b in shown:
            numerator, denominator = columns[a][figure], columns[b][figure]
            values.append(f"{numerator / denominator:.2f}" if denominator else "")
        lines.append(f"| {figure} | " + " | ".join(str(v) for v in values) + " |")
    return "\n".join(lines) + "\n\n## Per step (summed over the documents)\n" + table(steps)


def materialization_records(data_dir: Path, asset: str, keys: tuple[str, ...]) -> list[dict]:
    """Run, step and the `keys` of the metadata of each materialization of `asset` on the data
    folder's instance, in the order they were stored."""
    from dagster import AssetKey

    from rag_assets.instance import open_instance
    from rag_assets.settings import Settings

    found, cursor = [], None
    with open_instance(Settings(data_dir=data_dir)) as instance:
        while True:
            page = instance.fetch_materializations(
                AssetKey(asset), limit=1000, cursor=cursor, ascending=True
            )
            found += [
                {"run_id": r.event_log_entry.run_id, "step_key": r.event_log_entry.step_key}
                | {
                    key: value.value
                    for key, value in r.asset_materialization.metadata.items()
                    if key in keys
                }
                for r in page.records
            ]
            if not page.has_more:
                return found
            cursor = page.cursor
