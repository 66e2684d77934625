"""The per-document assets, one small module per stage of the pipeline."""

from dagster import load_assets_from_modules

from rag_assets.defs.assets import chunking, documents, indexing
from rag_assets.defs.pipeline import pipeline_order

_DOCUMENT_ASSETS = load_assets_from_modules([documents, chunking, indexing])
# The steps of a document's run in graph order: an asset added to these modules takes its place.
PIPELINE = pipeline_order(_DOCUMENT_ASSETS)
# The steps that carry asset checks: a run naming one plans its checks for the document.
CHECKED = [
    name
    for name in PIPELINE
    if any(k.asset_key.to_user_string() == name for d in _DOCUMENT_ASSETS for k in d.check_keys)
]
