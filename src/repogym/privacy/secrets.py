"""Find secrets in task text and patches with detect-secrets, and redact them without copying them out.

Guarantees:
- Strings are scanned in memory with detect-secrets' default plugins and
  default filters (minus its "file exists on disk" filter, which would skip
  every in-memory string); nothing is written to disk, nothing is verified
  over the network.
- Every line of a patch is scanned, not only its added lines (detect-secrets'
  own `scan_diff` looks at added lines only): a secret on a context or removed
  line would be copied into the task just the same.
- The same findings as handing every line to detect-secrets, faster: lines
  that no enabled plugin could match are turned away first by
  `repogym.privacy.secretgate` (sound by construction, checked by tests and at
  run time), and the rest go to detect-secrets with the line before them, the
  only context its default filters read (`prefilter=False` scans every line).
- A hit is widened from the plugin's match to the whole token around it,
  because some plugins capture only a prefix (the GitHub token plugin reports
  'ghp' for 'ghp_...'). A private key is redacted from its BEGIN line to its
  END line.
- Values stay inside `SecretHit.value`, which no repr, report or log shows.

Not guaranteed:
- Secrets detect-secrets does not recognise: unquoted high-entropy words in
  prose (its entropy plugins need quotes, to keep noise down), secrets split
  across lines, encoded or obfuscated secrets.
- detect-secrets keeps its settings in a process-wide singleton, so scanning
  is serialised by a lock: run scrubbers in processes, not threads, for speed
  (`repogym.privacy.scanpool` does).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from types import TracebackType

from repogym.errors import RepogymError
from repogym.privacy.patchlines import LineKind, PatchLine, classify_patch_lines
from repogym.privacy.secretgate import SecretGate, keep_candidates, plan_scan, pragma_line

#: The marker a redacted value is replaced with; the detector type goes between the colon and '>'.
MARKER = "<REDACTED:{}>"
PRIVATE_KEY = "Private Key"
# Characters that continue a token around a plugin's match; quotes, spaces, ':' and '@' end it,
# so 'https://user:pass@host' loses only its password and a quoted key keeps its quotes.
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/=.~%")
_KEY_END = re.compile(r"END[A-Z0-9 ]*(PRIVATE KEY|KEY BLOCK)")
_KEY_BODY_RUN = re.compile(r"[A-Za-z0-9+/=]{4,}")
_MAX_KEY_LINES = 400
# Values shorter than this are not searched for elsewhere: a keyword plugin's 'password = "abc"'
# must not turn every 'abc' of the dataset into a marker.
MIN_SWEEP_LENGTH = 8
_SCAN_LOCK = threading.RLock()  # re-entrant: a scan inside another scan's context must not deadlock
# Detectors that fire on anything random-looking; when one of them and a named detector (GitHub
# Token) report the same value, the marker names the specific one.
GENERIC_TYPES = frozenset({"Base64 High Entropy String", "Hex High Entropy String", "Secret Keyword"})


def prefer_type(current: str | None, candidate: str) -> str:
    """The more telling of two detector types for one value.

    >>> prefer_type("Base64 High Entropy String", "GitHub Token"), prefer_type("GitHub Token", "Secret Keyword")
    ('GitHub Token', 'GitHub Token')
    """
    if current is None or (current in GENERIC_TYPES and candidate not in GENERIC_TYPES):
        return candidate
    return current


@dataclass(frozen=True)
class SecretHit:
    """One secret token on one line of one field; `value` is never shown by repr, str or reports."""

    field: str
    """Which part of the task: 'patch', 'problem_statement', 'metadata.author', ..."""
    line: int
    """1-based line number within the field's text."""
    type: str
    """The detect-secrets detector's name, e.g. 'AWS Access Key'."""
    kind: LineKind
    """The kind of line the secret is on, which says whether it can be redacted."""
    value: str = field(repr=False, compare=False)
    """The exact token to replace on that line."""

    @property
    def sweepable(self) -> bool:
        """Whether the value is worth searching for in every other field and task."""
        return len(self.value) >= MIN_SWEEP_LENGTH and not self.value.startswith("-----BEGIN")

    def __str__(self) -> str:
        return f"{self.field}:{self.line}: {self.type}"


class SecretScanner:
    """detect-secrets' default plugins, configured once for in-memory scanning.

    Use as a context manager; `ignored_types` switches detectors off by the
    type name they report (e.g. 'Public IP (ipv4)'); `prefilter=False` hands
    every line to detect-secrets (the reference the pre-filter is checked against).
    """

    def __init__(self, ignored_types: Iterable[str] = (), prefilter: bool = True) -> None:
        self.ignored_types = frozenset(ignored_types)
        self.prefilter = prefilter
        self.gate: SecretGate | None = None
        """The pre-filter for the enabled plugins, while the scanner is open (None: every line is scanned)."""
        self._settings_context = None
        self._logger_level = logging.NOTSET
        self._findings: dict[tuple[str, str, str], list[Finding]] = {}
        """What each (file name, line, pragma line) gave, while the scanner is open."""

    def __enter__(self) -> SecretScanner:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.settings import default_settings

        _SCAN_LOCK.acquire()
        try:
            self._settings_context = default_settings()
            settings = self._settings_context.__enter__()
            # Its "is this a file on disk" filter would drop every in-memory string.
            settings.disable_filters("detect_secrets.filters.common.is_invalid_file")
            by_type = get_mapping_from_secret_type_to_class()
            settings.disable_plugins(
                *(by_type[name].__name__ for name in self.ignored_types if name in by_type)
            )
            # Its info-level messages quote skipped candidate secrets; keep them out of any log.
            logger = logging.getLogger("detect-secrets")
            self._logger_level = logger.level
            logger.setLevel(logging.WARNING)
            self.gate = _gate_for_settings() if self.prefilter else None
        except BaseException:
            _SCAN_LOCK.release()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            logging.getLogger("detect-secrets").setLevel(self._logger_level)
            if self._settings_context is not None:
                self._settings_context.__exit__(None, None, None)
        finally:
            self._settings_context = None
            self.gate = None
            self._findings = {}
            _SCAN_LOCK.release()

    # -- scanning -------------------------------------------------------------------------------

    def scan_text(self, text: str, field_name: str, kind: LineKind = LineKind.TEXT) -> list[SecretHit]:
        """Secrets in free text (or, with kind FIXED, in a value that must not be rewritten)."""
        lines = text.split("\n")
        layout = [PatchLine(kind, "", 0)] * len(lines)
        return self._scan(lines, layout, field_name, default_name=f"{_safe_name(field_name)}.txt")

    def scan_patch(
        self, patch: str, field_name: str, layout: list[PatchLine] | None = None
    ) -> list[SecretHit]:
        """Secrets on every line of a unified diff: added, context, removed and header lines.

        `layout` is `classify_patch_lines` of the patch, when the caller has it already.
        """
        lines = patch.split("\n")
        layout = layout if layout is not None else classify_patch_lines(lines)
        return self._scan(lines, layout, field_name, default_name="patch.txt")

    def _scan(
        self, lines: list[str], layout: list[PatchLine], field_name: str, default_name: str
    ) -> list[SecretHit]:
        if self._settings_context is None:
            raise RepogymError(
                "SecretScanner must be used as a context manager: with SecretScanner() as scanner: ..."
            )
        hits: list[SecretHit] = []
        candidates = self.gate.candidate_lines("\n".join(lines)) if self.gate is not None else None
        if candidates is not None and not candidates:
            return hits
        for filename, indexes in _group_by_file(layout, default_name):
            if candidates is not None:
                # A run of lines the gate turns away is replaced by one empty line: cheaper, and an empty
                # line gives the next line the same (pragma-free) context.
                indexes = keep_candidates(indexes, candidates)
            contents = [lines[i][layout[i].offset :] if i >= 0 else "" for i in indexes]
            for position, secret_type, raw_value in _detect(contents, filename, self.gate, self._findings):
                index = indexes[position]
                content = contents[position]
                for token in _widen(content, raw_value):
                    hits.append(SecretHit(field_name, index + 1, secret_type, layout[index].kind, token))
                if secret_type == PRIVATE_KEY:
                    hits.extend(_private_key_body(lines, layout, index, field_name))
        return hits


def find_known(
    text: str, field_name: str, known: dict[str, str], layout: Sequence[PatchLine] | None = None
) -> list[SecretHit]:
    """Hits for every occurrence of an already found secret value (value -> type) in `text`.

    This is how a secret detected in one place is also removed where no
    plugin would see it (an AWS key quoted in a test and pasted bare into an issue).

    >>> [str(hit) for hit in find_known("a\\nkey=s3cr3tvalue!", "hints_text", {"s3cr3tvalue": "Secret Keyword"})]
    ['hints_text:2: Secret Keyword']
    """
    if not known:
        return []
    pattern = re.compile("|".join(re.escape(value) for value in sorted(known, key=len, reverse=True)))
    hits: list[SecretHit] = []
    for index, line in enumerate(text.split("\n")):
        kind = layout[index].kind if layout is not None else LineKind.TEXT
        for match in pattern.finditer(line):
            hits.append(SecretHit(field_name, index + 1, known[match.group(0)], kind, match.group(0)))
    return hits


def redact(text: str, hits: Iterable[SecretHit], layout: Sequence[PatchLine] | None = None) -> str:
    """`text` with each hit's value replaced by a marker naming its type; line count unchanged.

    Only lines whose kind is rewritable are touched; the caller decides what
    to do with hits on other lines (drop the task).

    >>> hit = SecretHit("patch", 3, "AWS Access Key", LineKind.ADDED, "AKIAXXXXXXXXXXXXXXXX")
    >>> redact("--- a/k.py\\n+++ b/k.py\\n+KEY = 'AKIAXXXXXXXXXXXXXXXX'", [hit])
    "--- a/k.py\\n+++ b/k.py\\n+KEY = '<REDACTED:AWS Access Key>'"
    """
    lines = text.split("\n")
    by_line: dict[int, dict[str, str]] = {}
    for hit in hits:
        if hit.kind.rewritable and hit.value:
            types = by_line.setdefault(hit.line - 1, {})
            types[hit.value] = prefer_type(types.get(hit.value), hit.type)
    for index, replacements in by_line.items():
        offset = layout[index].offset if layout is not None else 0
        pattern = re.compile("|".join(re.escape(v) for v in sorted(replacements, key=len, reverse=True)))
        content = lines[index][offset:]
        content = pattern.sub(lambda match, types=replacements: MARKER.format(types[match.group(0)]), content)
        lines[index] = lines[index][:offset] + content
    return "\n".join(lines)


# -- helpers ----------------------------------------------------------------------------------------


def _gate_for_settings() -> SecretGate | None:
    """The pre-filter for the plugins now enabled; None when a filter reads more context than it keeps.

    Of the context detect-secrets hands its filters, the default ones read only
    the previous line (the allowlist's "nextline" pragma), which `_detect` keeps.
    """
    from detect_secrets.settings import get_filters, get_plugins

    known = {"is_line_allowlisted"}
    if any("context" in f.injectable_variables and f.__name__ not in known for f in get_filters()):
        return None
    gate = SecretGate(get_plugins())
    return None if gate.open else gate


Finding = tuple[str, str]
"""(detector type, raw value) of one thing detect-secrets reported on a line."""


def _detect(
    contents: list[str],
    filename: str,
    gate: SecretGate | None = None,
    remembered: dict[tuple[str, str, str], list[Finding]] | None = None,
) -> list[tuple[int, str, str]]:
    """(position, type, raw value) for each secret detect-secrets finds in `contents`.

    The lines are handed to detect-secrets' public `scan_diff` as the added
    lines of a synthetic one-file diff: that scans strings in memory with the
    file name's type rules, and its line numbers map straight back. With a
    gate, only the lines it lets through are scanned (see `secretgate.plan_scan`), and what a
    line gave is remembered in `remembered` for the next time the same line
    comes by in a file of the same name.
    """
    if gate is None:
        return [
            (index, kind, value)
            for index, found in enumerate(_scan_lines(contents, filename))
            for kind, value in found
        ]
    remembered = {} if remembered is None else remembered
    selected = [i for i, content in enumerate(contents) if gate.may_hold_secret(content)]
    keys = {i: (filename, contents[i], pragma_line(contents, i)) for i in selected}
    fresh = [i for i in selected if keys[i] not in remembered]
    if fresh:
        plan = plan_scan(contents, fresh)
        results = _scan_lines([text for _, text in plan], filename)
        for (index, _), found in zip(plan, results, strict=True):
            if index is not None:
                remembered.setdefault(keys[index], found)
    return [(i, kind, value) for i in selected for kind, value in remembered[keys[i]]]


def _scan_lines(lines: list[str], filename: str) -> list[list[Finding]]:
    """What detect-secrets reports on each line, scanned as the added lines of a synthetic diff."""
    from detect_secrets.core import scan

    found: list[list[Finding]] = [[] for _ in lines]
    if not any(line.strip() for line in lines):
        return found
    header = f"--- /dev/null\n+++ b/{filename}\n@@ -0,0 +1,{len(lines)} @@\n"
    body = "".join(f"+{line}\n" for line in lines)
    for secret in scan.scan_diff(header + body):
        found[secret.line_number - 1].append((secret.type, secret.secret_value or ""))
    return found


def _widen(content: str, raw_value: str) -> list[str]:
    """The whole tokens of `content` that contain `raw_value` (the line itself if it is not there).

    >>> _widen('token = "ghp_abcDEF123"  # ghp', "ghp")
    ['ghp_abcDEF123', 'ghp']
    >>> _widen("-----BEGIN RSA PRIVATE KEY-----", "BEGIN RSA PRIVATE KEY")
    ['-----BEGIN RSA PRIVATE KEY-----']
    """
    tokens: list[str] = []
    start = content.find(raw_value) if raw_value else -1
    if start < 0:
        whole = content.strip()
        return [whole] if whole else []
    while start >= 0:
        begin, end = start, start + len(raw_value)
        while begin > 0 and content[begin - 1] in _TOKEN_CHARS:
            begin -= 1
        while end < len(content) and content[end] in _TOKEN_CHARS:
            end += 1
        token = content[begin:end]
        if token.endswith(".") and len(token) > len(raw_value):  # a sentence's full stop
            token = token[:-1]
        if token not in tokens:
            tokens.append(token)
        start = content.find(raw_value, end)
    return tokens


def _private_key_body(
    lines: list[str], layout: list[PatchLine], begin: int, field_name: str
) -> list[SecretHit]:
    """Hits for the lines after a private key's BEGIN line, up to and including its END line.

    Without an END line (a truncated key), the body is the following lines
    that carry a long base64 run.
    """
    hits: list[SecretHit] = []
    last = min(len(lines), begin + 1 + _MAX_KEY_LINES)
    end_index = next(
        (i for i in range(begin + 1, last) if _KEY_END.search(lines[i][layout[i].offset :])), None
    )
    if end_index is None:
        end_index = begin
        while end_index + 1 < last and re.search(r"[A-Za-z0-9+/=]{16,}", lines[end_index + 1]):
            end_index += 1
    for index in range(begin + 1, end_index + 1):
        content = lines[index][layout[index].offset :]
        # The END line goes whole: it may share a line with the last of the body.
        runs = [content.strip()] if _KEY_END.search(content) else _KEY_BODY_RUN.findall(content)
        for run in dict.fromkeys(runs):
            if run:
                hits.append(SecretHit(field_name, index + 1, PRIVATE_KEY, layout[index].kind, run))
    return hits


def _group_by_file(layout: list[PatchLine], default_name: str) -> list[tuple[str, list[int]]]:
    """Line indexes grouped by the file they belong to, each named for detect-secrets' type rules."""
    groups: dict[str, list[int]] = {}
    names: dict[str, str] = {}
    for index, line in enumerate(layout):
        if line.kind is LineKind.HEADER:
            name = "patch-header.txt"
        else:
            name = names.get(line.path, "")
            if not name:
                name = names[line.path] = (
                    _safe_name(line.path.rsplit("/", 1)[-1]) if line.path else default_name
                )
        groups.setdefault(name, []).append(index)
    return list(groups.items())


def _safe_name(name: str) -> str:
    """A file name that cannot break the synthetic diff header.

    >>> _safe_name("we ird\\tname.py")
    'we_ird_name.py'
    """
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) or "text.txt"
