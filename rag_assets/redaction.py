"""Secrets out of everything a person or a file sees: URLs' userinfo and key-like parameters.

Settings may carry credentials (`http://user:KEY@host/v1`, `?api_key=...`); they are used to
connect and nowhere else: every URL is passed through `redact_url` before it is logged, put
in metadata, stored, or written into an error message.
"""

from __future__ import annotations

import base64
import re
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

MASK = "***"
# Query parameters that carry credentials in the URLs of common services.
_SECRET_PARAMS = re.compile(
    r"(?i)^(?:.*(?:key|token|secret|password|passwd|pwd|signature|sig|auth|credential).*)$"
)


def redact_url(url: str | None) -> str:
    """The URL with userinfo replaced by `***` and credential-like query values masked."""
    if not url:
        return ""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return MASK  # not a URL we can take apart: show nothing of it
    if not parts.scheme or not host:
        return url if "@" not in url else MASK
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    if parts.username is not None or parts.password is not None:
        netloc = f"{MASK}@{netloc}"
    query = urlencode(
        [
            (name, MASK if _SECRET_PARAMS.match(name) else value)
            for name, value in parse_qsl(parts.query, keep_blank_values=True)
        ],
        safe="*",
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def url_secrets(url: str | None) -> list[str]:
    """The secret parts of a URL (user, password, credential query values), to scrub from text."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    userinfo = [s for s in (parts.username, parts.password) if s]
    found = [*userinfo, *(unquote(s) for s in userinfo)]  # as written and as sent
    if userinfo:  # and as a Basic authorization header, which servers echo too
        pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        found.append(base64.b64encode(pair.encode()).decode())
    found += [v for k, v in parse_qsl(parts.query) if _SECRET_PARAMS.match(k)]
    return list(dict.fromkeys(s for s in found if s))


def split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """The URL without its userinfo, and that userinfo as (user, password) for Basic auth.

    HTTP clients log request URLs as they are; without userinfo in them, nothing leaks there.
    """
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    netloc = parts.netloc.rpartition("@")[2]
    auth = (unquote(parts.username or ""), unquote(parts.password or ""))
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)), auth


def scrub(text: str, secrets: list[str]) -> str:
    """`text` with every secret (and its URL-encoded form) replaced by `***`."""
    for secret in sorted({s for s in secrets if len(s) >= 3}, key=len, reverse=True):
        text = text.replace(secret, MASK).replace(quote(secret, safe=""), MASK)
    return text
