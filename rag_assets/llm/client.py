"""One client for any OpenAI-compatible endpoint: Chat Completions only, images as data: URLs.

Retries with exponential backoff are the openai SDK's own (`max_retries`); this layer
adds a call budget, a cap on requests in flight, usage counters, and errors whose
reasons a person can read and that never carry the API key.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import threading
import time
from typing import Any, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, ValidationError

from rag_assets.errors import ConfigurationError
from rag_assets.llm.settings import LLMSettings
from rag_assets.redaction import redact_url, scrub, split_userinfo, url_secrets

log = logging.getLogger(__name__)

Schema = TypeVar("Schema", bound=BaseModel)

# Sent when the key variable is unset: local servers (vLLM, Ollama) accept anything, and
# passing None would make the SDK fall back to OPENAI_API_KEY and send that key elsewhere.
_NO_KEY = "EMPTY"
_FENCE = re.compile(r"^\s*```[\w-]*\s*\n(.*?)\n\s*```\s*$", re.DOTALL)


class LLMError(Exception):
    """A call that produced nothing usable; `reason` is safe to show and store."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class LLMUnavailable(LLMError):
    """Timeouts, connection errors, HTTP errors after the SDK's retries."""


class BudgetExceeded(LLMError):
    """The client's `max_calls` are used up; raised before any request is sent."""


class LLMAnswerError(LLMError):
    """The model answered, but not with what was asked for (empty, invalid JSON, wrong shape)."""


class ToolCall(BaseModel):
    name: str
    arguments: str  # the JSON text the model wrote; the caller validates it


class LLMReply(BaseModel):
    text: str
    model: str  # as the server reports it
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    finish_reason: str | None = None  # "length" means the answer was cut off
    tool_calls: list[ToolCall] = Field(default_factory=list)


class LLMUsage(BaseModel):
    calls: int = 0  # requests started (the SDK's retries of one request count once)
    failures: int = 0  # calls that raised LLMUnavailable
    answer_errors: int = 0  # chat_json answers that were not valid JSON of the schema
    budget_refusals: int = 0  # calls refused because max_calls was used
    prompt_tokens: int = 0
    completion_tokens: int = 0


class LLMClient:
    """Thread-safe; one per run (or per process), since the budget lives on the instance."""

    def __init__(self, settings: LLMSettings) -> None:
        if not settings.base_url:
            raise ConfigurationError("no LLM base_url configured (RAG_ASSETS_LLM_BASE_URL)")
        import openai  # about 1 s to import: only when an endpoint is configured

        key = os.environ.get(settings.api_key_env, "").strip() if settings.send_key else ""
        if not settings.send_key:
            log.info(
                "calling %s without an API key: the collections file chose it, and the key "
                "goes only to RAG_ASSETS_LLM_BASE_URL or RAG_ASSETS_LLM_ALLOWED_BASE_URLS",
                redact_url(settings.base_url),
            )
        elif not key:
            log.info(
                "%s is not set; calling %s without an API key",
                settings.api_key_env,
                redact_url(settings.base_url),
            )
        self.settings = settings
        # Credentials in the URL go to Basic auth, so no request URL (httpx logs them) holds them.
        base_url, userinfo = split_userinfo(settings.base_url)
        self._openai = openai.OpenAI(
            base_url=base_url,
            api_key=key or _NO_KEY,
            http_client=openai.DefaultHttpxClient(auth=userinfo) if userinfo else None,
            timeout=settings.timeout_s,
            max_retries=settings.max_retries,
        )
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(settings.max_concurrency)
        self._usage = LLMUsage()

    def __repr__(self) -> str:
        return f"LLMClient(base_url={redact_url(self.settings.base_url)!r}, model={self.settings.model!r})"

    @property
    def usage(self) -> LLMUsage:
        with self._lock:
            return self._usage.model_copy()

    def chat_text(self, messages: list[dict[str, Any]], model: str | None = None) -> LLMReply:
        return self._complete(messages, model or self.settings.model)

    def chat_tools(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], model: str | None = None
    ) -> LLMReply:
        """One turn offering `tools` (OpenAI function calling); `tool_calls` holds the choice."""
        return self._complete(messages, model or self.settings.model, tools=tools)

    def vision_text(self, prompt: str, png_bytes: bytes, model: str | None = None) -> LLMReply:
        image_url = "data:image/png;base64," + base64.b64encode(png_bytes).decode("ascii")
        content = [
            {"type": "text", "text": prompt},
            {"type": "image_url", "image_url": {"url": image_url}},
        ]
        return self._complete(
            [{"role": "user", "content": content}], model or self.settings.vision_model
        )

    def chat_json(
        self, messages: list[dict[str, Any]], schema: type[Schema], model: str | None = None
    ) -> Schema:
        """Asks for one JSON object of `schema` in words (response_format is not supported everywhere)."""
        instruction = (
            "Answer with one JSON object and nothing else, conforming to this JSON schema:\n"
            + json.dumps(schema.model_json_schema(), ensure_ascii=False)
        )
        reply = self.chat_text([{"role": "system", "content": instruction}, *messages], model)
        try:
            return parse_json_answer(reply.text, schema)
        except LLMAnswerError:
            with self._lock:
                self._usage.answer_errors += 1
            raise

    def _complete(
        self,
        messages: list[dict[str, Any]],
        model: str | None,
        tools: list[dict[str, Any]] | None = None,
    ) -> LLMReply:
        # The OpenAI SDK takes a second to load: only when a model is called.
        import openai

        if not model:
            raise ConfigurationError("no LLM model configured (RAG_ASSETS_LLM_MODEL)")
        self._reserve_call()
        with self._slots:
            started = time.perf_counter()
            try:
                response = self._openai.chat.completions.create(
                    model=model, messages=messages, **({"tools": tools} if tools else {})
                )
            except openai.APIError as error:
                raise self._failed(model, self._reason(error)) from None  # cause holds the request
            except json.JSONDecodeError:
                raise self._failed(
                    model, f"{self._host()} answered with a body that is not JSON"
                ) from None
            latency = time.perf_counter() - started
        # The SDK does not validate bodies: a server that is not quite OpenAI shows up here.
        choices = getattr(response, "choices", None)
        message = getattr(choices[0], "message", None) if choices else None
        if message is None:
            raise self._failed(model, f"{self._host()} answered without a message (no choices)")
        usage = getattr(response, "usage", None)
        reply = LLMReply(
            text=message.content if isinstance(message.content, str) else "",
            model=getattr(response, "model", None) or model,
            prompt_tokens=getattr(usage, "prompt_tokens", None) or 0,
            completion_tokens=getattr(usage, "completion_tokens", None) or 0,
            latency_s=round(latency, 3),
            finish_reason=choices[0].finish_reason,
            tool_calls=[
                ToolCall(name=call.function.name, arguments=call.function.arguments or "{}")
                for call in getattr(message, "tool_calls", None) or []
                if getattr(call, "function", None)
            ],
        )
        with self._lock:
            self._usage.prompt_tokens += reply.prompt_tokens
            self._usage.completion_tokens += reply.completion_tokens
        log.debug(
            "LLM %s: %.2f s, %d+%d tokens",
            model,
            latency,
            reply.prompt_tokens,
            reply.completion_tokens,
        )
        return reply

    def _failed(self, model: str, reason: str) -> LLMUnavailable:
        reason = self._redact(reason)
        with self._lock:
            self._usage.failures += 1
        log.warning("LLM call to %s (%s) failed: %s", self._host(), model, reason)
        return LLMUnavailable(reason)

    def _reserve_call(self) -> None:
        with self._lock:
            limit = self.settings.max_calls
            if limit is not None and self._usage.calls >= limit:
                self._usage.budget_refusals += 1
                raise BudgetExceeded(f"budget of {limit} calls used")
            self._usage.calls += 1

    def _reason(self, error: Exception) -> str:
        # The OpenAI SDK takes a second to load: only when a model is called.
        import openai

        retries = self.settings.max_retries
        if isinstance(error, openai.APITimeoutError):
            return f"timed out after {self.settings.timeout_s:g} s ({retries} retries)"
        if isinstance(error, openai.APIConnectionError):
            return f"cannot connect to {self._host()} ({retries} retries)"
        if isinstance(error, openai.APIStatusError):
            status = error.status_code
            message = " ".join(str(error.message).split())[:200]
            # The statuses the SDK retries (408, 409, 429, 5xx); others fail on the first answer.
            retried = (
                f" after {retries} retries" if status in (408, 409, 429) or status >= 500 else ""
            )
            return f"HTTP {status}{retried}: {message}"
        return f"{type(error).__name__} from {self._host()}"

    def _redact(self, text: str) -> str:
        # Servers echo requests in error bodies; no credential may travel on in a reason.
        key = self._openai.api_key
        secrets = [key] if key and key != _NO_KEY else []
        return scrub(text, [*secrets, *url_secrets(self.settings.base_url)])

    def _host(self) -> str:
        """host:port only: the base URL's userinfo is a credential."""
        return urlsplit(redact_url(self.settings.base_url)).netloc.removeprefix("***@")


def parse_json_answer(text: str, schema: type[Schema]) -> Schema:
    """One JSON object of `schema` from an answer, tolerating a ```json fence around it."""
    stripped = text.strip()
    if not stripped:
        raise LLMAnswerError("empty answer")
    if fenced := _FENCE.match(stripped):
        stripped = fenced.group(1).strip()
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError as error:
        raise LLMAnswerError(f"invalid JSON: {error.msg} at char {error.pos}") from None
    try:
        return schema.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise LLMAnswerError(
            f"JSON does not match {schema.__name__}: {where}: {first['msg']}"
        ) from None
