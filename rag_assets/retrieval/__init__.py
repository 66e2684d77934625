"""Retrieval over the index: search, rerank."""
