"""A repository's licence at a commit, from its licence files and package metadata, read from git.

Everything is read from the git tree at the commit (`git ls-tree`, `git
cat-file --batch`), so bare repositories and any commit work and no checkout
is touched. Sources, in the order reported: LICENSE / LICENCE / COPYING /
UNLICENSE files at the top level (any suffix), then pyproject.toml
([project] license and classifiers, [tool.poetry] license), setup.cfg
([metadata] license and classifiers) and setup.py (license= and classifier
strings, read as text, never executed). When the sources agree the most
specific id wins; when they disagree the conflict is recorded and the licence
is the AND of all of them, so a gate must accept every one.
"""

from __future__ import annotations

import configparser
import functools
import os
import re
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from repogym.hostgit import run_git
from repogym.privacy.spdx import (
    UNRECOGNIZED,
    VAGUE_FAMILIES,
    expression_ids,
    family,
    name_to_spdx,
    parse_expression,
    recognise_text,
)

_LICENSE_FILE = re.compile(r"^(licen[cs]e|copying|unlicense)([._-].*)?$", re.IGNORECASE)
# A module called license.py is code, not a licence text.
_CODE_SUFFIXES = (
    ".py",
    ".pyc",
    ".js",
    ".ts",
    ".c",
    ".h",
    ".go",
    ".rs",
    ".sh",
    ".json",
    ".toml",
    ".yml",
    ".yaml",
    ".cfg",
    ".in",
)
_METADATA_FILES = ("pyproject.toml", "setup.cfg", "setup.py")
_MAX_BLOB_BYTES = 512 * 1024


@dataclass(frozen=True)
class LicenseEvidence:
    """What one source says: an SPDX expression and where it was read."""

    spdx_id: str
    source: str
    """e.g. 'LICENSE', 'pyproject.toml [project] license', 'setup.cfg classifiers'."""


@dataclass(frozen=True)
class LicenseInfo:
    """A repository's licence as far as its files tell; spdx_id '' means unknown (see `reason`)."""

    spdx_id: str
    """SPDX expression, e.g. 'MIT' or 'MIT AND GPL-3.0' after a conflict; '' when unknown."""
    source: str
    """Where it was read, e.g. 'LICENSE + pyproject.toml [project] license'; '' when unknown."""
    conflict: bool = False
    """True when sources disagree (each one is in `evidence`)."""
    evidence: tuple[LicenseEvidence, ...] = ()
    reason: str = ""
    """Why the licence is unknown or conflicting, for refusal messages."""

    @property
    def known(self) -> bool:
        return bool(self.spdx_id) and UNRECOGNIZED not in self.spdx_id

    def to_dict(self) -> dict[str, object]:
        return {
            "spdx_id": self.spdx_id,
            "source": self.source,
            "conflict": self.conflict,
            "evidence": [{"spdx_id": e.spdx_id, "source": e.source} for e in self.evidence],
            "reason": self.reason,
        }


def unknown_license(reason: str) -> LicenseInfo:
    return LicenseInfo("", "", reason=reason)


class LicenseDetector:
    """Detects licences per (repository, commit), reusing results while the licence files are unchanged.

    `prefetch` reads the trees and licence blobs of many commits with two git
    processes, where `detect` alone runs one or two per commit (a few ms each,
    which added up to seconds for a mined history).
    """

    def __init__(self) -> None:
        self._by_blobs: dict[tuple[str, tuple[tuple[str, str], ...]], LicenseInfo] = {}
        self._listings: dict[tuple[str, str], dict[str, str]] = {}
        self._texts: dict[tuple[str, str], str] = {}
        """(repo, blob id) -> text, for blobs read by prefetch."""

    def prefetch(self, repo_path: str | os.PathLike[str], commits: Iterable[str]) -> None:
        """Read the top-level trees of `commits` and their licence and metadata blobs ahead of `detect`."""
        repo = str(repo_path)
        wanted = list(dict.fromkeys(c for c in commits if c))
        if not repo or not wanted or not Path(repo).is_dir():
            return
        real = os.path.realpath(repo)
        result = run_git(
            repo, "cat-file", "--batch", input="".join(f"{c}^{{tree}}\n" for c in wanted).encode()
        )
        if result.returncode != 0:
            return  # detect() asks again, one commit at a time, and says why
        blob_ids: set[str] = set()
        for commit, (tree_id, body) in zip(wanted, _batch_objects(result.stdout, len(wanted)), strict=False):
            if body is not None:
                blobs = _relevant_blobs_of_tree(body, len(tree_id) // 2)
                self._listings[(real, commit)] = blobs
                blob_ids.update(blobs.values())
        blob_ids.difference_update(oid for r, oid in self._texts if r == real)
        if blob_ids:
            ordered = sorted(blob_ids)
            read = run_git(repo, "cat-file", "--batch", input="".join(f"{b}\n" for b in ordered).encode())
            for oid, (_, body) in zip(ordered, _batch_objects(read.stdout, len(ordered)), strict=False):
                if body is not None:
                    self._texts[(real, oid)] = body[:_MAX_BLOB_BYTES].decode("utf-8", errors="replace")

    def detect(self, repo_path: str | os.PathLike[str], commit: str = "HEAD") -> LicenseInfo:
        repo = str(repo_path)
        if not repo:
            return unknown_license("the task has no repo_source (no repository to read a licence from)")
        if not Path(repo).is_dir():
            return unknown_license(f"repo_source {repo} is not a local directory")
        real = os.path.realpath(repo)
        blobs = self._listings.get((real, commit))
        if blobs is None:
            listing = run_git(repo, "ls-tree", "-z", commit or "HEAD")
            if listing.returncode != 0:
                first = (
                    listing.stderr.decode(errors="replace").strip().splitlines() or ["git ls-tree failed"]
                )[0]
                return unknown_license(f"cannot read the tree of {commit or 'HEAD'} in {repo}: {first}")
            blobs = _relevant_blobs(listing.stdout)
        key = (real, tuple(sorted(blobs.items())))
        if key not in self._by_blobs:
            known = {
                name: self._texts[(real, oid)] for name, oid in blobs.items() if (real, oid) in self._texts
            }
            missing = {name: oid for name, oid in blobs.items() if name not in known}
            texts = {**known, **_read_blobs(repo, missing)}
            self._by_blobs[key] = combine(_evidence(texts))
        return self._by_blobs[key]


def detect_license(repo_path: str | os.PathLike[str], commit: str = "HEAD") -> LicenseInfo:
    """The licence of the repository at `repo_path` as of `commit` (bare repositories work)."""
    return LicenseDetector().detect(repo_path, commit)


# -- reading the tree ---------------------------------------------------------------------------


def _relevant_blobs(listing: bytes) -> dict[str, str]:
    """Top-level licence and metadata files of a `git ls-tree -z` listing: name -> blob id."""
    blobs: dict[str, str] = {}
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, raw_name = entry.partition(b"\t")
        parts = meta.split()
        name = raw_name.decode("utf-8", errors="replace")
        if (
            len(parts) != 3 or parts[1] != b"blob" or parts[0] == b"120000"
        ):  # symlinks hold a path, not a text
            continue
        if _is_relevant(name):
            blobs[name] = parts[2].decode()
    return blobs


def _is_relevant(name: str) -> bool:
    licence_file = _LICENSE_FILE.match(name) and not name.lower().endswith(_CODE_SUFFIXES)
    return bool(licence_file) or name in _METADATA_FILES


def _relevant_blobs_of_tree(body: bytes, width: int) -> dict[str, str]:
    """`_relevant_blobs` from a raw tree object: entries of "<mode> <name>\\0<binary id>".

    `width` is the id's length in bytes (20 for SHA-1, 32 for SHA-256); a file's
    mode starts with "10" (100644, 100755).

    >>> entry = b"100644 LICENSE\\0" + bytes(range(20)) + b"40000 src\\0" + bytes(20)
    >>> _relevant_blobs_of_tree(entry, 20)
    {'LICENSE': '000102030405060708090a0b0c0d0e0f10111213'}
    """
    blobs: dict[str, str] = {}
    position = 0
    while position < len(body):
        space = body.find(b" ", position)
        nul = body.find(b"\0", space)
        if space < 0 or nul < 0:
            break
        mode, raw_name = body[position:space], body[space + 1 : nul]
        oid = body[nul + 1 : nul + 1 + width].hex()
        position = nul + 1 + width
        name = raw_name.decode("utf-8", errors="replace")
        if mode.startswith(b"10") and _is_relevant(name):  # a file; 120000 (symlink) holds a path
            blobs[name] = oid
    return blobs


def _batch_objects(data: bytes, count: int) -> Iterator[tuple[str, bytes | None]]:
    """(object id, body) of each object `git cat-file --batch` wrote; body None for a missing one."""
    position = 0
    for _ in range(count):
        header_end = data.find(b"\n", position)
        if header_end < 0:
            return
        header = data[position:header_end].split()
        if len(header) != 3:  # "<name> missing" or "<name> ambiguous"
            position = header_end + 1
            yield "", None
            continue
        size = int(header[2])
        yield header[0].decode(), data[header_end + 1 : header_end + 1 + size]
        position = header_end + 1 + size + 1


def _read_blobs(repo: str, blobs: dict[str, str]) -> dict[str, str]:
    """The text of each blob, read with one `git cat-file --batch`."""
    if not blobs:
        return {}
    names = sorted(blobs)
    result = run_git(repo, "cat-file", "--batch", input="".join(f"{blobs[n]}\n" for n in names).encode())
    return {
        name: body[:_MAX_BLOB_BYTES].decode("utf-8", errors="replace")
        for name, (_, body) in zip(names, _batch_objects(result.stdout, len(names)), strict=False)
        if body is not None
    }


# -- what each source says ----------------------------------------------------------------------


def _evidence(texts: dict[str, str]) -> list[LicenseEvidence]:
    found: list[LicenseEvidence] = []
    file_ids: list[tuple[str, str]] = []
    for name in sorted(n for n in texts if n not in _METADATA_FILES):
        ids = list(_recognised(texts[name])) or [UNRECOGNIZED]
        file_ids.extend((spdx, name) for spdx in ids)
    # LGPL-3.0 is GPL-3.0 plus permissions, so LGPL projects ship both texts (COPYING + COPYING.LESSER).
    if any(family(s) == "lgpl-3.0" for s, _ in file_ids):
        file_ids = [(s, n) for s, n in file_ids if family(s) != "gpl-3.0"]
    by_file: dict[str, list[str]] = {}
    for spdx, name in file_ids:
        by_file.setdefault(name, []).append(spdx)
    found.extend(LicenseEvidence(_and(ids), name) for name, ids in by_file.items())
    if "pyproject.toml" in texts:
        found.extend(_metadata_evidence("pyproject.toml", texts["pyproject.toml"]))
    if "setup.cfg" in texts:
        found.extend(_metadata_evidence("setup.cfg", texts["setup.cfg"]))
    if "setup.py" in texts:
        found.extend(_metadata_evidence("setup.py", texts["setup.py"]))
    return found


# A mined history asks about the same few texts hundreds of times (one licence file, a pyproject.toml
# that changes now and then): what each says is remembered by its text.
@functools.lru_cache(maxsize=1024)
def _recognised(text: str) -> tuple[str, ...]:
    return tuple(recognise_text(text))


@functools.lru_cache(maxsize=1024)
def _metadata_evidence(name: str, text: str) -> tuple[LicenseEvidence, ...]:
    read = {
        "pyproject.toml": _pyproject_evidence,
        "setup.cfg": _setup_cfg_evidence,
        "setup.py": _setup_py_evidence,
    }
    return tuple(read[name](text))


def _pyproject_evidence(text: str) -> list[LicenseEvidence]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return []
    project = data.get("project") if isinstance(data.get("project"), dict) else {}
    found: list[LicenseEvidence] = []
    declared = project.get("license")
    if isinstance(declared, dict):
        declared = declared.get("text")  # {file = "LICENSE"} points at a file read above
    if isinstance(declared, str) and declared.strip():
        found.append(LicenseEvidence(name_to_spdx(declared), "pyproject.toml [project] license"))
    found.extend(_classifier_evidence(project.get("classifiers"), "pyproject.toml classifiers"))
    poetry = data.get("tool", {}).get("poetry", {}) if isinstance(data.get("tool"), dict) else {}
    if isinstance(poetry, dict) and isinstance(poetry.get("license"), str):
        found.append(LicenseEvidence(name_to_spdx(poetry["license"]), "pyproject.toml [tool.poetry] license"))
    return found


def _setup_cfg_evidence(text: str) -> list[LicenseEvidence]:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return []
    if not parser.has_section("metadata"):
        return []
    found: list[LicenseEvidence] = []
    declared = parser.get("metadata", "license", fallback="").strip()
    if declared and not declared.startswith("file:"):
        found.append(LicenseEvidence(name_to_spdx(declared), "setup.cfg license"))
    classifiers = parser.get("metadata", "classifiers", fallback="").splitlines()
    found.extend(_classifier_evidence(classifiers, "setup.cfg classifiers"))
    return found


_SETUP_PY_LICENSE = re.compile(r"""\blicen[cs]e\s*=\s*(?:[rbuRBU]?)(["'])(.+?)\1""")
_CLASSIFIER_STRING = re.compile(r"""["'](License :: [^"']+)["']""")


def _setup_py_evidence(text: str) -> list[LicenseEvidence]:
    found: list[LicenseEvidence] = []
    declared = _SETUP_PY_LICENSE.search(text)
    if declared:
        found.append(LicenseEvidence(name_to_spdx(declared.group(2)), "setup.py license="))
    found.extend(_classifier_evidence(_CLASSIFIER_STRING.findall(text), "setup.py classifiers"))
    return found


def _classifier_evidence(classifiers: object, source: str) -> list[LicenseEvidence]:
    if not isinstance(classifiers, list):
        return []
    ids = [name_to_spdx(c) for c in classifiers if isinstance(c, str) and c.strip().startswith("License ::")]
    ids = [spdx for spdx in dict.fromkeys(ids) if spdx != UNRECOGNIZED or len(ids) == 1]
    return [LicenseEvidence(_and(ids), source)] if ids else []


# -- combining sources ----------------------------------------------------------------------------


def combine(evidence: list[LicenseEvidence]) -> LicenseInfo:
    """One licence from all sources: the most specific when they agree, their AND when they do not."""
    if not evidence:
        return unknown_license(
            "no LICENSE/COPYING file and no licence in pyproject.toml, setup.cfg or setup.py"
        )
    known = [e for e in evidence if UNRECOGNIZED not in e.spdx_id]
    if not known:
        sources = ", ".join(e.source for e in evidence)
        return LicenseInfo(
            UNRECOGNIZED,
            sources,
            evidence=tuple(evidence),
            reason=f"licence text not recognised in {sources}",
        )
    sets = [_families(e.spdx_id) for e in evidence]
    if all(_agree(sets[0], other) for other in sets[1:]):
        best = max(known, key=_specificity)
        sources = " + ".join(e.source for e in evidence)
        return LicenseInfo(best.spdx_id, sources, evidence=tuple(evidence))
    parts = list(dict.fromkeys(e.spdx_id for e in evidence))
    said = "; ".join(f"{e.source} says {e.spdx_id}" for e in evidence)
    return LicenseInfo(
        " AND ".join(f"({p})" if " " in p else p for p in parts),
        " + ".join(e.source for e in evidence),
        conflict=True,
        evidence=tuple(evidence),
        reason=f"licence sources disagree: {said}",
    )


def _and(ids: list[str]) -> str:
    unique = list(dict.fromkeys(ids))
    return " AND ".join(f"({i})" if " " in i else i for i in unique)


def _families(expression: str) -> set[str]:
    tree = parse_expression(expression)
    return {family(spdx) for spdx in expression_ids(tree)} if tree is not None else {expression.lower()}


def _agree(left: set[str], right: set[str]) -> bool:
    """Two sources agree when each licence of one matches one of the other (a vague family matches its members)."""
    return all(any(_match(a, b) for b in right) for a in left) and all(
        any(_match(b, a) for a in left) for b in right
    )


def _match(a: str, b: str) -> bool:
    vague = {family(k): {family(m) for m in v} for k, v in VAGUE_FAMILIES.items()}
    return a == b or b in vague.get(a, set()) or a in vague.get(b, set())


def _specificity(evidence: LicenseEvidence) -> tuple[int, int]:
    """Concrete beats vague; '-only'/'-or-later' and OR (which only metadata can state) beat a bare id."""
    vague = any(f in {family(k) for k in VAGUE_FAMILIES} for f in _families(evidence.spdx_id))
    detail = ("-only" in evidence.spdx_id) + ("-or-later" in evidence.spdx_id) + (" OR " in evidence.spdx_id)
    return (0 if vague else 1, detail)
