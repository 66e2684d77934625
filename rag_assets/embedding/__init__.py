"""Embedding models through FlagEmbedding or ONNX Runtime, resolved from bundled, local or named models."""
