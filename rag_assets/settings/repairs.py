"""The IR repairs' names, as RAG_ASSETS_REPAIRS_OFF accepts them (normalize/repairs runs them)."""

REPAIR_NAMES = (
    "hyphens_joined",
    "split_words_joined",
    "cjk_spaces_removed",
    "furniture_restored",
    "furniture_retyped",
    "tables_merged",
    "heading_lines_split",
    "heading_levels",
)
