"""Clauses that a chunk cites by number, so that what is matched says what they are about.

A penalty or exception clause often names the rule it applies to only by its number:
`违反本办法第八条或第九条的，公司可以暂停其远程办公资格三个月` says nothing of public Wi-Fi or
confidential data, which 第八条 does, so a question about what happens to someone who handles
confidential data on public Wi-Fi shares no word with the clause that answers it. The opening
sentence of each cited clause of the same document is added to the citing chunk's
`context_text` (what is embedded and matched), never to its `text`.

Only citations that say they point into this document count: `本法第八条`, `本办法第八条或第九条`,
`Article 5 of this Regulation`, `Articles 5 and 6 of this Agreement`. A bare `Article 6(1)` may
cite another act, and a statute cites its own articles so often that every one would bring in
the rest of the act.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rag_assets.templates.tokens import TokenCounter
from rag_assets.text.numbering import CN_NUMERAL, chinese_numeral_value, marker_at

# 本法第八条、第九条 / 本办法第八条或者第九条第二款 / 本条例第十二条至第十四条.
_CN_ARTICLE = rf"第\s*({CN_NUMERAL})\s*条(?:第\s*{CN_NUMERAL}\s*[款项])*"
_CN_CITATION = re.compile(
    rf"本(?:法|办法|条例|规定|细则|规则|章程|合同|协议|制度)"
    rf"(?:{_CN_ARTICLE}(?:、|，|,|或者|或|和|及|以及|与|至)?)+"
)
_CN_CITED = re.compile(_CN_ARTICLE)
# Article 5 of this Regulation / Articles 5, 6 and 9 of this Agreement.
_EN_CITATION = re.compile(
    r"\bArticles? (\d+(?:\(\d+\))*(?:(?:, | and | or | to )\d+(?:\(\d+\))*)*)"
    r" of this (?:Regulation|Directive|Act|Law|Agreement|Contract|Policy|Convention)\b"
)
_EN_CITED = re.compile(r"(?<![(\d])\d+")
# Where a clause's opening sentence ends; not at a paragraph number (`1.`) after its title.
_SENTENCE_END = re.compile(r"[。！？；]|(?<!\b\d)(?<!\b\d\d)[.!?;](?=\s|$)")
_LINE_PREFIX = re.compile(r"\s*(?:#{1,6}\s+|[-*+]\s+)?")

MAX_CITED = 3  # clauses added per chunk
MAX_OPENING_TOKENS = 48  # of each clause's opening


def cited_articles(text: str) -> list[int]:
    """Numbers of the articles of this document that `text` cites, in order, once each."""
    numbers: list[int] = []
    for citation in _CN_CITATION.finditer(text):
        numbers += [chinese_numeral_value(m.group(1)) for m in _CN_CITED.finditer(citation.group())]
    for citation in _EN_CITATION.finditer(text):
        numbers += [int(m.group()) for m in _EN_CITED.finditer(citation.group(1))]
    return list(dict.fromkeys(numbers))


def article_openings(texts: Iterable[str], counter: TokenCounter) -> dict[int, str]:
    """Article number -> its marker and opening sentence, within MAX_OPENING_TOKENS, for every
    line of `texts` that opens an article (`第八条 …`, `Article 8` with its title on the next
    lines); the first of equal numbers wins."""
    openings: dict[int, str] = {}
    for text in texts:
        line_start = 0
        for line in text.split("\n"):
            prefix = _LINE_PREFIX.match(line)
            marker = marker_at(line, prefix.end() if prefix else 0)
            start, line_start = (
                line_start + (marker.start if marker else 0),
                line_start + len(line) + 1,
            )
            if marker is None or marker.kind != "article" or marker.number[0] in openings:
                continue
            end = _SENTENCE_END.search(text, start + marker.end - marker.start)
            opening = " ".join(text[start : end.end() if end else None].split())
            while counter.count(opening) > MAX_OPENING_TOKENS:
                opening = opening[: int(len(opening) * 0.8)]
            openings[marker.number[0]] = opening
    return openings


def cited_context(text: str, openings: dict[int, str]) -> list[str]:
    """The openings of the articles `text` cites, leaving out any `text` holds itself."""
    cited = [openings[n] for n in cited_articles(text) if n in openings]
    return [opening for opening in cited if opening not in text][:MAX_CITED]
