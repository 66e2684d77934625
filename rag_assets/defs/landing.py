"""Which steps a document's run names, when its file cannot land.

Dagster records every asset check of a run's steps as planned when the run is created, and a
planned check whose run failed reads "execution failed" for that document. The UI sums a
partitioned check over every document, so one file failing in raw_documents read as every
check of every document failed. A file that raw_documents refuses (missing, over a limit, not
of its type: the checks it makes before copying) therefore gets a run of raw_documents alone:
the run fails there with its reason, and its checks are not run rather than failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rag_assets.defs.incremental import PartitionPlan
from rag_assets.defs.resources import InboxResource
from rag_assets.errors import DocumentError
from rag_assets.sources.raw import check_document

LANDING = "raw_documents"


def landing_refused(inbox: InboxResource, relative_path: str) -> bool:
    """Whether raw_documents will fail on this inbox file, by the checks it makes first."""
    try:
        check_document(inbox.inbox / relative_path, relative_path, inbox.max_file_mb, inbox.limits)
    except (DocumentError, OSError):
        return True
    return False


def run_selection(assets: Sequence[str], inbox: InboxResource, relative_path: str) -> list[str]:
    """`assets` as a document's run names them: raw_documents alone for a file it refuses."""
    if LANDING in assets and landing_refused(inbox, relative_path):
        return [LANDING]
    return list(assets)


def landing_plan(plan: PartitionPlan, inbox: InboxResource, relative_path: str) -> PartitionPlan:
    return replace(plan, assets=tuple(run_selection(plan.assets, inbox, relative_path)))
