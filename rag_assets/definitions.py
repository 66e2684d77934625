"""The code location: `dagster dev -w workspace.yaml` loads `defs` from here."""

from rag_assets.defs.build import build_defs
from rag_assets.settings import Settings

defs = build_defs(Settings.from_env())
