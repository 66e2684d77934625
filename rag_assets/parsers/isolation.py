"""A whole document's parse in a parse worker, under a wall-time and a memory limit.

Docling and Unstructured parse a DOCX, HTML, XLSX, EPUB, ... in one call that nothing can
interrupt: a small file that expands to millions of elements can hold the run for an hour or
grow it until the process dies, taking every other document of the ingest with it. So their
parses run in the parse workers (`page_pool`, where PDF page ranges run too): a parse over its
time is stopped with its worker, which is replaced; one over the worker's memory limit fails
with MemoryError there, or ends the worker; either way the document fails alone, in one line
naming the setting, and the run goes on.
"""

from __future__ import annotations

from pathlib import Path

from rag_assets.errors import DocumentError
from rag_assets.parsers.base import ParsedDocument
from rag_assets.parsers.build import build_parser
from rag_assets.parsers.page_pool import (
    TimedOut,
    WorkerDied,
    run_in_workers,
    setting,
    worker_memory,
)
from rag_assets.settings.processes import ParseWorkerSettings

DOCUMENT_TIMEOUT_ENV = ParseWorkerSettings.env_name("parse_document_timeout_s")
DEFAULT_DOCUMENT_TIMEOUT = ParseWorkerSettings.model_fields["parse_document_timeout_s"].default

# In a worker: the parser objects built so far, by (parser, Docling artifacts folder).
_parsers: dict[tuple[str, str | None], object] = {}


def document_timeout() -> float | None:
    """Seconds a non-PDF parse may take (RAG_ASSETS_PARSE_DOCUMENT_TIMEOUT_S); None: no limit (0)."""
    return (
        setting(DOCUMENT_TIMEOUT_ENV, DEFAULT_DOCUMENT_TIMEOUT, "0 (no limit) or more seconds")
        or None
    )


def parse_in_worker(
    parser: str, path: Path, file_format: str, workers: int, artifacts_path: str | None
) -> ParsedDocument:
    """`parser`'s parse of `path`, run in a parse worker; DocumentError when it ran over a limit."""
    limit = document_timeout()
    try:
        [result] = run_in_workers(
            workers,
            _parse,
            [(parser, str(path), file_format, artifacts_path)],
            time_limits=[limit] if limit else None,
        )
    except WorkerDied as error:
        raise DocumentError(
            f"{path.name}: parsing stopped, the {parser} parser's worker process died ({error}); "
            f"a parse may use {worker_memory().describe()}"
        ) from None
    except MemoryError:
        raise DocumentError(
            f"{path.name}: parsing stopped, it needed more than the {worker_memory().describe()} "
            "a parse worker may use"
        ) from None
    if isinstance(result, TimedOut):
        raise DocumentError(
            f"{path.name}: parsing stopped after {result.seconds:g} s, the time limit of a "
            f"document's parse ({DOCUMENT_TIMEOUT_ENV})"
        )
    return result


def _parse(parser: str, path: str, file_format: str, artifacts_path: str | None) -> ParsedDocument:
    """In a worker: the parse itself, with the parser object kept for the next document."""
    key = (parser, artifacts_path)
    if key not in _parsers:
        _parsers[key] = build_parser(parser, artifacts_path)
    try:
        return _parsers[key].parse(Path(path), file_format)
    except Exception as error:
        if _out_of_memory(error):
            raise MemoryError from None
        raise


def _out_of_memory(error: BaseException | None) -> bool:
    """Whether a MemoryError caused `error`: libraries wrap it (pydantic-core's serializer keeps
    only its text)."""
    while error is not None:
        if isinstance(error, MemoryError) or "MemoryError" in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False
