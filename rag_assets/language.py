"""Which language a text is in, by script: enough to pick how to search it, no model needed.

The detector tells scripts apart, not languages that share one: Latin text is reported as
English, the only Latin-script language the bundled model covers. Each Han, kana or Hangul
character counts as one unit and each run of letters in another script as one word, so a
Chinese sentence quoting an English register name stays Chinese.
"""

from __future__ import annotations

import re
import unicodedata

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


_LETTER_SCRIPTS = {"LATIN": "en", "CYRILLIC": "ru", "GREEK": "el", "ARABIC": "ar", "HEBREW": "he"}


def _word_script(word: str) -> str:
    name = unicodedata.name(word[0], "")
    return next((lang for key, lang in _LETTER_SCRIPTS.items() if name.startswith(key)), "other")


def detect_language(text: str) -> str:
    """`zh`, `ja`, `ko`, `en`, `ru`, `el`, `ar`, `he`, `other`, or `und` when there are no letters."""
    cjk: dict[str, int] = {}
    words: dict[str, int] = {}
    for char in text:
        script = _script(char)
        if script:
            cjk[script] = cjk.get(script, 0) + 1
    for word in _WORD.findall(text):
        if not _script(word[0]):
            lang = _word_script(word)
            words[lang] = words.get(lang, 0) + 1
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
