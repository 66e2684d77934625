"""Typed retrieval tools: precise lookups that plain similarity search does badly, one module
each (`glossary`, `table_rows`, `text`, `figures`, `section`), listed in `registry`.

Each returns pydantic models carrying a `Source`, so an answer can cite what a tool found.
Functions take a `Toolbox`: the retriever on the index plus the stored chunks, read lazily.
"""
