"""Local Python source as a text corpus: for the tokenizer (`model init`) and pretraining (`model pretrain`).

The default corpus is what every machine with Python has: the standard library and the installed
site-packages, less repogym itself (its sample-library templates are the quickstart's tasks; a
team's own repositories are the point: pass them with `--corpus`). Files are
drawn in an order fixed by a hash of their path (so a capped sample mixes packages instead of
taking the alphabet's first ones), skipping files over `max_file_bytes` (generated tables) and
files that are not UTF-8. `Corpus.digest` hashes every chosen file's path and content: it is the
corpus part of the pretraining cache key.
"""

from __future__ import annotations

import hashlib
import os
import sysconfig
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from repogym.errors import ConfigError

MAX_FILE_BYTES = 256_000
#: Folders that hold no code worth learning from (or that would bias it towards one vendored package).
SKIPPED_DIRS = {".git", "__pycache__", "node_modules", ".venv", ".tox", "build", "dist"}


def default_corpus_paths() -> list[Path]:
    """The standard library and the site-packages of the running Python."""
    paths = sysconfig.get_paths()
    found = [Path(paths["stdlib"]), Path(paths["purelib"])]
    return [path for index, path in enumerate(found) if path.is_dir() and path not in found[:index]]


@dataclass(frozen=True)
class Corpus:
    """Chosen files (path, text) and what identifies them."""

    roots: tuple[str, ...]
    files: tuple[tuple[str, str], ...]
    digest: str
    chars: int

    @property
    def texts(self) -> list[str]:
        return [text for _, text in self.files]

    def describe(self) -> dict[str, object]:
        return {
            "roots": list(self.roots),
            "files": len(self.files),
            "chars": self.chars,
            "digest": self.digest,
        }


def python_files(roots: Iterable[Path]) -> list[Path]:
    """Every .py file under `roots` (a root may itself be a file), skipping SKIPPED_DIRS."""
    found: list[Path] = []
    for root in roots:
        if root.is_file():
            found.append(root)
            continue
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".dist-info"))
            found.extend(Path(folder) / name for name in sorted(files) if name.endswith(".py"))
    return found


def load_corpus(
    roots: Iterable[str | os.PathLike[str]] | None = None,
    max_chars: int = 24_000_000,
    seed: int = 0,
    max_file_bytes: int = MAX_FILE_BYTES,
) -> Corpus:
    """Up to `max_chars` of Python source from `roots` (default: stdlib + site-packages)."""
    paths = [Path(root).expanduser().resolve() for root in roots] if roots else default_corpus_paths()
    for path in paths:
        if not path.exists():
            raise ConfigError(f"--corpus {path}: no such file or folder")
    files = python_files(paths)
    if not roots:  # repogym's own package holds the sample libraries' code: the quickstart's held-out tasks
        own = Path(__file__).resolve().parents[1]
        files = [path for path in files if own not in path.parents]
    if not files:
        raise ConfigError(f"--corpus {', '.join(map(str, paths))}: no .py files there")
    order = sorted(files, key=lambda p: hashlib.sha1(f"{seed}:{p}".encode()).hexdigest())
    chosen: list[tuple[str, str]] = []
    digest = hashlib.sha256()
    total = 0
    for path in order:
        if total >= max_chars:
            break
        try:
            if path.stat().st_size > max_file_bytes:
                continue
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not text.strip():
            continue
        name = _relative(path, paths)
        chosen.append((name, text))
        digest.update(name.encode() + b"\0" + text.encode("utf-8", "surrogatepass") + b"\0")
        total += len(text)
    if not chosen:
        raise ConfigError(f"--corpus {', '.join(map(str, paths))}: no readable UTF-8 .py files there")
    return Corpus(tuple(str(p) for p in paths), tuple(chosen), digest.hexdigest(), total)


def _relative(path: Path, roots: list[Path]) -> str:
    for index, root in enumerate(roots):
        if path == root or root in path.parents:
            return f"{index}/{path.relative_to(root) if path != root else path.name}"
    return str(path)
