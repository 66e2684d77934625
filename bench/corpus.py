"""The shared corpus (../shared/corpus, 576 real files) through parse, repairs and every template,
each file in a worker process with a time and a memory limit.

    .venv/bin/python bench/corpus.py [--files GLOB ...] [--kinds KIND ...] [--jobs 2]
        [--timeout 120] [--memory-mb 8192] [--json OUT]

Prints one table (files, landed, degraded, failed cleanly, unsupported, crashed, over the time
or memory limit, files with invariant violations), then the crashed, over-limit and violating
files with their reasons, the slowest files with pages/s and the workers' peak RSS.
`rag_assets_tests/e2e/test_corpus.py` runs the same and asserts no crash and no violation.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

# The checkout's own packages, whichever environment runs the script.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag_assets_tests.support.corpus_run import (  # noqa: E402
    CORPUS,
    CRASHED,
    MEMORY_MB,
    TIMEOUT_S,
    FileResult,
    as_json,
    corpus_files,
    report,
    run_corpus,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--files", nargs="*", default=[], help="globs on paths in the corpus")
    parser.add_argument("--kinds", nargs="*", default=[], help="MANIFEST kinds: pdf, docx, ...")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds a file")
    parser.add_argument("--memory-mb", type=int, default=MEMORY_MB, help="address space a worker")
    parser.add_argument("--json", type=Path, help="write every file's result here")
    parser.add_argument("--quiet", action="store_true", help="no line per file")
    args = parser.parse_args()
    # A plain `kill` ends the run through its clean-up, which stops the workers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    files = corpus_files(args.corpus, args.files, args.kinds)
    if not files:
        parser.error("no file of the corpus matches")

    done = 0

    def progress(result: FileResult) -> None:
        nonlocal done
        done += 1
        if not args.quiet:
            reason = f"  {result.reason[:160]}" if result.status != "landed" else ""
            print(
                f"[{done}/{len(files)}] {result.seconds:6.1f} s {result.status:>20}  "
                f"{result.path}{reason}",
                file=sys.stderr,
                flush=True,
            )

    run = run_corpus(
        files,
        args.corpus,
        jobs=args.jobs,
        timeout_s=args.timeout,
        memory_mb=args.memory_mb,
        progress=progress,
    )
    print(report(run))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(as_json(run), indent=1, ensure_ascii=False) + "\n")
    return 1 if run.counts()[CRASHED] or run.violating() else 0


if __name__ == "__main__":
    sys.exit(main())
