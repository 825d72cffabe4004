"""mkdocs hook: links from docs/ to repository files the site does not hold (code, experiment folders).

On GitHub, ``[leaderboard](../leaderboards/leaderboard.md)`` or ``[runs](../experiments/baselines/starpo/)`` in a
docs page opens the file or folder; the site built from docs/ has neither. Before mkdocs checks a
page's links, each relative link whose target exists in the checkout but is no documentation file
becomes a link into the repository (``repo_url`` in mkdocs.yml) or, without one, the repository path
set as code. A link whose target exists nowhere is left alone, so ``mkdocs build --strict`` still
fails on it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

# [text](target) and ![alt](target); the target has no spaces or parentheses (as in these pages)
_LINK = re.compile(r"(!?)\[([^\]\n]*)\]\(([^)\s]+)\)")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Rewrite the page's links to repository files outside the site (mkdocs calls this per page)."""
    docs = Path(config["docs_dir"]).resolve()
    root = docs.parent
    here = (docs / page.file.src_path).parent
    site_files = {f.src_uri for f in files}

    def rewrite(match: re.Match[str]) -> str:
        bang, text, target = match.groups()
        path, _, anchor = target.partition("#")
        if not path or re.match(r"^[a-z][a-z0-9+.-]*:", path) or path.startswith("/"):
            return match.group(0)  # a URL, an anchor on this page, or an absolute link (mkdocs judges those)
        resolved = (here / path).resolve()
        inside = resolved.is_relative_to(docs)
        if inside and resolved.relative_to(docs).as_posix() in site_files:
            return match.group(0)  # a page or file of the site
        if not resolved.exists() or not resolved.is_relative_to(root):
            return match.group(0)  # broken: mkdocs reports it
        repo_path = resolved.relative_to(root).as_posix() + ("/" if resolved.is_dir() else "")
        if config.get("repo_url"):
            kind = "tree" if resolved.is_dir() else "blob"
            url = f"{config['repo_url'].rstrip('/')}/{kind}/HEAD/{repo_path}" + (f"#{anchor}" if anchor else "")
            return f"{bang}[{text}]({url})"
        return f"{text} (`{repo_path}` in the repository)" if text and text != repo_path else f"`{repo_path}`"

    return _LINK.sub(rewrite, markdown)
