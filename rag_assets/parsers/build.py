"""A parser object by name; each library is imported only when its parser is first built."""

from __future__ import annotations


def build_parser(name: str, docling_artifacts_path: str | None = None, workers: int = 1):
    """A new `name` parser: docling, unstructured, plaintext or pymupdf (whose page ranges run in
    `workers` processes)."""
    if name == "docling":
        # Only the parser a file needs is loaded (see above).
        from rag_assets.parsers.docling import DoclingParser

        return DoclingParser(artifacts_path=docling_artifacts_path)
    if name == "unstructured":
        # Only the parser a file needs is loaded (see above).
        from rag_assets.parsers.unstructured import UnstructuredParser

        return UnstructuredParser()
    if name == "plaintext":
        # Only the parser a file needs is loaded (see above).
        from rag_assets.parsers.plaintext import PlainTextParser

        return PlainTextParser()
    # Only the parser a file needs is loaded (see above).
    from rag_assets.parsers.pymupdf import PyMuPDFParser

    return PyMuPDFParser(workers=workers)
