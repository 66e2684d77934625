"""Helpers of the `qa_pairs` template: line markers, text segments, document structure."""
