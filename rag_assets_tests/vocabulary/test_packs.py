"""Which packs a document is chunked with (`auto` by its profile's kind, named, or none), a
collection's own pack from a YAML file, and packs that cannot load."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_assets.chunking import chunk_document
from rag_assets.contracts.ir import StandardizedDocument
from rag_assets.errors import ConfigurationError
from rag_assets.normalize.adapt import with_profile
from rag_assets.retrieval.vocabulary import collection_packs, sections_asked, vocabulary_terms
from rag_assets.templates.registry import build_template
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets.vocabulary import chosen_packs, load_pack, packs_for, shipped_packs
from rag_assets_tests.support.builders import doc_from_pages

BALANCE_SHEET = [
    ("heading", "## Consolidated Balance Sheets"),
    ("table", "|  | 2017 |\n|---|---|\n| Total current assets | 7,669 |"),
]


def _document(first_page: list[tuple[str, str]], doc_id: str) -> StandardizedDocument:
    return with_profile(
        doc_from_pages([first_page, BALANCE_SHEET], doc_id=doc_id, source_path=f"{doc_id}.pdf")
    )


FILING = _document(
    [
        ("heading", "## FORM 10-K"),
        ("paragraph", "For the fiscal year ended December 31, 2017"),
        ("paragraph", "Harbour Freight Lines, Inc."),
        ("paragraph", "(Exact name of registrant as specified in its charter)"),
    ],
    "filing",
)
# A household budgeting guide also has a balance sheet; it is no filing.
GUIDE = _document(
    [("heading", "## Household budgeting guide"), ("paragraph", "Track what comes in.")],
    "guide",
)


def _chunks(doc: StandardizedDocument, options: dict | None = None):
    # Short sections stay apart, so the balance sheet is a chunk of its own.
    return chunk_document(
        doc, "semantic", {"min_tokens": 0, **(options or {})}, ApproxTokenCounter()
    ).rows


def _balance_sheet_row(rows):
    return next(r for r in rows if "Total current assets" in r.text)


def test_auto_gives_a_filing_the_finance_pack_and_a_guide_none() -> None:
    assert shipped_packs() == ["finance"]
    filing = _balance_sheet_row(_chunks(FILING))
    assert filing.metadata["financial_statement"] == "balance sheet"
    assert filing.metadata["doc_vocabularies"] == ["finance"]
    assert "balance sheet, statement of financial position" in filing.context_text
    guide = _balance_sheet_row(_chunks(GUIDE))
    assert "financial_statement" not in guide.metadata
    assert "doc_vocabularies" not in guide.metadata
    assert "statement of financial position" not in guide.context_text


def test_a_collection_chooses_its_packs_over_the_documents_kind() -> None:
    opted_in = _balance_sheet_row(_chunks(GUIDE, {"vocabularies": ["finance"]}))
    assert opted_in.metadata["financial_statement"] == "balance sheet"
    for off in ("none", []):
        row = _balance_sheet_row(_chunks(FILING, {"vocabularies": off}))
        assert "financial_statement" not in row.metadata
        assert "doc_vocabularies" not in row.metadata
    assert chosen_packs("auto") is None and chosen_packs(" finance , finance") == ("finance",)
    assert packs_for(None, "manual") == [] and packs_for(None, None) == []
    assert [p.name for p in packs_for(None, "quarterly report")] == ["finance"]


LEAVE_PACK = """\
name: leave
description: leave policies
kinds: [policy]
metadata_key: policy_section
sections:
  - kind: annual leave
    titles: ['\\bannual\\s+leave\\b', '\\bvacation\\b']
    names: annual leave, vacation, paid time off
    searched: annual leave entitlement
measures:
  - asked: '\\bdays?\\s+off\\b|\\bPTO\\b'
    sections: [annual leave]
    terms: days per year
"""


def test_a_collections_own_pack_from_a_yaml_file(tmp_path: Path) -> None:
    path = tmp_path / "leave.yaml"
    path.write_text(LEAVE_PACK)
    doc = with_profile(
        doc_from_pages(
            [
                [("heading", "## Staff handbook"), ("paragraph", "How we work.")],
                [("heading", "## Vacation"), ("paragraph", "Staff take 25 days per year.")],
            ],
            doc_id="handbook",
            source_path="handbook.pdf",
        )
    )
    row = next(r for r in _chunks(doc, {"vocabularies": [str(path)]}) if "25 days" in r.text)
    assert row.metadata["policy_section"] == "annual leave"
    assert row.metadata["doc_vocabularies"] == [str(path.resolve())]
    # The heading the text opens with is not repeated; the section's names follow it.
    assert row.context_text.startswith("annual leave, vacation, paid time off\n\n## Vacation")
    # The search of that collection loads the pack from what the chunks recorded.
    packs = collection_packs(row.metadata["doc_vocabularies"])
    question = "How many days off do staff get?"
    assert sections_asked(packs, question) == {"policy_section": ["annual leave"]}
    assert vocabulary_terms(packs, question) == "annual leave entitlement days per year"


def test_a_pack_that_cannot_load_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="unknown vocabulary 'fnance'.*finance"):
        load_pack("fnance")
    broken = {
        "regex.yaml": LEAVE_PACK.replace("days?", "days?("),
        "section.yaml": LEAVE_PACK.replace("sections: [annual leave]", "sections: [sick leave]"),
        "key.yaml": LEAVE_PACK.replace("policy_section", "policy section"),
        "list.yaml": "- just a list\n",
    }
    for name, text in broken.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(ConfigurationError, match=f"vocabulary .*{name}"):
            load_pack(str(tmp_path / name))
    with pytest.raises(ConfigurationError, match="invalid options: vocabularies: unknown"):
        build_template("semantic", {"vocabularies": ["fnance"]})


def test_a_pack_gone_since_the_chunks_were_made_leaves_the_search_as_asked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    gone = str(tmp_path / "moved.yaml")
    assert [p.name for p in collection_packs(["finance", gone, "finance"])] == ["finance"]
    assert "vocabulary pack left out of the search" in caplog.text


def test_the_setting_reaches_every_documents_options_only_when_chosen(tmp_path: Path) -> None:
    from rag_assets.defs.resources import ChunkingConfig, CollectionsResource

    config = str(tmp_path / "rag_collections.yaml")
    chunking = ChunkingConfig(vocabularies="none")
    chosen = CollectionsResource(config_path=config, chunking=chunking).plan("a.pdf")
    assert chosen.options["vocabularies"] == "none"
    # `auto` names nothing, so the documents' template settings stay as they were.
    assert "vocabularies" not in CollectionsResource(config_path=config).plan("a.pdf").options
