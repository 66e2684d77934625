"""First ingest against an unchanged re-ingest, then a template change on one document of N.

Each step is the real CLI in a fresh process (`rag-assets ingest examples/corpus`), on one
fresh data folder, so every timing includes the interpreter start and imports. The unchanged
re-ingest is timed twice: replaying the receipt the first ingest left, and with the receipt
removed, so Dagster's stale status decides (what the receipt spares):

    .venv/bin/python bench/incremental.py [--corpus examples/corpus]

Prints the seconds of each step, the speed-ups of the unchanged re-ingest (target >= 20x) and,
for the template change, which documents ran again and from which asset.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from rag_assets.instance import RECEIPT

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "rag_assets.cli"]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def ingest(data_dir: Path, corpus: Path) -> tuple[float, float, list[str]]:
    """Wall and CPU seconds of one CLI ingest (CPU too: the machine may be shared), its lines."""
    cpu = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(
        [*CLI, "ingest", "--data-dir", str(data_dir), str(corpus)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    seconds = time.perf_counter() - started
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0:
        sys.exit(f"ingest failed:\n{done.stdout}\n{done.stderr[-3000:]}")
    return seconds, _children_cpu() - cpu, lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=REPO / "examples" / "corpus")
    args = parser.parse_args()
    corpus = args.corpus.resolve()
    documents = sorted(p.name for p in corpus.iterdir() if p.is_file())
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        first, first_cpu, _ = ingest(data_dir, corpus)
        unchanged, unchanged_cpu, lines = ingest(data_dir, corpus)
        (data_dir / "dagster" / RECEIPT).unlink()
        decided, decided_cpu, decided_lines = ingest(data_dir, corpus)
        assert decided_lines == lines, (decided_lines, lines)
        # One document of N gets another template through rag_collections.yaml.
        target = next(d for d in documents if d.endswith(".md"))
        (data_dir / "rag_collections.yaml").write_text(
            yaml.safe_dump(
                {"collections": [{"name": "one", "match": [f"**/{target}"], "template": "fixed"}]}
            )
        )
        changed, changed_cpu, changed_lines = ingest(data_dir, corpus)

    print(f"corpus: {corpus} ({len(documents)} documents)")
    print(f"{'step':34} {'wall s':>8} {'CPU s':>8}")
    print(f"{'first ingest':34} {first:8.2f} {first_cpu:8.2f}")
    print(f"{'unchanged re-ingest':34} {unchanged:8.2f} {unchanged_cpu:8.2f}")
    print(f"{'  the same, no receipt (Dagster)':34} {decided:8.2f} {decided_cpu:8.2f}")
    label = f"template change on 1 of {len(documents)}"
    print(f"{label:34} {changed:8.2f} {changed_cpu:8.2f}")
    print(
        f"speed-up of the unchanged re-ingest: {first / unchanged:.1f}x wall, "
        f"{first_cpu / unchanged_cpu:.1f}x CPU (target >= 20x); without its receipt "
        f"{first / decided:.1f}x wall, {first_cpu / decided_cpu:.1f}x CPU"
    )
    for title, step_lines in [("re-ingest", lines), ("template change", changed_lines)]:
        print(f"after the {title}:")
        for line in step_lines[:-1]:
            name = line.split()[1]
            status = "unchanged" if line.endswith("unchanged") else line.rsplit("  ", 1)[-1]
            print(f"  {name:40} {status}")


if __name__ == "__main__":
    main()
