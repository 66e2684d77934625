"""A document's profile by rules over its cover, first pages, running headers and file metadata.

A regulatory filing states who files it, its form and its period on the cover page in a fixed
shape (`FORM 10-K`, `For the fiscal year ended ...`, the registrant's name above
`(Exact name of registrant as specified in its charter)`); other documents name their kind in
the title or on the cover (`User Guide`, `Request for Comments`, `Annual Report`) and their
issuer in a copyright line or the file's author. Whatever is not found stays empty: an empty
field is better than a guess a search would trust.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from rag_assets.contracts.ir import FURNITURE_TYPES, DocumentElement, StandardizedDocument
from rag_assets.language import detect_language
from rag_assets.profile.model import DocumentProfile, ProfileField, Source
from rag_assets.profile.names import other_names
from rag_assets.profile.periods import QUARTERLY_KINDS, reported_quarter

COVER_PAGES = 1
FIRST_PAGES = 3
UNPAGED_COVER_ELEMENTS = 40  # a document without pages: its first elements stand for page 1
MAX_ALIASES = 8

_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_DATE = rf"(?:{_MONTHS})\s+\d{{1,2}}\s*,?\s*(\d{{4}})"
_MONTH_YEAR = re.compile(rf"\b((?:{_MONTHS})\s+(?:\d{{1,2}}\s*,?\s*)?((?:19|20)\d\d))\b", re.I)
_ISO_DATE = re.compile(r"\b((?:19|20)\d\d)[-/.](0?[1-9]|1[0-2])[-/.](0?[1-9]|[12]\d|3[01])\b")
_CJK_DATE = re.compile(r"((?:19|20)\d\d)\s*年\s*\d{1,2}\s*月(?:\s*\d{1,2}\s*日)?")

# Forms of the US securities regulator: the kind each one is.
_FORMS = {
    "10-K": "annual report",
    "10-KT": "annual report",
    "20-F": "annual report",
    "40-F": "annual report",
    "10-Q": "quarterly report",
    "8-K": "current report",
    "6-K": "current report",
    "S-1": "registration statement",
    "DEF 14A": "proxy statement",
}
_FORM = re.compile(r"\bFORM\s+(10-KT|10-K|10-Q|20-F|40-F|8-K|6-K|S-1)\b|\b(DEF\s+14A)\b", re.I)
_FISCAL_YEAR = re.compile(rf"(?:fiscal\s+)?year\s+ended\s*:?\s*{_DATE}", re.I)
_QUARTER_ENDED = re.compile(r"quarterly\s+period\s+ended", re.I)
_DATE_AFTER = re.compile(rf"((?:{_MONTHS})\s+\d{{1,2}}\s*,?\s*(\d{{4}}))", re.I)
_REGISTRANT = re.compile(r"^\(?\s*exact\s+name\s+of\s+(?:the\s+)?registrant", re.I)
_FILE_NUMBER = re.compile(r"commission\s+file\s+(?:number|no)", re.I)
_TRADING_SYMBOL = re.compile(r"trading\s+symbol", re.I)
_COVER_QUESTIONS = re.compile(r"indicate\s+by\s+check\s+mark|section\s+12\s*\(g\)", re.I)
_SYMBOL = re.compile(r"^([A-Z]{1,5})(?:\s+PR\s*[A-Z]{0,2})?$")

# Kinds named by a title or a cover, checked in this order; the first that matches wins.
_KINDS: tuple[tuple[str, re.Pattern[str], re.Pattern[str] | None], ...] = (
    (
        "press release",
        re.compile(r"press release|news release|for immediate release", re.I),
        re.compile(r"\b(?:press release|news release|for immediate release)\b", re.I),
    ),
    ("annual report", re.compile(r"annual report|年度报告|年报", re.I), None),
    (
        "quarterly report",
        re.compile(r"quarterly report|interim report|half-?year(?:ly)? report|季度报告", re.I),
        None,
    ),
    (
        "standard",
        re.compile(
            r"\b(?:ISO|IEC|IEEE|ANSI|ETSI|ITU-T|RFC)\s*[\d/-]|\bGB/?T?\s*\d|request for comments"
            r"|\bstandard\b|标准",
            re.I,
        ),
        re.compile(r"request for comments|internet engineering task force", re.I),
    ),
    ("specification", re.compile(r"\bspecification\b|规范|規格", re.I), None),
    (
        "law",
        re.compile(
            r"\b(?:act|regulation|directive|statute|ordinance|code of)\b|(?<!办)法$|(?<!办)法\s*[(（]|条例",
            re.I,
        ),
        None,
    ),
    ("contract", re.compile(r"\b(?:agreement|contract)\b|合同|協議|协议", re.I), None),
    ("policy", re.compile(r"\bpolicy\b|政策|办法|制度", re.I), None),
    (
        "manual",
        re.compile(r"\b(?:manual|user guide|handbook|guide|instructions)\b|手册|指南", re.I),
        None,
    ),
    (
        "FAQ",
        re.compile(r"frequently asked questions|\bFAQs?\b|常见问题|常見問題|问答", re.I),
        re.compile(r"frequently asked questions", re.I),
    ),
)
_PAPER = (re.compile(r"^\W*abstract\b", re.I | re.M), re.compile(r"\bintroduction\b", re.I))

# `© 2021 Acme Corp.`, `Copyright (c) 2019-2023 Acme, Inc.`: a © sign or a year, then a name
# that starts with a capital letter.
_COPYRIGHT = re.compile(
    r"(?:(?i:copyright)\s*)?(?:©|\((?i:c)\)|(?i:copyright)(?=\s*(?:19|20)\d\d))\s*"
    r"(?:(?:19|20)\d\d(?:\s*[-–]\s*(?:19|20)\d\d)?\s*,?\s*)?(?:by\s+)?"
    r"([A-Z][^.,;©\n]{1,80}?)(?:\.|,|;|\s+(?i:all rights)|$)",
    re.M,
)
# Author fields that name no one: placeholders and the generators that fill them in.
_NO_AUTHOR = re.compile(
    r"^(?:anonymous|unknown|user|admin(?:istrator)?|owner|author|default|none|n/a)$"
    r"|\bdivision of\b|\bgenerator\b|\bconverter\b|\bsoftware\b",
    re.I,
)
_FILE_TITLE_NOISE = re.compile(r"^(?:microsoft\s+\w+\s*-\s*)", re.I)
_ID_LIKE = re.compile(r"^[\W\d_]+$|^\S+\.(?:docx?|pdf|pptx?|xlsx?|rtf)$", re.I)
_COMMENT = re.compile(r"<!--.*?-->|</?\w+[^>]*>")
_FILE_YEAR = re.compile(r"(?<![0-9])((?:19|20)\d\d)(?![0-9])")
_MARKUP = re.compile(r"^\s*#{1,6}\s+|\*\*|__|^\s*[-*+•]\s+|^\s*>\s*|`")
_PAGE_NUMBER = re.compile(r"\b(?:page\s+)?\d+(?:\s+of\s+\d+)?\b", re.I)


def profile_document(
    doc: StandardizedDocument, file_info: Mapping[str, str] | None = None
) -> DocumentProfile:
    """The profile of `doc`; `file_info` is the file's own metadata (PDF info: title, author,
    subject, keywords), when the parser read any."""
    info = {k: str(v).strip() for k, v in (file_info or {}).items() if v}
    cover = _lines(cover_elements(doc, COVER_PAGES))
    first = _lines(cover_elements(doc, FIRST_PAGES))
    form = _form(cover, info)
    if form:
        kind: ProfileField | None = ProfileField(value=_FORMS[form.value], source=form.source)
        form = form.model_copy(update={"value": f"Form {form.value}"})
        organization = _registrant(cover)
        period, year = _filing_period(first)
        if period is None:
            period, year = _file_name_year(doc.source_path)
        title = None  # a filing's first heading is the regulator's masthead or the form
    else:
        title = _title(doc, info)
        kind = _kind(title, cover, first)
        organization = _issuer(first, info)
        period, year = _dated(title, cover)
    text = "\n".join(e.text for e in doc.elements if e.type not in FURNITURE_TYPES)
    quarter = reported_quarter(text) if kind and kind.value in QUARTERLY_KINDS else None
    symbols = _symbols(cover) if form else []
    names = other_names(text, organization.value) if organization else []
    return DocumentProfile(
        title=title,
        organization=organization,
        kind=kind,
        form=form,
        period=period,
        year=year,
        quarter=quarter.number if quarter else None,
        fiscal_year=quarter.year
        if quarter
        else (year if kind and kind.value == "annual report" else None),
        language=_language(doc, first),
        aliases=list(dict.fromkeys([*symbols, *names]))[:MAX_ALIASES],
    )


def cover_elements(doc: StandardizedDocument, pages: int) -> list[DocumentElement]:
    """The body elements of the first `pages` pages (of an unpaged document, its first ones)."""
    body = [e for e in doc.elements if e.type not in FURNITURE_TYPES]
    if doc.page_count:
        return [e for e in body if e.page_start <= pages]
    return body[: UNPAGED_COVER_ELEMENTS * pages]


def _lines(elements: list[DocumentElement]) -> list[str]:
    lines = []
    for element in elements:
        # A table's cells are lines of their own (a cover lists trading symbols in one).
        for line in element.text.replace("|", "\n").splitlines():
            plain = " ".join(_MARKUP.sub("", line).split()).strip("_* ")
            if plain and not set(plain) <= set("-:"):
                lines.append(plain)
    return lines


def _form(cover: list[str], info: Mapping[str, str]) -> ProfileField | None:
    for line in cover:
        match = _FORM.search(line)
        if match and (line.upper().startswith("FORM") or len(line) < 40):
            return ProfileField(value=_form_name(match), source="cover page")
    subject = info.get("subject", "")
    match = _FORM.search(f"FORM {subject}") if len(subject) < 12 else None
    return ProfileField(value=_form_name(match), source="file metadata") if match else None


def _form_name(match: re.Match[str]) -> str:
    return " ".join((match.group(1) or match.group(2)).upper().split())


def _registrant(cover: list[str]) -> ProfileField | None:
    """The line above `(Exact name of registrant ...)`, else the first name-like line below the
    commission file number (some covers leave the caption out)."""
    for position, line in enumerate(cover):
        if _REGISTRANT.match(line):
            above = (
                _named(c, "cover page") for c in reversed(cover[max(0, position - 3) : position])
            )
            named = next((n for n in above if n is not None), None)
            if named is not None:
                return named
    for position, line in enumerate(cover):
        if _FILE_NUMBER.search(line):
            for below in cover[position + 1 : position + 4]:
                worded = re.search(r"[A-Za-z]{2}", below) and not _DATE_AFTER.search(below)
                if worded and not re.match(r"^(?:number|no\.?)\b", below, re.I):
                    return _named(below, "cover page")
    return None


def _named(text: str, source: Source) -> ProfileField | None:
    name = re.sub(r"\s+([.,])", r"\1", _COMMENT.sub("", text)).strip(" .,:;")
    if not 2 <= len(name) <= 120 or not re.search(r"[^\W\d_]", name) or name.startswith("("):
        return None
    return ProfileField(value=name + ("." if text.rstrip().endswith(".") else ""), source=source)


def _filing_period(first: list[str]) -> tuple[ProfileField | None, int | None]:
    text = "\n".join(first)
    fiscal = _FISCAL_YEAR.search(text)
    quarter = _QUARTER_ENDED.search(text)
    if quarter and (not fiscal or quarter.start() < fiscal.start()):
        date = _DATE_AFTER.search(text, quarter.end(), quarter.end() + 120)
        if date:
            value = f"quarter ended {' '.join(date.group(1).split())}"
            return ProfileField(value=value, source="cover page"), int(date.group(2))
    if fiscal:
        year = int(fiscal.group(1))
        return ProfileField(value=f"fiscal year {year}", source="cover page"), year
    return None, None


def _file_name_year(source_path: str) -> tuple[ProfileField | None, int | None]:
    """The last resort: a year in the file name (`ACME_2022_10K.pdf`)."""
    years = _FILE_YEAR.findall(Path(source_path).stem)
    if len(years) != 1:
        return None, None
    return ProfileField(value=years[0], source="file name"), int(years[0])


def _title(doc: StandardizedDocument, info: Mapping[str, str]) -> ProfileField | None:
    if doc.title and doc.title.strip():
        return ProfileField(value=" ".join(doc.title.split()), source="title")
    meta = _FILE_TITLE_NOISE.sub("", info.get("title", "")).strip()
    if meta and not _ID_LIKE.match(meta) and re.search(r"[^\W\d_]{3}", meta):
        return ProfileField(value=meta, source="file metadata")
    header = _running_header(doc)
    if header:
        return ProfileField(value=header, source="running header")
    stem = " ".join(re.split(r"[_\s]+", Path(doc.source_path).stem)).strip()
    return ProfileField(value=stem, source="file name") if stem else None


def _running_header(doc: StandardizedDocument) -> str | None:
    """A header line on at least a third of the pages (page numbers aside), when there are
    three pages or more."""
    if not doc.page_count or doc.page_count < 3:
        return None
    seen: Counter[str] = Counter()
    for element in doc.elements:
        if element.type == "page_header":
            line = " ".join(_PAGE_NUMBER.sub("", _MARKUP.sub("", element.text)).split())
            if len(line) > 3 and re.search(r"[^\W\d_]{3}", line):
                seen[line] += 1
    if not seen:
        return None
    line, count = seen.most_common(1)[0]
    return line if count * 3 >= doc.page_count else None


def _kind(title: ProfileField | None, cover: list[str], first: list[str]) -> ProfileField | None:
    if title is not None and title.source != "file name":
        for kind, in_title, _ in _KINDS:
            if in_title.search(title.value):
                return ProfileField(value=kind, source="title")
    text = "\n".join(cover)
    for kind, _, on_cover in _KINDS:
        if on_cover is not None and on_cover.search(text):
            return ProfileField(value=kind, source="cover page")
    if _PAPER[0].search("\n".join(first)) and _PAPER[1].search("\n".join(first)):
        return ProfileField(value="paper", source="first pages")
    return None


def _issuer(first: list[str], info: Mapping[str, str]) -> ProfileField | None:
    for line in first:
        match = _COPYRIGHT.search(line)
        if match:
            named = _named(match.group(1), "first pages")
            if named is not None:
                return named
    author = " ".join(info.get("author", "").split())
    if author and not _NO_AUTHOR.search(author) and len(author) <= 120:
        return ProfileField(value=author, source="file metadata")
    return None


def _dated(title: ProfileField | None, cover: list[str]) -> tuple[ProfileField | None, int | None]:
    """A date in the title, else the first on the cover: `March 2024`, `2012-12-28`."""
    candidates = []
    if title is not None:
        candidates.append((title.value, "title"))
    candidates += [(line, "cover page") for line in cover]
    for text, source in candidates:
        for pattern in (_MONTH_YEAR, _ISO_DATE, _CJK_DATE):
            match = pattern.search(text)
            if match:
                year = int(match.group(2) if pattern is _MONTH_YEAR else match.group(1))
                value = " ".join(match.group(0).split())
                return ProfileField(value=value, source=source), year  # type: ignore[arg-type]
    return None, None


def _language(doc: StandardizedDocument, first: list[str]) -> ProfileField | None:
    if doc.language:
        return ProfileField(value=doc.language, source="file metadata")
    text = " ".join(first)[:4000]
    language = detect_language(text) if text.strip() else ""
    return ProfileField(value=language, source="language detection") if language else None


def _symbols(cover: list[str]) -> list[str]:
    """Trading symbols listed under the cover's `Trading Symbol(s)` column."""
    start = next((i for i, line in enumerate(cover) if _TRADING_SYMBOL.search(line)), None)
    if start is None:
        return []
    found: list[str] = []
    for line in cover[start + 1 : start + 60]:
        if _COVER_QUESTIONS.search(line):
            break  # the check-box questions follow the securities table
        match = _SYMBOL.match(line)
        if match and match.group(1) not in found:
            found.append(match.group(1))
    return found[:5]
