"""Which language a text is in, by script: enough to pick how to search it, no model needed.

The detector tells scripts apart, not languages that share one: Latin text is reported as
English, the only Latin-script language the bundled model covers. Each Han, kana or Hangul
character counts as one unit and each run of letters in another script as one word, so a
Chinese sentence quoting an English register name stays Chinese.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter

UNDETERMINED = "und"
CJK_SHARE = 0.3  # units that must be CJK for a text to count as Chinese / Japanese / Korean

_WORD = re.compile(r"[^\W\d_]+")


def _script(char: str) -> str | None:
    code = ord(char)
    if 0x3040 <= code <= 0x30FF or 0x31F0 <= code <= 0x31FF:
        return "ja"  # hiragana / katakana: only Japanese writes them
    if 0xAC00 <= code <= 0xD7AF or 0x1100 <= code <= 0x11FF or 0x3130 <= code <= 0x318F:
        return "ko"
    if 0x3400 <= code <= 0x4DBF or 0x4E00 <= code <= 0x9FFF or 0xF900 <= code <= 0xFAFF:
        return "zh"
    if 0x20000 <= code <= 0x2FA1F:
        return "zh"
    return None


# Every character `_script` names, found by one scan instead of a call a character.
_CJK_CHAR = re.compile(
    "[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f]"
)

_LETTER_SCRIPTS = {"LATIN": "en", "CYRILLIC": "ru", "GREEK": "el", "ARABIC": "ar", "HEBREW": "he"}


@functools.lru_cache(maxsize=4096)
def _word_script(first_letter: str) -> str | None:
    """The script a word starting with this letter counts for; None for a CJK one."""
    if _script(first_letter):
        return None
    name = unicodedata.name(first_letter, "")
    return next((lang for key, lang in _LETTER_SCRIPTS.items() if name.startswith(key)), "other")


def detect_language(text: str) -> str:
    """`zh`, `ja`, `ko`, `en`, `ru`, `el`, `ar`, `he`, `other`, or `und` when there are no letters."""
    cjk = Counter(_script(char) for char in _CJK_CHAR.findall(text))
    words = Counter(_word_script(word[0]) for word in _WORD.findall(text))
    words.pop(None, None)
    cjk_units = sum(cjk.values())
    units = cjk_units + sum(words.values())
    if units == 0:
        return UNDETERMINED
    if cjk_units / units >= CJK_SHARE:
        # Japanese mixes kanji with kana; any kana marks it. Korean is written in Hangul.
        if cjk.get("ja"):
            return "ja"
        return "ko" if cjk.get("ko", 0) > cjk.get("zh", 0) else "zh"
    return max(words, key=lambda lang: words[lang])
