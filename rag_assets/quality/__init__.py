"""Checks on chunks, embeddings and the index, as plain functions."""
