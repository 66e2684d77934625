"""Follow-up questions: "and its reset value?" rewritten into a standalone question from the
previous turns, by the model when one is configured, else by rule; the turns a session file
keeps."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, TypeAdapter, ValidationError

from rag_assets.llm.client import LLMClient, LLMError
from rag_assets.retrieval.inputs import one_line

REWRITE_PROMPT = (
    "Rewrite the user's last question as one standalone question, replacing words such as "
    "'it', 'its' or 'that' by what they refer to in the conversation. Reply with the question only."
)

_FOLLOW_UP = re.compile(
    r"^(?:and|also|what about|how about|then)\b|\b(?:its|it|that|this|they|their|them)\b",
    re.IGNORECASE,
)
_LEAD = re.compile(r"^(?:and|also|what about|how about|then)\s+", re.IGNORECASE)
_SUBJECT = re.compile(r"(?:[A-Z][\w-]*|[A-Z0-9]{2,})(?:\s+(?:[A-Z][\w-]*|[A-Z0-9]{2,}))*")
_QUESTION_START = re.compile(
    r"^(?:what|which|who|how|when|where|why|is|are|does|do|can)\b", re.IGNORECASE
)


class Turn(BaseModel):
    question: str
    standalone_question: str
    answer: str


# Earlier turns a session file may hold; only the last one steers a follow-up question.
_SESSION = TypeAdapter(list[Turn])


def read_session(path: Path) -> list[Turn]:
    """The turns of a session file `answer --session` wrote; ValueError in one line when the
    file is not one."""
    try:
        return _SESSION.validate_json(path.read_bytes())
    except ValidationError as error:
        raise ValueError(one_line(error)) from None


def standalone_question(
    question: str, history: Sequence[Turn], client: LLMClient | None, notes: list[str]
) -> str:
    """The question as it would be asked without the conversation before it."""
    if not history or not _FOLLOW_UP.search(question):
        return question
    if client is not None:
        messages = [{"role": "system", "content": REWRITE_PROMPT}]
        for turn in history:
            messages += [
                {"role": "user", "content": turn.standalone_question},
                {"role": "assistant", "content": turn.answer},
            ]
        messages.append({"role": "user", "content": question})
        try:
            rewritten = client.chat_text(messages).text.strip()
        except LLMError as error:
            notes.append(f"follow-up rewritten by rule: the model failed ({error})")
        else:
            if rewritten:
                return rewritten
    return rewrite_by_rule(question, history[-1].standalone_question)


def rewrite_by_rule(question: str, previous: str) -> str:
    """ "and its reset value?" after "What is the offset of the Host Control Register?" ->
    "What is the reset value of the Host Control Register?"."""
    subjects = _SUBJECT.findall(" ".join(previous.split()[1:]))
    if not subjects:
        return f"{previous} {question}"
    subject = max(subjects, key=len)
    text = _LEAD.sub("", question.strip())
    text = re.sub(
        r"\bits\s+([\w\s-]+?)(?=[?.!,]|$)", rf"the \1 of the {subject}", text, count=1, flags=re.I
    )
    text = re.sub(r"\b(?:it|that|this)\b", f"the {subject}", text, count=1, flags=re.I)
    if subject not in text:
        text = f"{text.rstrip('?')} of the {subject}?"
    return text if _QUESTION_START.match(text) else f"What is {text}"
