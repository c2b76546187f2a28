"""Where repogym keeps what it builds once and reuses: mirrors, blobs, checkouts, environments, episodes.

The root is `$REPOGYM_CACHE`, else `$XDG_CACHE_HOME/repogym`, else `~/.cache/repogym`.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    explicit = os.environ.get("REPOGYM_CACHE")
    if explicit:
        return Path(explicit).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser().resolve() / "repogym"


def cache_dir(*parts: str) -> Path:
    """A folder under the cache root, created on first use."""
    folder = cache_root().joinpath(*parts)
    folder.mkdir(parents=True, exist_ok=True)
    return folder
