"""Character ranges of East Asian scripts, for regex character classes (`[{NO_SPACE_SCRIPTS}]`)."""

# Han, kana, CJK punctuation and full-width forms: scripts written without spaces, where one
# character is roughly one token. Not Hangul: Korean puts spaces between words.
NO_SPACE_SCRIPTS = (
    "\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\uff00-\uffef\U00020000-\U0002fa1f"
)
# The letters of Chinese, Japanese and Korean: Han (basic plane), kana, Hangul syllables and
# jamo. No punctuation or full-width forms.
HAN_KANA_HANGUL = (
    r"\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
)
