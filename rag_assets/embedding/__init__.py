"""Embedding models through FlagEmbedding, OpenVINO or ONNX Runtime, resolved from bundled, local
or named models."""
