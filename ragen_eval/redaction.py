"""Keeping secrets out of what a run writes: endpoint URLs as they may be logged or stored."""

from __future__ import annotations

import base64
from urllib.parse import unquote, urlsplit, urlunsplit


def _host_and_port(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return host


def redact_url(url: str) -> str:
    """``url`` without user info, query or fragment, where keys hide (``https://key@host/v1?api_key=...``)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, _host_and_port(url), parts.path, "", ""))


def split_credentials(url: str) -> tuple[str, str | None]:
    """``url`` without its user info, and that user info as an HTTP Basic ``Authorization`` value (or None).

    ``http://user:KEY@host/v1`` means Basic auth, as for curl and httpx; sending it as a header of its
    own (and the URL without it) lets every transport do the same (aiohttp refuses a URL with
    credentials next to an ``Authorization`` header).
    """
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
    header = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    return urlunsplit((parts.scheme, _host_and_port(url), parts.path, parts.query, parts.fragment)), header
