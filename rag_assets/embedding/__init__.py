"""Embedding models through FlagEmbedding, resolved from bundled, local or named models."""
