"""The per-document assets, one small module per stage of the pipeline."""

from dagster import load_assets_from_modules

from rag_assets.defs.assets import chunking, documents, indexing
from rag_assets.defs.pipeline import pipeline_order

# The steps of a document's run in graph order: an asset added to these modules takes its place.
PIPELINE = pipeline_order(load_assets_from_modules([documents, chunking, indexing]))
