"""Templates broken on purpose, to see a check stop a document."""

from rag_assets.templates.semantic import SemanticTemplate


class PagesBeyondTheDocument(SemanticTemplate):
    """Deliberately broken: claims every chunk sits on page 99."""

    name = "broken_pages"
    version = "1"

    def chunk(self, doc, counter):
        return [
            c.model_copy(update={"page_start": 99, "page_end": 99})
            for c in super().chunk(doc, counter)
        ]
