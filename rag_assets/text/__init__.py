"""Plain-text building blocks (markdown syntax, heading numbers, script ranges,
normalization); imports nothing else of rag_assets, so any layer may use it."""
