"""Settings read where they are used, each time, rather than once into `Settings`: the parse
workers' limits, the model cache, and the names of the variables holding keys."""

from __future__ import annotations

from pydantic import Field

from rag_assets.settings.base import EnvSettings, shown

# Read when the client is made, never stored, logged or put in metadata.
LLM_API_KEY_ENV = "RAG_ASSETS_LLM_API_KEY"
RERANK_API_KEY_ENV = "RAG_ASSETS_RERANK_API_KEY"
KEY_VARIABLES = {
    LLM_API_KEY_ENV: (
        "the LLM endpoint's key (or the variable `RAG_ASSETS_LLM_API_KEY_ENV` names); read when "
        "the client is made, never stored, logged or put in metadata"
    ),
    RERANK_API_KEY_ENV: (
        "the `/rerank` endpoint's key, sent as `Authorization: Bearer`; read when the client is "
        "made, never stored, logged or put in an error"
    ),
}


class ParseWorkerSettings(EnvSettings):
    """What a parse worker may take and how long it is kept; each value is checked when a parse
    reads it, and a bad one fails that parse naming the variable."""

    parse_workers_idle_s: float = Field(
        60.0,
        description=(
            "seconds the parse workers (~0.5 GiB each) may sit idle before they are stopped; "
            "the next long PDF starts them again"
        ),
    )
    parse_page_timeout_s: float = Field(
        60.0,
        description=(
            "seconds a PDF page may take to parse (PyMuPDF); a worker still on it is killed and "
            "replaced, and the document lands without that page (a note names it) or, with no "
            "page left, fails naming it; with a limit every PDF is parsed by the workers (a "
            "2-page PDF: ~1.9 s against ~1.6 s in process, measured on a shared 2-core "
            "machine); `0` = no limit, short PDFs parsed in process"
        ),
    )
    # A worker holds ~1.4 GB of address space after a parse (0.55 GB resident): the limit stops
    # a page that would take the machine, not a heavy one.
    parse_memory_mb: float = Field(
        8192.0,
        description=(
            "address space a parse worker may take, lowered to what the process inherited "
            "(`ulimit -v`, its cgroup's memory limit); a page or document that needs more fails "
            "its document, naming the setting, and the worker goes on; `0` = no limit"
        ),
    )
    # Docling reads a 500-page DOCX in about a minute here; ten leave room for a slower machine.
    parse_document_timeout_s: float = Field(
        600.0,
        description=(
            "seconds a Docling or Unstructured parse (DOCX, HTML, Markdown, XLSX, PPTX, EPUB, ...) "
            "may take; these parses run in the parse workers too (a worker with Docling loaded "
            "holds ~1.9 GB of address space; the first such parse of a process pays ~3 s to "
            "start it), and one over its time is stopped with its worker, which is replaced: the "
            "document fails naming the setting, the next lands; `0` = no limit"
        ),
    )


class ModelCacheSettings(EnvSettings):
    """Where model exports are kept."""

    model_cache: str | None = Field(
        None,
        description=(
            "where ONNX exports of model folders are kept, shared by processes and data folders"
        ),
        json_schema_extra=shown("`~/.cache/rag_assets/onnx` (`$XDG_CACHE_HOME/rag_assets/onnx`)"),
    )
