"""Rerank: a cross-encoder scores (query, passage) pairs after fusion; off unless configured.

Two kinds. A local model folder loaded by FlagEmbedding: `FlagReranker` for an encoder
cross-encoder (bge-reranker-v2-m3), `FlagLLMReranker` for a decoder-only reranker
(bge-reranker-v2-gemma). Or an HTTP endpoint speaking the common `/rerank` API (Jina,
Cohere v2, vLLM): POST {model, query, documents, top_n} -> {results: [{index,
relevance_score}]}. Nothing is downloaded: a model that is not on disk means no reranker,
with a note saying why.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from pathlib import Path
from typing import Literal, Protocol
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ValidationError

from rag_assets.settings import Settings
from rag_assets.settings.processes import RERANK_API_KEY_ENV

log = logging.getLogger(__name__)

BACKOFF_S = 0.5  # before the first retry, doubled for each next one
MAX_BACKOFF_S = 8.0

Kind = Literal["cross-encoder", "llm"]


class Reranker(Protocol):
    name: str

    def score(self, query: str, passages: list[str]) -> list[float]:
        """One score per passage, in the passages' order; higher is more relevant."""
        ...


class RerankError(Exception):
    """A rerank call that gave no scores; `reason` is safe to show and store (no key, no userinfo)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def without_userinfo(url: str) -> str:
    """The url without its user:password part, fit for notes, names and logs."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def rerank(reranker: Reranker, query: str, passages: list[str]) -> list[tuple[int, float]]:
    """(passage index, score), best first; equal scores keep the order the passages came in."""
    scores = reranker.score(query, passages)
    if len(scores) != len(passages):
        raise RerankError(f"{reranker.name} gave {len(scores)} scores for {len(passages)} passages")
    return sorted(enumerate(scores), key=lambda pair: -pair[1])


def load_reranker(settings: Settings) -> tuple[Reranker | None, str]:
    """The configured reranker (None when off or unusable) and a note saying which, or why not."""
    if settings.rerank_url:
        reranker = HttpReranker(
            settings.rerank_url,
            model=settings.rerank_model,
            timeout_s=settings.rerank_timeout_s,
            max_retries=settings.rerank_max_retries,
        )
        return reranker, f"rerank by {reranker.name} on the top {settings.rerank_top_n} hits"
    if not settings.rerank_model:
        return None, "rerank off: neither RAG_ASSETS_RERANK_MODEL nor RAG_ASSETS_RERANK_URL is set"
    try:
        path = _locate(settings.rerank_model)
        kind, why = reranker_kind(path)
        reranker = _load_local(str(path), kind)
    except RerankError as error:
        return None, f"rerank did not run: {error.reason}"
    except Exception as error:  # a folder transformers cannot load fails in many ways
        return None, (
            f"rerank did not run: model {settings.rerank_model!r} failed to load "
            f"({type(error).__name__}: {error})"
        )
    return reranker, (
        f"rerank by {reranker.name} ({reranker.model_class}: {why}) "
        f"on the top {settings.rerank_top_n} hits"
    )


def _locate(setting: str) -> Path:
    folder = Path(setting).expanduser()
    if folder.is_dir():
        return folder.absolute()
    # The hub's client loads only for a reranker named by id.
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    try:
        # local_files_only: a missing model is reported, never fetched at query time.
        return Path(snapshot_download(setting, local_files_only=True))
    except (LocalEntryNotFoundError, HFValidationError):
        raise RerankError(
            f"rerank model {setting!r} is missing: neither a local folder nor in the local "
            f"Hugging Face cache, and models are never downloaded at run time"
        ) from None


def reranker_kind(path: Path) -> tuple[Kind, str]:
    """Encoder cross-encoder or decoder-only LLM reranker, from the architecture the folder states."""
    config = path / "config.json"
    if not config.is_file():
        raise RerankError(f"{path} has no config.json: not a transformers model folder")
    architectures = json.loads(config.read_text()).get("architectures") or []
    if any(name.endswith("ForCausalLM") for name in architectures):
        return "llm", f"{architectures[0]} is a decoder: scored by the logit of 'Yes'"
    return "cross-encoder", f"{', '.join(architectures) or 'no architecture'}: one logit per pair"


class LocalReranker:
    """A FlagEmbedding reranker on CPU; build it through load_reranker so it loads once."""

    def __init__(self, path: Path, kind: Kind, batch_size: int = 32, max_length: int = 512):
        # FlagEmbedding loads torch and transformers (seconds): only for a local reranker.
        from FlagEmbedding import FlagLLMReranker, FlagReranker

        model_cls = FlagLLMReranker if kind == "llm" else FlagReranker
        self.model_class = "FlagLLMReranker" if kind == "llm" else "FlagReranker"
        # One device: FlagEmbedding would otherwise start a process pool.
        self.model = model_cls(
            str(path), use_fp16=False, devices="cpu", batch_size=batch_size, max_length=max_length
        )
        self.name = path.name
        self.kind = kind

    def score(self, query: str, passages: list[str]) -> list[float]:
        if not passages:  # FlagEmbedding fails on an empty list
            return []
        # Raw logits: sigmoid would squash strong matches into ties at 1.0.
        return [float(s) for s in self.model.compute_score([[query, p] for p in passages])]


@functools.lru_cache(maxsize=2)
def _load_local(path: str, kind: Kind) -> LocalReranker:
    return LocalReranker(Path(path), kind)


class _Result(BaseModel):
    index: int
    relevance_score: float


class _Answer(BaseModel):
    results: list[_Result]


class HttpReranker:
    """A `/rerank` endpoint; the key comes from RAG_ASSETS_RERANK_API_KEY and goes nowhere else."""

    def __init__(
        self,
        url: str,
        model: str | None = None,
        timeout_s: float = 10,
        max_retries: int = 2,
        backoff_s: float = BACKOFF_S,
    ) -> None:
        # httpx loads only for a reranker served over HTTP.
        import httpx

        parts = urlsplit(url)
        # Userinfo goes as Basic auth, out of the url that httpx logs with every request.
        self.url = without_userinfo(url)
        self.model = model
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.name = f"{model} at {self.url}" if model else self.url
        self._key = os.environ.get(RERANK_API_KEY_ENV, "").strip()
        self._secrets = [s for s in (self._key, parts.password) if s]
        auth = (
            httpx.BasicAuth(parts.username or "", parts.password or "") if parts.username else None
        )
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        self._http = httpx.Client(timeout=timeout_s, headers=headers, auth=auth)

    def __repr__(self) -> str:
        return f"HttpReranker({self.name!r})"

    def score(self, query: str, passages: list[str]) -> list[float]:
        if not passages:
            return []
        body: dict = {"query": query, "documents": passages, "top_n": len(passages)}
        if self.model:
            body["model"] = self.model
        data = self._post(body)
        try:
            results = _Answer.model_validate(data).results
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise self._failed(f"answer is not a rerank result: {where}: {first['msg']}") from None
        scores: list[float | None] = [None] * len(passages)
        for result in results:
            if 0 <= result.index < len(passages):
                scores[result.index] = result.relevance_score
        missing = [i for i, s in enumerate(scores) if s is None]
        if missing:
            raise self._failed(
                f"answer has no score for {len(missing)} of {len(passages)} passages"
            )
        return [float(s) for s in scores if s is not None]

    def _post(self, body: dict) -> object:
        # httpx loads only for a reranker served over HTTP.
        import httpx

        reason = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                delay = min(self.backoff_s * 2 ** (attempt - 1), MAX_BACKOFF_S)
                log.info("rerank by %s: %s; retry in %.1f s", self.name, reason, delay)
                time.sleep(delay)
            try:
                response = self._http.post(self.url, json=body)
            except httpx.TimeoutException:
                reason = f"timed out after {self._http.timeout.read:g} s"
                continue
            except httpx.TransportError as error:
                reason = f"cannot connect ({type(error).__name__})"
                continue
            if response.status_code == 200:
                try:
                    return response.json()
                except ValueError:
                    raise self._failed("answer is not JSON") from None
            # Redacted before it is cut short, so that no piece of a secret survives either.
            text = self._redact(" ".join(response.text.split()))[:200]
            reason = f"HTTP {response.status_code}: {text}"
            if response.status_code not in (408, 429) and response.status_code < 500:
                raise self._failed(reason)  # the request itself is refused: a retry won't help
        raise self._failed(f"{reason} ({self.max_retries} retries)")

    def _failed(self, reason: str) -> RerankError:
        reason = self._redact(reason)
        log.warning("rerank by %s failed: %s", self.name, reason)
        return RerankError(reason)

    def _redact(self, text: str) -> str:
        # Servers echo requests in error bodies; no secret may travel on in a reason.
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def close(self) -> None:
        self._http.close()
