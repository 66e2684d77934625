"""Templates picked per collection by evaluation (`rag-assets evaluate --pick-template`).

`auto` chooses a template per document from what the document shows. A collection with a
question set of its own (`rag-assets evaluate --generate --collection NAME`, or one written by
hand and tagged `collection:NAME`) can instead be chunked with the template that retrieved
best on it: the pick is kept in the data folder's `template_picks.json`, and a document of
that collection whose template resolves to `auto` is planned with the picked one (a template
named in rag_collections.yaml or forced on the command line still wins). Deleting the file,
or a pick, gives the choice back to `auto`; either way the next ingest re-chunks the
documents whose template changed.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ValidationError

from rag_assets.errors import ConfigurationError

PICKS_FILE = "template_picks.json"
# The pick made on questions of every collection: for documents whose own collection has none.
EVERY_COLLECTION = "*"


class TemplatePick(BaseModel):
    template: str
    question_set: str  # the slice it was picked on (`tag:collection:specs`)
    questions: int
    mrr: float  # MRR@10 of the picked template on those questions
    scores: dict[str, float]  # every template compared -> its MRR@10 there

    def reason(self) -> str:
        others = ", ".join(f"{t} {s:.3f}" for t, s in self.scores.items() if t != self.template)
        return (
            f"auto: picked by evaluation on {self.questions} questions ({self.question_set}): "
            f"MRR@10 {self.mrr:.3f}" + (f" against {others}" if others else "")
        )


def load_picks(path: Path) -> dict[str, TemplatePick]:
    """Collection name (or `*`) -> its pick; none when the file is absent."""
    if not path.is_file():
        return {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return {name: TemplatePick.model_validate(pick) for name, pick in raw.items()}
    except (OSError, ValueError, AttributeError, ValidationError) as error:
        reason = " ".join(str(error).split())[:300]
        raise ConfigurationError(
            f"{path}: not a file of template picks ({reason}); delete it to let `auto` choose"
        ) from None


def save_pick(path: Path, collection: str, pick: TemplatePick | None) -> None:
    """Record `pick` for `collection`; None forgets the collection's pick."""
    picks = load_picks(path)
    if pick is None:
        picks.pop(collection, None)
    else:
        picks[collection] = pick
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({name: p.model_dump() for name, p in sorted(picks.items())}, indent=2)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text + "\n", encoding="utf-8")
    temporary.replace(path)  # a reader never sees half a file


def picked_for(picks: dict[str, TemplatePick], collection: str | None) -> TemplatePick | None:
    """The pick for a document of `collection` (None: of no collection)."""
    own = picks.get(collection) if collection else None
    return own or picks.get(EVERY_COLLECTION)
