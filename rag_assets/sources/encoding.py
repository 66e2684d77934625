"""Text in a Unicode encoding other than UTF-8, told by its byte order mark (BOM).

UTF-16 and UTF-32 text is full of NUL bytes, which would otherwise mark the file as binary.
"""

from __future__ import annotations

import codecs

# Longest first: the UTF-32 LE mark begins with the UTF-16 LE one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def bom_encoding(head: bytes) -> tuple[str, int] | None:
    """The encoding the text's BOM names and the BOM's length; None without a BOM."""
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return encoding, len(bom)
    return None


def to_utf8(data: bytes) -> tuple[bytes, str | None]:
    """The text as UTF-8 without a BOM, and the encoding it was in when that was not UTF-8.

    Bytes without a BOM come back as they are (their encoding is the reader's to guess).
    """
    found = bom_encoding(data[:4])
    if found is None:
        return data, None
    encoding, length = found
    try:
        text = data[length:].decode(encoding)
    except UnicodeDecodeError:
        return data, None  # not the text its mark says: left for the reader to judge
    return text.encode("utf-8"), None if encoding == "utf-8" else encoding.upper()
