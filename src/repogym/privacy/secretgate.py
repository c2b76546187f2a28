"""Which lines could hold a secret: a cheap, sound pre-filter in front of detect-secrets.

detect-secrets costs about 0.2 ms a line (every plugin and filter is called
through its dependency injection), and almost no line of a real patch holds
anything a plugin matches. `SecretGate.may_hold_secret(line)` asks "could any
enabled plugin report something on this line?" with a few regular expressions
and substring tests, each a necessary condition of one plugin's own patterns;
a line it turns away is one on which detect-secrets reports nothing.
`candidate_lines(text)` finds the lines worth asking about with one search of
a whole text per expression; each expression starts with a literal, which
`re` finds about as fast as `str.find` (an alternation of them would not be).
Written by hand (no library does this) because it must mirror detect-secrets.

Guarantees:
- Sound for the plugins of the table below: each gate is implied by the
  plugin's patterns as detect-secrets 1.5 writes them (tests check it on a
  corpus of planted secrets of every plugin type and on random lines, against
  the plugins themselves).
- Checked at run time: every known plugin's patterns are fingerprinted; a
  plugin whose patterns differ (another detect-secrets version) or that the
  table does not know falls back to its own patterns (regex plugins) or turns
  the gate off (any other plugin): slower, never blind.
- Lines that are not ASCII always pass: `str.lower()` and `re.IGNORECASE` fold
  some non-ASCII letters differently (the Kelvin sign, the long s).
- High-entropy strings pass when a quoted run is long enough to exceed the
  plugin's entropy limit (a string of n characters has at most log2(n) bits).

Not guaranteed: speed when a plugin falls back, or for lines that are mostly tokens.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import re
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

# Lower-case words of the keyword plugin's DENYLIST: every entry contains one of them.
_KEYWORD_WORDS = ("key", "pass", "pwd", "secret", "contrase")
# The words the credential-assignment plugins (IBM Cloud IAM, SoftLayer, Cloudant) require.
_CREDENTIAL_WORDS = ("key", "pw", "pass", "token")
_RUN_44 = re.compile(r"[A-Za-z0-9_\-]{44}")
_ALPHA_24 = re.compile(r"[A-Za-z]{24}")
_HEX_48 = re.compile(r"[0-9a-fA-F]{48}")
_ALNUM_64 = re.compile(r"[A-Za-z0-9]{64}")
# '://user:password@': BasicAuth and Cloudant URLs both need a ':' then an '@' after the scheme.
_URL_CREDENTIALS = re.compile(r"://[^\s@]*:[^\s@]*@")
_NEWLINE = re.compile("\n")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_PRAGMA = re.compile("pragma")
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def _any_word(low: str, words: Iterable[str]) -> bool:
    return any(word in low for word in words)


@dataclass(frozen=True)
class PluginGate:
    """A necessary condition for one plugin to report anything on a line."""

    fingerprint: str
    """`fingerprint(plugin)` of the patterns this gate was derived from."""
    cased: tuple[str, ...] = ()
    """Regular expressions searched in the line as it is; a match lets the line through. Each starts with a
    literal (lookbehinds move a leading class behind one), which keeps whole-text searches fast."""
    words: tuple[str, ...] = ()
    """Lower-case substrings; a line with none of them (lower-cased) is not this plugin's."""
    confirm: Callable[[str, str], bool] | None = None
    """For a line with one of `words`: (line, lower-cased line) -> whether it may match. None: it may."""
    own_patterns: bool = False
    """Search the plugin's own `denylist` patterns instead."""
    quoted_run: bool = False
    """A high-entropy plugin: a quoted run of its charset, long enough for its entropy limit."""


def _keyword_confirm() -> Callable[[str, str], bool]:
    from detect_secrets.plugins.keyword import DENYLIST

    # The DENYLIST itself, lower-cased and searched case-sensitively in the lower-cased ASCII line.
    denylist = re.compile("|".join(DENYLIST))
    return lambda line, low: denylist.search(low) is not None


def _cloudant_confirm(line: str, low: str) -> bool:
    assignment = "cl" in low and _any_word(low, _CREDENTIAL_WORDS)
    return bool(
        (assignment and (_ALPHA_24.search(line) or _RUN_44.search(line))) or _URL_CREDENTIALS.search(line)
    )


#: Gates by plugin class name, each read off the plugin's patterns in detect-secrets 1.5.0 (the fingerprint).
GATES: dict[str, Callable[[], PluginGate]] = {
    "AWSKeyDetector": lambda: PluginGate(
        "d2a00743fd91dded",
        tuple(f"{prefix}[0-9A-Z]{{16}}" for prefix in ("A3T[A-Z0-9]", "ABIA", "ACCA", "AKIA", "ASIA")),
        words=("aws",),  # its second pattern: 'aws' ... key|pwd|pw|password|pass|token ... 40 characters
    ),
    "ArtifactoryDetector": lambda: PluginGate("806f3a6ebb22c6b6", ("AKC", r"AP[\dABCDEF]")),
    "AzureStorageKeyDetector": lambda: PluginGate("5b680be4344ffa27", ("AccountKey=",)),
    "BasicAuthDetector": lambda: PluginGate(
        "63c05fef6a212941", words=("://",), confirm=lambda line, low: bool(_URL_CREDENTIALS.search(line))
    ),
    # (cloudant|cl|clou)(api)?(key|pwd|pw|password|pass|token) = 64 hex or 24 letters; or a URL with them.
    "CloudantDetector": lambda: PluginGate(
        "618aca1069281938", words=(*_CREDENTIAL_WORDS, "://"), confirm=_cloudant_confirm
    ),
    # [MNO] and 23-25 token characters, '.', 6 of them, '.': at least 24 of them before a '.'.
    "DiscordBotTokenDetector": lambda: PluginGate(
        "d09cd72cbe7ecca7", (r"\.(?<=[a-zA-Z\d_-]{24}\.)[a-zA-Z\d_-]{6}\.",)
    ),
    "GitHubTokenDetector": lambda: PluginGate("6d327f3a764b07f1", (r"gh[pousr]_",)),
    "GitLabTokenDetector": lambda: PluginGate(
        "cfee86008c4e20d5", (r"gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-", "GR1348941")
    ),
    # An optional ibm/cloud/iam prefix, (key|pwd|password|pass|token), an assignment, 44 token characters.
    "IbmCloudIamDetector": lambda: PluginGate(
        "da50508f91d9a20f",
        words=("key", "pwd", "pass", "token"),
        confirm=lambda line, low: bool(_RUN_44.search(line)),
    ),
    # secret[-_]?(access)?[-_]?key, an assignment, 48 hex digits.
    "IbmCosHmacDetector": lambda: PluginGate(
        "9486d52673ca7c1a", words=("secret",), confirm=lambda line, low: bool(_HEX_48.search(line))
    ),
    "JwtTokenDetector": lambda: PluginGate("cab6db54a5b1e2fb", ("eyJ",)),
    "KeywordDetector": lambda: PluginGate(
        "5295438b820f73df", words=_KEYWORD_WORDS, confirm=_keyword_confirm()
    ),
    "MailchimpDetector": lambda: PluginGate("5ac8790839933bca", (r"-us[0-9]",)),
    "NpmDetector": lambda: PluginGate("fbe60026c2f69479", (":_authToken=",)),
    "OpenAIDetector": lambda: PluginGate("adfc3854ab59382d", ("T3BlbkFJ",)),
    "PrivateKeyDetector": lambda: PluginGate("ff819a87e6bdb152", ("PRIVATE KEY", "PuTTY-User-Key-File-2")),
    "PypiTokenDetector": lambda: PluginGate("af18aad5ed128ecf", ("pypi-AgE",)),
    "SendGridDetector": lambda: PluginGate("0e4cd1d10e3d6224", (r"SG\.",)),
    "SlackDetector": lambda: PluginGate("771d1c0c40d4a76d", words=("xox", "hooks.slack.com")),
    # (softlayer|sl)(api)?(key|pwd|password|pass|token) = 64 letters or digits; or its API URL.
    "SoftlayerDetector": lambda: PluginGate(
        "1a9d1bf3820df32f",
        words=("key", "pwd", "pass", "token", "softlayer"),
        confirm=lambda line, low: "softlayer" in low or ("sl" in low and bool(_ALNUM_64.search(line))),
    ),
    "SquareOAuthDetector": lambda: PluginGate("591c58372be84e4b", ("sq0csp-",)),
    "StripeDetector": lambda: PluginGate("09e015b021540af7", ("k_live_(?<=[rs]k_live_)",)),
    "TelegramBotTokenDetector": lambda: PluginGate("0139654494555b3f", (r":(?<=\d{8}:)",)),
    "TwilioKeyDetector": lambda: PluginGate("e785fb1f93e646c8", ("AC[a-z0-9]{32}", "SK[a-z0-9]{32}")),
    # Its pattern needs VERBOSE; searched as it is (off by default: see ScrubConfig.ignored_secret_types).
    "IPPublicDetector": lambda: PluginGate("71e75c96244f68f6", own_patterns=True),
    # Quoted runs, built from the plugin's charset and entropy limit (see _quoted_runs).
    "Base64HighEntropyString": lambda: PluginGate("27dc75f25806ea6b", quoted_run=True),
    "HexHighEntropyString": lambda: PluginGate("9a2e50c697c84456", quoted_run=True),
}


def fingerprint(plugin: Any) -> str:
    """A short hash of the patterns a plugin matches with (what its gate was derived from)."""
    parts: list[str] = [type(plugin).__name__]
    denylist = getattr(plugin, "denylist", None)
    if denylist is not None:
        parts += [f"{pattern.pattern}/{pattern.flags}" for pattern in denylist]
    if type(plugin).__name__ == "KeywordDetector":
        from detect_secrets.plugins import keyword

        parts += list(keyword.DENYLIST)
        parts += [p.pattern for table in keyword.REGEX_BY_FILETYPE.values() for p in table]
        parts += [p.pattern for p in keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP]
    regex = getattr(plugin, "regex", None)
    if isinstance(regex, re.Pattern):
        parts.append(regex.pattern)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


class SecretGate:
    """`may_hold_secret(line)` for a set of detect-secrets plugin instances (see the module docstring)."""

    def __init__(self, plugins: Iterable[Any]) -> None:
        cased: list[str] = []
        quoted: list[str] = []
        words: list[str] = []
        confirms: list[tuple[tuple[str, ...], Callable[[str, str], bool] | None]] = []
        self.own_patterns: list[re.Pattern[str]] = []
        """Patterns of plugins without a matching gate, searched as they are."""
        self.open = False
        """True when some plugin cannot be gated: every line passes."""
        self.fallbacks: list[str] = []
        """Names of the plugins that fell back to their own patterns (or opened the gate)."""
        self._entropy_plugins: list[Any] = []
        for plugin in plugins:
            name = type(plugin).__name__
            gate = GATES[name]() if name in GATES else None
            if gate is None or gate.fingerprint != fingerprint(plugin):
                self.fallbacks.append(name)
                gate = PluginGate("", own_patterns=True)
            if gate.quoted_run:
                quoted.extend(_quoted_runs(plugin.charset, plugin.entropy_limit))
                self._entropy_plugins.append(plugin)
            elif gate.own_patterns:
                denylist = getattr(plugin, "denylist", None)
                if denylist is None:  # not a regex plugin: nothing tells which lines it could match
                    self.open = True
                else:
                    self.own_patterns.extend(denylist)
            cased.extend(pattern for pattern in gate.cased if pattern not in cased)
            if gate.words:
                words.extend(gate.words)
                confirms.append((gate.words, gate.confirm))
        self._cased_each = tuple(re.compile(p) for p in (*cased, *quoted))
        self._cased = re.compile("|".join(f"(?:{p})" for p in cased)) if cased else None
        self._quoted = re.compile("|".join(quoted)) if quoted else None
        unique_words = sorted(set(words), key=len, reverse=True)
        self._words_each = tuple(re.compile(re.escape(w)) for w in unique_words)
        self._words = re.compile("|".join(re.escape(w) for w in unique_words)) if unique_words else None
        self._confirms = tuple(confirms)
        self._seen: dict[str, bool] = {}

    def candidate_lines(self, text: str) -> set[int] | None:
        """Indexes of the lines of `text` (split on "\\n") that `may_hold_secret` could let through, and of those
        that carry the word "pragma"; None = all lines.

        One search of the whole text per expression, where asking line by line
        costs a call per line per expression: no expression here can match a
        line break, so a match always falls within one line, and a line without
        any match (and only ASCII) is one `may_hold_secret` turns away.
        """
        if self.open or self.own_patterns:
            return None
        hits: list[int] = []
        ascii_text = text.isascii()
        searches = [(_PRAGMA, text), *((p, text) for p in self._cased_each)]
        if not ascii_text:
            searches.append((_NON_ASCII, text))
        if self._words_each:
            # Only ASCII letters are lowered (non-ASCII lines pass anyway), which keeps every offset in place.
            low = text.lower() if ascii_text else text.translate(_ASCII_LOWER)
            searches += [(p, low) for p in self._words_each]
        for pattern, haystack in searches:
            first = pattern.search(haystack)  # most expressions find nothing: one call, no iterator
            if first is not None:
                hits.extend(m.start() for m in pattern.finditer(haystack, first.start()))
        if not hits:
            return set()
        starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]
        return {bisect.bisect_right(starts, position) - 1 for position in hits}

    def may_hold_secret(self, line: str) -> bool:
        """False only when no plugin could report anything on `line` (answers are remembered per line)."""
        known = self._seen.get(line)
        if known is None:
            known = self._seen[line] = self._check(line)
        return known

    def _check(self, line: str) -> bool:
        if self.open or not line.isascii():
            return True
        if self._cased is not None and self._cased.search(line):
            return True
        if self._quoted is not None and self._quoted.search(line) and self._high_entropy(line.rstrip()):
            return True
        if any(pattern.search(line) for pattern in self.own_patterns):
            return True
        if self._words is None:
            return False
        low = line.lower()
        if not self._words.search(low):
            return False
        return any(
            _any_word(low, words) and (confirm is None or confirm(line, low))
            for words, confirm in self._confirms
        )

    def _high_entropy(self, line: str) -> bool:
        """The high-entropy plugins' own test: a quoted string they match whose entropy exceeds their limit."""
        return any(
            plugin.calculate_shannon_entropy(value) > plugin.entropy_limit
            for plugin in self._entropy_plugins
            for value in plugin.analyze_string(line)
        )


def _quoted_runs(charset: str, entropy_limit: float) -> tuple[str, str]:
    r"""Quoted runs of `charset` long enough that their Shannon entropy could exceed the limit.

    n characters carry at most log2(n) bits, so entropy > limit needs n > 2**limit;
    floor(2**limit) keeps a margin for floating-point rounding at the boundary.
    The plugin's own pattern is `([\'"])([charset]+)(\1)`: one expression per quote.

    >>> _quoted_runs("0123456789abcdefABCDEF", 3.0)
    ('"[0123456789abcdefABCDEF]{8,}"', "'[0123456789abcdefABCDEF]{8,}'")
    """
    shortest = max(1, math.floor(2**entropy_limit))
    run = f"[{re.escape(charset)}]{{{shortest},}}"
    return f'"{run}"', f"'{run}'"


# -- how the gated lines are handed to detect-secrets (used by repogym.privacy.secrets) ---------------


def pragma_line(contents: list[str], index: int) -> str:
    """The previous line when it could carry detect-secrets' "allowlist nextline" pragma, else ''.

    Of the context detect-secrets hands its filters, the default ones read only
    the previous line, for that pragma; without the word "pragma" it says nothing.
    """
    before = contents[index - 1] if index > 0 else ""
    return before if "pragma" in before else ""


def plan_scan(contents: list[str], indexes: list[int]) -> list[tuple[int | None, str]]:
    """The lines to scan in order, as (index, text); index None for a line put in only as context.

    Each scanned line must follow a line that gives it the same pragma context
    it has in `contents`: its real previous line when that carries the word,
    otherwise any line without it (an empty one when the line before in the
    plan has it).
    """
    plan: list[tuple[int | None, str]] = []
    for index in indexes:
        needed = pragma_line(contents, index)
        shown = plan[-1][1] if plan else ""
        follows_real = bool(plan) and plan[-1][0] == index - 1
        if needed and not follows_real:
            plan.append((None, needed))
        elif not needed and "pragma" in shown:
            plan.append((None, ""))
        plan.append((index, contents[index]))
    return plan


def keep_candidates(indexes: list[int], candidates: set[int]) -> list[int]:
    """`indexes` without the lines not in `candidates`, each run of those left as one -1 (an empty line).

    >>> keep_candidates([0, 1, 2, 3, 4, 7], {1, 4})
    [-1, 1, -1, 4, -1]
    """
    kept: list[int] = []
    for index in indexes:
        if index in candidates:
            kept.append(index)
        elif not kept or kept[-1] != -1:
            kept.append(-1)
    return kept
