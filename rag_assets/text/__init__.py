"""Plain-text building blocks (markdown syntax, script ranges, normalization); imports nothing else
of rag_assets, so any layer may use it."""
