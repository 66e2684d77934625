"""A deterministic PDF corpus of mixed layouts for throughput benchmarks.

    .venv/bin/python bench/generated_corpus.py OUT_DIR [--pages 1000] [--pages-per-doc 50]

Each document cycles through three page layouts, as specs and reports mix them: numbered
sections in one column, two-column body text, and register tables under a caption. The text
comes from a seeded vocabulary, so the same arguments write the same bytes.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

WORDS = [
    "controller",
    "register",
    "buffer",
    "transfer",
    "command",
    "response",
    "interrupt",
    "status",
    "clock",
    "voltage",
    "timing",
    "block",
    "sector",
    "card",
    "host",
    "device",
    "signal",
    "data",
    "bus",
    "mode",
    "power",
    "reset",
    "enable",
    "field",
    "offset",
    "value",
    "default",
    "reserved",
    "protocol",
    "sequence",
    "error",
    "recovery",
    "tuning",
    "latency",
    "queue",
    "descriptor",
    "address",
    "memory",
    "channel",
    "frame",
    "packet",
    "header",
    "payload",
    "checksum",
    "policy",
    "travel",
    "expense",
    "approval",
    "manager",
    "receipt",
    "meal",
    "hotel",
    "budget",
    "limit",
    "exception",
    "review",
    "period",
]


def _sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def _paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(_sentence(rng, rng.randint(8, 18)) for _ in range(sentences))


def write_document(path: Path, pages: int, seed: int) -> None:
    """One PDF of `pages` pages: section, two-column and table pages in turn."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import (
        BaseDocTemplate,
        Frame,
        NextPageTemplate,
        PageBreak,
        PageTemplate,
        Paragraph,
        Table,
        TableStyle,
    )

    rng = random.Random(seed)
    styles = getSampleStyleSheet()
    width, height = A4
    margin = 50
    column = (width - 2 * margin - 20) / 2
    doc = BaseDocTemplate(
        str(path), pagesize=A4, title=f"Generated specification {seed}", invariant=1
    )
    doc.addPageTemplates(
        [
            PageTemplate("one", [Frame(margin, margin, width - 2 * margin, height - 2 * margin)]),
            PageTemplate(
                "two",
                [
                    Frame(margin, margin, column, height - 2 * margin),
                    Frame(margin + column + 20, margin, column, height - 2 * margin),
                ],
            ),
        ]
    )
    story: list = []
    section = 0
    for page in range(pages):
        layout = page % 3
        story.append(NextPageTemplate("two" if layout == 1 else "one"))
        if page:
            story.append(PageBreak())
        if layout == 0:
            section += 1
            story.append(Paragraph(f"{section} {_sentence(rng, 3)[:-1]}", styles["Heading1"]))
            for sub in range(1, 4):
                story.append(
                    Paragraph(f"{section}.{sub} {_sentence(rng, 3)[:-1]}", styles["Heading2"])
                )
                story.append(Paragraph(_paragraph(rng, 3), styles["BodyText"]))
        elif layout == 1:
            for _ in range(8):
                story.append(Paragraph(_paragraph(rng, 3), styles["BodyText"]))
        else:
            story.append(
                Paragraph(f"Table {page}: {_sentence(rng, 3)[:-1]} Register", styles["Heading3"])
            )
            rows = [["Offset", "Bits", "Field", "Default", "Description"]]
            for row in range(18):
                rows.append(
                    [
                        f"0x{row * 4:02X}",
                        f"{31 - row}:{16 - row % 16}",
                        rng.choice(WORDS).upper(),
                        f"0x{rng.randrange(256):02X}",
                        _sentence(rng, 5),
                    ]
                )
            table = Table(rows, colWidths=[50, 45, 80, 50, 260])
            table.setStyle(
                TableStyle(
                    [
                        ("GRID", (0, 0), (-1, -1), 0.5, colors.black),
                        ("FONTSIZE", (0, 0), (-1, -1), 8),
                    ]
                )
            )
            story.append(table)
    doc.build(story)


def write_corpus(out_dir: Path, pages: int = 1000, pages_per_doc: int = 50) -> list[Path]:
    """The corpus's PDFs under out_dir (reused when already written with the same name)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for number, start in enumerate(range(0, pages, pages_per_doc)):
        path = out_dir / f"generated-{number:03d}.pdf"
        if not path.is_file():
            write_document(path, min(pages_per_doc, pages - start), seed=number)
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--pages-per-doc", type=int, default=50)
    args = parser.parse_args()
    paths = write_corpus(args.out_dir, args.pages, args.pages_per_doc)
    print(f"{len(paths)} documents, {args.pages} pages under {args.out_dir}")


if __name__ == "__main__":
    main()
