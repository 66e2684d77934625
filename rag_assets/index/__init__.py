"""The Milvus vector index: schema, replace-by-document, hybrid search."""
