"""Endpoint URLs: which are accepted, how their secrets are sent, and how they are kept out of what a run
writes (``config.json``, logs, error messages); command-line and keyword arguments as a run stores them."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit


def _host_and_port(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return host


def check_base_url(url: str) -> None:
    """Raise ``ValueError`` unless ``url`` is an ``http://`` or ``https://`` URL with a host whose query names
    each parameter once (the message shows the URL redacted)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"base URL {redact_url(url)!r} must start with http:// or https:// and name a host, "
                         "e.g. http://127.0.0.1:8000/v1")
    names = [name for name, _ in parse_qsl(parts.query, keep_blank_values=True)]
    if len(set(names)) != len(names):
        raise ValueError(f"base URL {redact_url(url)!r}: its query names a parameter twice "
                         f"({', '.join(sorted({n for n in names if names.count(n) > 1}))}); give each once")


def redact_url(url: str) -> str:
    """``url`` without user info, query or fragment, where keys hide (``https://key@host/v1?api_key=...``)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, _host_and_port(url), parts.path, "", ""))


def split_endpoint(url: str) -> tuple[str, str | None, dict[str, str]]:
    """``url`` as a base URL to send requests to: without user info, query or fragment; the user info as an
    HTTP Basic ``Authorization`` value (or None); and the query's parameters, to send with every request.

    ``http://user:KEY@host/v1`` means Basic auth, as for curl and httpx; sending it as a header of its
    own (and the URL without it) lets every transport do the same (aiohttp refuses a URL with
    credentials next to an ``Authorization`` header). A query (``https://host/v1?api_key=KEY``, as some
    gateways want) cannot stay in the base URL: the client appends each request's path to the base URL
    as text, which put it inside the path (``/v1/?api_key=KEYchat/completions``).
    """
    parts = urlsplit(url)
    header = None
    if parts.username is not None or parts.password is not None:
        pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        header = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    return redact_url(url), header, query


def mask_secrets(text: str, urls: list[str], keys: tuple[str | None, ...] = ()) -> str:
    """``text`` with every secret the request carried as ``***``: the ``keys`` sent (a bearer API key), every value
    of ``urls`` that may be a key (a user-info password, a query value), each of eight characters or more, as
    shorter ones are no keys and masking them would garble the text; and anything shaped like a provider key.

    For text taken from a response, such as an error message, which may echo the request ("Incorrect API key
    provided: sk-...").
    """
    values: set[str] = {key for key in keys if key}
    for url in urls:
        parts = urlsplit(url)
        values.update([unquote(parts.password or ""), *(value for _, value in parse_qsl(parts.query))])
    for value in sorted((v for v in values if len(v) >= 8), key=len, reverse=True):
        text = text.replace(value, "***")
    return _KEY_SHAPES.sub("***", text)


#: Shapes of provider keys and tokens: OpenAI-style ``sk-``, Hugging Face ``hf_``, GitHub, GitLab and Slack
#: tokens, AWS access key ids, JWTs.
_KEY_SHAPES = re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}|\b(?:hf|gh[opusr]|github_pat|glpat|xox[abprs])[-_][A-Za-z0-9_-]{8,}"
                         r"|\bAKIA[0-9A-Z]{16}\b|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")
#: Words that make a name a secret's (``--api-key``, ``hf_token``, ``apiKey``, ``--password``): a word of the name ends
#: in one of the first kind or is one of the second. ``tokenizer`` and ``max_num_batched_tokens`` are no such names.
_SECRET_ENDINGS = ("key", "token", "secret", "password", "passwd", "passphrase", "credential", "credentials")
_SECRET_WORDS = ("auth", "authorization", "bearer")


def names_a_secret(name: str) -> bool:
    """Whether an option or argument named ``name`` holds a secret; ``--api-key-env`` and ``api_key_env`` name the
    variable that holds one, not the secret."""
    words = [w.lower() for w in re.split(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])", name) if w]
    if not words or words[-1] == "env":
        return False
    return any(w.endswith(_SECRET_ENDINGS) or w in _SECRET_WORDS for w in words)


def looks_like_key(value: str) -> bool:
    """Whether ``value`` has a known key shape, or is a long run (32+) of token characters with digits and letters."""
    if _KEY_SHAPES.search(value):
        return True
    return (len(value) >= 32 and re.fullmatch(r"[A-Za-z0-9+/=_.-]+", value) is not None
            and any(c.isdigit() for c in value) and any(c.isalpha() for c in value))


def redact_args(args: list[str]) -> list[str]:
    """Command-line arguments as a run may store them: every value that looks like a key, and the value of an
    option named for a secret (``--api-key=...``; not ``--api-key-env=NAME``, which names a variable), as ``***``."""
    out: list[str] = []
    secret_next = False
    for arg in args:
        option, eq, value = arg.partition("=")
        if option.startswith("-") and eq:
            hidden = looks_like_key(value) or names_a_secret(option)
            out.append(f"{option}=***" if hidden else arg)
            secret_next = False
        elif option.startswith("-") and not looks_like_key(arg):
            out.append(arg)
            secret_next = names_a_secret(option)
        else:
            out.append("***" if secret_next or looks_like_key(arg) else arg)
            secret_next = False
    return out


def redact_mapping(values: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments (``--model-args``, ``--judge-model-args``) as a run may store them: the value of every key
    named for a secret (:func:`names_a_secret`; nested mappings too) and every text with a provider key's shape
    as ``***``.

    Other long texts stay, unlike in :func:`redact_args`: these arguments decide results (a pinned ``revision``
    hash, a ``tokenizer`` path), so ``config.json`` must hold them to replay the run and to tell a resume with
    other values from one with the same.
    """
    return {key: "***" if names_a_secret(str(key)) else _redact_value(value) for key, value in values.items()}


def _redact_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return redact_mapping(value)
    if isinstance(value, (list, tuple)):
        return [_redact_value(v) for v in value]
    return "***" if isinstance(value, str) and _KEY_SHAPES.search(value) else value
