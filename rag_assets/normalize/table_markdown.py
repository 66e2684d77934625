"""Render a parser's table structure as a GitHub-flavoured markdown table."""

from __future__ import annotations

from rag_assets.contracts.ir import TableData
from rag_assets.text.markdown import markdown_table


def _cell(text: str) -> str:
    # A pipe or newline inside a cell would break the row.
    return " ".join(text.replace("|", "\\|").split())


def table_to_markdown(table: TableData) -> str:
    grid = table.grid()
    if not grid or table.num_cols == 0:
        return ""
    header_rows = max(table.header_rows, 1)
    # Multi-row headers collapse into one header line, keeping every level's label.
    header = []
    for col in range(table.num_cols):
        labels: list[str] = []
        for row in grid[:header_rows]:
            label = _cell(row[col])
            if label and label not in labels:
                labels.append(label)
        header.append(" / ".join(labels))
    return markdown_table(header, ([_cell(c) for c in row] for row in grid[header_rows:]))
