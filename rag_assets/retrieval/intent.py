"""Whether a question asks what a term means: then a glossary entry is the answer, otherwise
it is at most context.

A spec's glossary entry names its term in a sentence of twenty words, so for any question that
names the term (`how long is the card detect input debounced?`) it ranks first in BM25 and in
the dense model alike, above the passage that answers. Search lets glossary entries lead only
for questions that ask for a meaning (`RAG_ASSETS_FUSION_GLOSSARY_WEIGHT`, see fusion.py).
"""

from __future__ import annotations

import re

# Linear in the question: the words between `what does` and `mean` are bounded, so a long text
# of many `what does` costs no more per occurrence.
_DEFINITION_QUESTION = re.compile(
    r"(?i)\b(?:what\s+(?:is|are|was|were)\b|what\s+does\b[^?.!\n]{0,120}?\b(?:mean|stand\s+for)\b"
    r"|meaning\s+of\b|\bdefin(?:e|es|ed|ition)\b|\bstands?\s+for\b|\bacronym\b|\babbreviation\b"
    r"|was\s+(?:ist|sind|bedeutet|versteht\s+man)\b|\bbedeutung\b|\bdefinition\b)"
    r"|是什么|是什麼|什么是|什麼是|何谓|何謂|指什么|指什麼|的含义|的含義|的定义|的定義|什么意思|什麼意思|是指"
)


def asks_for_definition(question: str) -> bool:
    return bool(_DEFINITION_QUESTION.search(question))
