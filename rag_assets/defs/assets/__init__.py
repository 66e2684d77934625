"""The seven per-document assets, one small module per stage of the pipeline."""
