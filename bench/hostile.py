"""Hostile inputs refused before they cost: each file is generated in a temporary folder, then
handed to the check that meets it first in the pipeline, in a process of its own, and its wall
time and the process's peak RSS are printed. Every refusal must take under 30 s and 1 GiB.

    .venv/bin/python bench/hostile.py
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag_assets_tests.e2e.test_bad_inputs import (  # noqa: E402
    _empty_pages_pdf,
    _expanding_docx,
    _pixel_bomb_png,
    _random_paragraphs_docx,
)

MAX_SECONDS = 30.0
MAX_PEAK_MB = 1024.0


def _sparse(size: int) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        with path.open("wb") as handle:
            handle.truncate(size)  # its size is all the check reads

    return write


def _question_line(path: Path) -> None:
    good = {"question": "When is the seal replaced?", "doc": "a.pdf"}
    lines = [{**good, "question": "seal " * 5_600_000}, good]  # 28 MB on the first line
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


# name -> how the file is written, and which check meets it first
CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "500000-random-paragraphs.docx": (
        lambda p: p.write_bytes(_random_paragraphs_docx()),
        "document",
    ),
    "expanding.docx": (lambda p: p.write_bytes(_expanding_docx()), "document"),
    "20000-empty-pages.pdf": (lambda p: p.write_bytes(_empty_pages_pdf(20_000)), "document"),
    "150-mb.txt": (_sparse(150 * 2**20), "document"),
    "pixel-bomb.png": (lambda p: p.write_bytes(_pixel_bomb_png()), "image"),
    "28-mb-question.jsonl": (_question_line, "questions"),
}


def refuse(check: str, path: Path) -> str:
    """The refusal's one line; raises if the file was let through."""
    from rag_assets.errors import DocumentError

    try:
        if check == "document":
            from rag_assets.settings import Settings
            from rag_assets.sources.raw import check_document

            settings = Settings.from_env(path.parent)
            check_document(path, path.name, settings.max_file_mb, settings.limits)
        elif check == "image":
            from rag_assets.parsers.image import check_pixel_count

            check_pixel_count(path)
        else:
            from rag_assets.retrieval.evaluation.sets import load_jsonl_set

            (problem,) = load_jsonl_set(path).problems
            return problem
    except DocumentError as error:
        return str(error)
    raise AssertionError(f"{path.name} was not refused")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refuse", nargs=2, metavar=("CHECK", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.refuse:  # in the process of its own
        check, path = args.refuse
        started = time.perf_counter()
        said = refuse(check, Path(path))
        seconds = time.perf_counter() - started
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps({"seconds": seconds, "peak_mb": peak_mb, "said": said}))
        return 0
    over = []
    print("| file | size | refused in | peak RSS | said |\n|---|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name, (write, check) in CASES.items():
            path = Path(folder) / name
            write(path)
            done = subprocess.run(
                [sys.executable, __file__, "--refuse", check, str(path)],
                capture_output=True,
                text=True,
                check=True,
            )
            result = json.loads(done.stdout)
            size_mb = path.stat().st_size / 1e6
            print(
                f"| {name} | {size_mb:,.1f} MB | {result['seconds']:.2f} s | "
                f"{result['peak_mb']:,.0f} MB | {result['said']} |"
            )
            if result["seconds"] > MAX_SECONDS or result["peak_mb"] > MAX_PEAK_MB:
                over.append(name)
            path.unlink()
    if over:
        print(f"over {MAX_SECONDS:g} s or {MAX_PEAK_MB:g} MB: {', '.join(over)}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
