"""Retrieval evaluation: question sets, relevance, metrics per slice, templates side by side."""
