"""Every typed tool, in the order the model is offered them: the router, `answer` and the CLI
loop over this. A new tool is one module declaring its `TOOL`, listed here."""

from __future__ import annotations

from rag_assets.retrieval.tools import figures, glossary, section, table_rows, text
from rag_assets.retrieval.tools.tool import Tool

TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (glossary.TOOL, table_rows.TOOL, text.TOOL, figures.TOOL, section.TOOL)
}
