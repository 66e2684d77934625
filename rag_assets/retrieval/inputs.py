"""What a person or a model may ask of the index, bounded once for every entry point (the CLI,
the search API, the typed tools, `answer`): a bad value is refused with one line naming the
argument, before it costs time or reaches the engine.

- `top_k` runs from 1 to `MAX_TOP_K`: Milvus accepts at most 16,384 results a search, and
  every hit returned is read back and fused in Python.
- A query or a description holds words: not empty, at most `MAX_QUERY_CHARS`, no control
  characters but line breaks and tabs (pasted text), and valid Unicode (a command line's
  invalid UTF-8 arrives as lone surrogates).
- A term, a section path and a filter value are short and on one line: Milvus' expression
  language cannot hold a control character in a literal, and a line break in a `like`
  pattern ends its engine process.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    validate_call,
)

MAX_TOP_K = 1000
MAX_QUERY_CHARS = 4000
MAX_TERM_CHARS = 200
MAX_FILTER_CHARS = 1000
MAX_KEYWORDS = 50
MAX_PAGE = 1_000_000

# C0 and C1 controls, DEL, line and paragraph separators; lone surrogates.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL_BUT_WHITESPACE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


class InvalidInput(ValueError):
    """A value refused at the boundary; the message is one line naming the argument."""


def _valid_unicode(value: str) -> str:
    if _SURROGATE.search(value):
        raise ValueError("is not valid UTF-8 text")
    return value


def _words(value: str) -> str:
    value = _valid_unicode(value).strip()
    if not value:
        raise ValueError("is empty")
    if _CONTROL_BUT_WHITESPACE.search(value):
        raise ValueError("holds a control character")
    return value


def _one_line(value: str) -> str:
    if _CONTROL.search(_valid_unicode(value)):
        raise ValueError("holds a control character or a line break")
    return value


def _non_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("is empty")
    return value


QueryText = Annotated[str, Field(max_length=MAX_QUERY_CHARS), AfterValidator(_words)]
Term = Annotated[
    str, Field(max_length=MAX_TERM_CHARS), AfterValidator(_one_line), AfterValidator(_words)
]
FilterValue = Annotated[
    str, Field(max_length=MAX_FILTER_CHARS), AfterValidator(_one_line), AfterValidator(_non_blank)
]
Keywords = Annotated[list[Term], Field(min_length=1, max_length=MAX_KEYWORDS)]
TopK = Annotated[int, Field(ge=1, le=MAX_TOP_K)]
Page = Annotated[int, Field(ge=1, le=MAX_PAGE)]


_QUERY: TypeAdapter[str] = TypeAdapter(QueryText)


class SearchRequest(BaseModel):
    model_config = ConfigDict(frozen=True)

    query: QueryText
    top_k: TopK = 5


def query_text(value: str, name: str = "query") -> str:
    """`value` as a query, or InvalidInput naming it `name`."""
    try:
        return _QUERY.validate_python(value)
    except ValidationError as error:
        raise InvalidInput(one_line(error, name)) from None


def one_line(error: ValidationError, name: str = "value") -> str:
    """`top_k: must be 1000 or less` from pydantic's error list, one line."""
    parts = []
    for detail in error.errors():
        where = ".".join(str(part) for part in detail["loc"]) or name
        message = str(detail["msg"]).removeprefix("Value error, ")
        if detail["type"] == "string_unicode":  # pydantic's word for lone surrogates
            message = "is not valid UTF-8 text"
        parts.append(
            f"{where} {message}" if message.startswith(("is ", "holds ")) else f"{where}: {message}"
        )
    return "; ".join(parts)


# The typed tools check their own arguments: they take a Toolbox, which pydantic takes as it is.
tool_arguments = validate_call(config=ConfigDict(arbitrary_types_allowed=True))


def checked(model: type[BaseModel], **values: object) -> BaseModel:
    """`model(**values)`, or InvalidInput with one line naming what is wrong."""
    try:
        return model(**values)
    except ValidationError as error:
        raise InvalidInput(one_line(error)) from None
