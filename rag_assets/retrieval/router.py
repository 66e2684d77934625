"""Which tools a question needs: rules always, the model's function calling when it can.

Rules: a glossary-shaped question ("What is a Block Gap?", "What does RW1C mean?") goes to
`glossary`; one naming a register, field, bit, table, column or value goes to `table_rows`;
anything else to `text`. With an LLM configured, the model is offered the tools as OpenAI
functions; a failed call, no tool call, or arguments that do not validate leave the rules'
choice in place, with the reason recorded.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ValidationError

from rag_assets.llm.client import LLMClient, LLMError
from rag_assets.retrieval.inputs import MAX_KEYWORDS, MAX_TERM_CHARS
from rag_assets.retrieval.tools.registry import TOOLS
from rag_assets.text.terms import STOP_WORDS

_GLOSSARY = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"^what\s+(?:is|are)\s+(?:an?\s+)(?P<term>[^?]{1,60}?)\s*\??$",
        r"^what\s+does\s+(?P<term>[^?]{1,60}?)\s+(?:mean|stand\s+for)\s*\??$",
        r"^what\s+is\s+(?:meant\s+by|the\s+meaning\s+of|the\s+definition\s+of)\s+(?P<term>[^?]{1,60}?)\s*\??$",
        r"^(?:define|definition\s+of|meaning\s+of)\s+(?P<term>[^?]{1,60}?)\s*\??$",
        r"^(?:什么是|何谓)(?P<term>.{1,30}?)[？?]?$",
        r"^(?P<term>.{1,30}?)(?:是什么意思|的定义是什么|指的是什么)[？?]?$",
    )
]
# "What is RW1C?": a bare short name without an article is a term, too.
_BARE_TERM = re.compile(r"^(?i:what\s+(?:is|are))\s+(?P<term>[A-Z0-9][\w/-]{1,20})\s*\??$")
_TABLE_WORDS = re.compile(
    r"\b(?:registers?|fields?|bits?|offsets?|reset\s+values?|default\s+values?|tables?|"
    r"columns?|rows?|parameters?|allowances?|rates?|address(?:es)?|values?)\b|"
    r"寄存器|字段|偏移|表格?|补贴|参数|默认值",
    re.IGNORECASE,
)
_FIGURE_WORDS = re.compile(r"\b(?:figures?|diagrams?|drawings?|charts?)\b|图", re.IGNORECASE)


def _known_tool(name: str) -> str:
    if name not in TOOLS:
        raise ValueError(f"is none of the tools {', '.join(TOOLS)}")
    return name


class ToolCall(BaseModel):
    name: Annotated[str, AfterValidator(_known_tool)]
    arguments: dict


class Route(BaseModel):
    calls: list[ToolCall]
    chosen_by: Literal["rules", "llm"]
    reason: str


def tool_specs() -> list[dict]:
    """The tools as OpenAI function definitions."""
    return [tool.spec() for tool in TOOLS.values()]


def keywords(question: str) -> list[str]:
    """The question's words without question and function words."""
    words = re.findall(r"[\w:.-]+", question)
    found = [w.strip(".") for w in words if w.casefold() not in STOP_WORDS and w.strip(".")]
    # As many as a tool takes, each once: a pasted page is no list of names.
    kept = [w for w in dict.fromkeys(found) if len(w) <= MAX_TERM_CHARS]
    return kept[:MAX_KEYWORDS]


def glossary_term(question: str) -> str | None:
    text = " ".join(question.split())
    for pattern in _GLOSSARY:
        if match := pattern.match(text):
            return match.group("term").strip(" \"'“”")
    if match := _BARE_TERM.match(text):
        return match.group("term")
    return None


def route_by_rules(question: str) -> Route:
    if (term := glossary_term(question)) is not None:
        return Route(
            calls=[ToolCall(name="glossary", arguments={"term": term})],
            chosen_by="rules",
            reason="the question asks what a term means",
        )
    if _FIGURE_WORDS.search(question):
        return Route(
            calls=[ToolCall(name="figures", arguments={"description": question})],
            chosen_by="rules",
            reason="the question asks for a figure",
        )
    if (match := _TABLE_WORDS.search(question)) and (names := keywords(question)):
        return Route(
            calls=[ToolCall(name="table_rows", arguments={"keywords": names})],
            chosen_by="rules",
            reason=f"the question names a {match.group(0).lower()}",
        )
    return Route(
        calls=[ToolCall(name="text", arguments={"query": question})],
        chosen_by="rules",
        reason="a general question",
    )


ROUTER_PROMPT = (
    "You choose which document tools to call to answer the user's question about indexed "
    "documents (specifications, manuals, policies). Call one or more tools; do not answer."
)


def route(question: str, client: LLMClient | None) -> Route:
    """The model's choice by function calling when a client is given, else (or when that
    fails) the rules'."""
    rules = route_by_rules(question)
    if client is None:
        return rules
    messages = [
        {"role": "system", "content": ROUTER_PROMPT},
        {"role": "user", "content": question},
    ]
    try:
        reply = client.chat_tools(messages, tool_specs())
    except LLMError as error:
        return rules.model_copy(update={"reason": f"{rules.reason} (function calling: {error})"})
    calls = []
    for call in reply.tool_calls:
        tool = TOOLS.get(call.name)
        try:
            arguments = tool.arguments.model_validate(json.loads(call.arguments)) if tool else None
        except (ValueError, ValidationError):
            arguments = None
        if arguments is None:
            reason = f"the model's call {call.name}({call.arguments[:80]}) is not a valid tool call"
            return rules.model_copy(update={"reason": f"{rules.reason} ({reason})"})
        calls.append(ToolCall(name=call.name, arguments=arguments.model_dump(exclude_none=True)))
    if not calls:
        return rules.model_copy(update={"reason": f"{rules.reason} (the model called no tool)"})
    return Route(calls=calls, chosen_by="llm", reason="function calling")
