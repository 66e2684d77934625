"""MkDocs admonitions (`!!! note`, `??? tip`) and content tabs (`=== "Linux"`) are read as quoted
text, not code."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_assets.parsers.files import prepare_markdown, quote_admonitions
from rag_assets.parsers.routing import ParserRouter
from rag_assets.parsing import parse_file


def _quoted(text: str) -> str:
    return quote_admonitions(text.encode())[0].decode()


@pytest.mark.parametrize(
    "marker",
    [
        '!!! note "Cleaning the filter"',
        "!!! note",
        '??? tip "Collapsed by default"',
        '???+ warning "Open by default"',
        '!!! danger highlight "Two classes"',
        '!!! note ""',
        '=== "Debian-based"',
        '===+ "RHEL / Fedora"',
    ],
)
def test_every_admonition_form(marker: str) -> None:
    text = f"Intro.\n\n{marker}\n    Rinse the filter weekly.\n\n    - in warm water\n\nAfter.\n"
    assert _quoted(text) == (
        f"Intro.\n\n{marker}\n\n> Rinse the filter weekly.\n>\n> - in warm water\n\nAfter.\n"
    )


def test_nested_admonitions_and_fences_inside() -> None:
    text = (
        '!!! note "Outer"\n'
        "    Outer text.\n"
        "\n"
        "    !!! tip\n"
        "        Inner text.\n"
        "\n"
        "    ```bash\n"
        "    pump --clean\n"
        "    ```\n"
    )
    quoted, notes = quote_admonitions(text.encode())
    assert quoted.decode() == (
        '!!! note "Outer"\n'
        "\n"
        "> Outer text.\n"
        ">\n"
        "> !!! tip\n"
        ">\n"
        "> > Inner text.\n"
        ">\n"
        "> ```bash\n"
        "> pump --clean\n"
        "> ```\n"
    )
    assert notes == ["2 admonitions or content tabs read as quoted text"]


@pytest.mark.parametrize(
    "text",
    [
        # Inside a fenced block the marker is code.
        '```\n!!! note "Not one"\n    indented code line\n```\n',
        "~~~~\n??? tip\n    still code\n~~~~\n",
        # A marker with no indented body, and a line that only starts like one.
        "!!! note\nNext paragraph.\n",
        "!!! Wow, this is loud\n    four-space code\n",
        "=== Not a tab without a quoted title\n    code\n",
        # Not UTF-8: left to the reader.
        "!!! note\n    caf\xe9\n",
    ],
)
def test_what_is_not_an_admonition_is_left_alone(text: str) -> None:
    data = text.encode("latin-1")
    assert quote_admonitions(data) == (data, [])


def test_front_matter_and_admonitions_in_one_pass() -> None:
    data = b"---\ntitle: Pumps\n---\n# Pumps\n\n!!! note\n    Prime first.\n"
    assert prepare_markdown(data) == (
        b"# Pumps\n\n!!! note\n\n> Prime first.\n",
        [
            "YAML front matter (3 lines) left out",
            "1 admonitions or content tabs read as quoted text",
        ],
    )


@pytest.mark.parametrize("parser", ["docling", "unstructured"])
def test_parsers_read_an_admonition_as_text_of_its_section(parser: str, tmp_path: Path) -> None:
    path = tmp_path / "pump.md"
    path.write_text(
        "# Pump manual\n\n## Cleaning\n\nClean monthly.\n\n"
        '!!! warning "Unplug first"\n'
        "    ### Why\n\n"
        "    Mains voltage reaches the impeller housing.\n\n"
        "    - wait two minutes\n\n"
        "## Storage\n\nKeep dry.\n",
        encoding="utf-8",
    )
    doc = parse_file(path, ParserRouter(parser)).document
    assert [e.type for e in doc.elements if e.type == "code"] == []
    housing = next(e for e in doc.elements if "impeller housing" in e.text)
    assert housing.type == "paragraph"
    # The admonition's own heading is quoted text: no section of the document.
    assert [h.text.lstrip("# ") for h in doc.headings()] == ["Pump manual", "Cleaning", "Storage"]
    assert "wait two minutes" in doc.markdown
