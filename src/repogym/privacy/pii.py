"""Redact personal data (e-mail addresses, phone numbers, IPv4 addresses) from task text.

What counts, and what is kept on purpose:
- e-mail: any address, except ones that name no person: no-reply style local
  parts (noreply@, no-reply@, donotreply@, git@ as in git@github.com:org/repo)
  and reserved example domains (example.com/.org/.net, *.test, *.invalid,
  *.example). GitHub's 12345+login@users.noreply.github.com IS redacted: it
  names an account.
- phone: '+' followed by 8-15 digits in groups ("+44 20 7946 0958"), or a
  North American number with '-', '.' or parentheses ("(555) 123-4567",
  "555-123-4567"). Bare digit runs are left alone: they are ids and numbers
  far more often than phones.
- ipv4: dotted quads, except loopback (127/8), 0.0.0.0, the broadcast
  address, multicast and the documentation ranges (192.0.2/24,
  198.51.100/24, 203.0.113/24). Private ranges ARE redacted: a company's
  10.x addresses map its network.

Patches: only comments on added lines of Python files are scrubbed (comments
cannot change what tests check, and rewriting an added line keeps the patch
applying). String literals in code are left alone, because tests often
assert on them (an e-mail validator's fixtures); secrets in patches are the
secret scanner's job.
"""

from __future__ import annotations

import enum
import io
import ipaddress
import re
import tokenize
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from repogym.privacy.patchlines import LineKind, PatchLine, classify_patch_lines


class PiiKind(enum.StrEnum):
    """A kind of personal data the scrubber knows."""

    EMAIL = "email"
    PHONE = "phone"
    IPV4 = "ipv4"


@dataclass(frozen=True)
class PiiHit:
    """One redacted item: where it was and what kind; the text itself is not kept."""

    field: str
    line: int
    """1-based line number within the field's text."""
    kind: PiiKind


_EMAIL = re.compile(r"(?<![\w.%+-])[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,24}(?![\w-])")
_NON_PERSONAL_LOCAL_PARTS = frozenset({"noreply", "no-reply", "donotreply", "do-not-reply", "git"})
_RESERVED_DOMAINS = ("example.com", "example.org", "example.net")
_RESERVED_TLDS = ("test", "invalid", "example", "localhost")
_PHONE_INTERNATIONAL = re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(\d{1,4}\))?(?:[ .-]?\d{1,5}){2,6}(?!\w)")
_PHONE_NORTH_AMERICA = re.compile(
    r"(?<![\w.-])(?:\(\d{3}\) ?\d{3}[-. ]\d{4}|\d{3}([-.])\d{3}\1\d{4})(?![\w]|[.-]\d)"
)
_DIGIT = re.compile(r"\d")  # the patterns' own \d, which matches any Unicode digit
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
_DOCUMENTATION_NETS = tuple(
    ipaddress.ip_network(net) for net in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")
)


def is_personal_email(address: str) -> bool:
    """Whether an address may name a person (see the module docstring for what is kept).

    >>> is_personal_email("jane.doe@corp.com"), is_personal_email("noreply@github.com")
    (True, False)
    >>> is_personal_email("123+jane@users.noreply.github.com"), is_personal_email("ci@build.example.org")
    (True, False)
    """
    local, _, domain = address.lower().rpartition("@")
    if local in _NON_PERSONAL_LOCAL_PARTS:
        return False
    if any(domain == reserved or domain.endswith("." + reserved) for reserved in _RESERVED_DOMAINS):
        return False
    return domain.rsplit(".", 1)[-1] not in _RESERVED_TLDS


def is_personal_ipv4(text: str) -> bool:
    """Whether a dotted quad is a real address that says something about someone's network.

    >>> [is_personal_ipv4(ip) for ip in ("10.1.2.3", "8.8.8.8", "127.0.0.1", "192.0.2.7", "999.1.1.1")]
    [True, True, False, False, False]
    """
    try:
        address = ipaddress.IPv4Address(text)
    except ValueError:
        return False
    if address.is_loopback or address.is_unspecified or address.is_multicast:
        return False
    if text == "255.255.255.255":
        return False
    return not any(address in net for net in _DOCUMENTATION_NETS)


def _is_phone(text: str) -> bool:
    digits = sum(ch.isdigit() for ch in text)
    return 8 <= digits <= 15 if text.startswith("+") else digits == 10


_MATCHERS: dict[PiiKind, tuple[tuple[re.Pattern[str], ...], Callable[[str], bool]]] = {
    PiiKind.EMAIL: ((_EMAIL,), is_personal_email),
    PiiKind.PHONE: ((_PHONE_INTERNATIONAL, _PHONE_NORTH_AMERICA), _is_phone),
    PiiKind.IPV4: ((_IPV4,), is_personal_ipv4),
}


def _may_hold_pii(line: str, kinds: tuple[PiiKind, ...]) -> bool:
    """False only when none of `kinds` can match: an address needs '@', a phone number or IP a digit."""
    if PiiKind.EMAIL in kinds and "@" in line:
        return True
    return (PiiKind.PHONE in kinds or PiiKind.IPV4 in kinds) and _DIGIT.search(line) is not None


def redact_pii_line(line: str, kinds: Iterable[PiiKind]) -> tuple[str, list[PiiKind]]:
    """One line with its personal data replaced by markers, and the kinds replaced (one per item).

    >>> redact_pii_line("mail jane@corp.com or call +1 (415) 555-0100 from 10.0.0.5", list(PiiKind))
    ('mail <REDACTED:email> or call <REDACTED:phone> from <REDACTED:ipv4>', [<PiiKind.EMAIL: 'email'>, <PiiKind.PHONE: 'phone'>, <PiiKind.IPV4: 'ipv4'>])
    >>> redact_pii_line("released 2024-01-02, see noreply@github.com, v1.2.3", list(PiiKind))
    ('released 2024-01-02, see noreply@github.com, v1.2.3', [])
    """
    found: list[PiiKind] = []
    kinds = tuple(map(PiiKind, kinds))
    if not _may_hold_pii(line, kinds):
        return line, found
    for kind in kinds:
        patterns, keep_if = _MATCHERS[kind]
        for pattern in patterns:
            line = pattern.sub(
                lambda match, kind=kind, keep_if=keep_if: _marker(match, kind, keep_if, found), line
            )
    return line, found


def _marker(match: re.Match[str], kind: PiiKind, keep_if: Callable[[str], bool], found: list[PiiKind]) -> str:
    if not keep_if(match.group(0)):
        return match.group(0)
    found.append(kind)
    return f"<REDACTED:{kind.value}>"


def redact_pii(text: str, field_name: str, kinds: Iterable[PiiKind]) -> tuple[str, list[PiiHit]]:
    """Free text with personal data redacted line by line; line count unchanged."""
    kinds = tuple(kinds)
    hits: list[PiiHit] = []
    lines = text.split("\n")
    for index, line in enumerate(lines):
        lines[index], found = redact_pii_line(line, kinds)
        hits.extend(PiiHit(field_name, index + 1, kind) for kind in found)
    return "\n".join(lines), hits


def redact_pii_in_patch_comments(
    patch: str, field_name: str, kinds: Iterable[PiiKind], layout: Sequence[PatchLine] | None = None
) -> tuple[str, list[PiiHit]]:
    """A patch with personal data redacted inside comments on added lines of Python files.

    `layout` is `classify_patch_lines` of the patch, when the caller has it already.

    >>> patch = "--- a/m.py\\n+++ b/m.py\\n@@ -1 +1,2 @@\\n x = 1\\n+y = 'a@corp.com'  # ask jane@corp.com"
    >>> redact_pii_in_patch_comments(patch, "patch", [PiiKind.EMAIL])[0].splitlines()[-1]
    "+y = 'a@corp.com'  # ask <REDACTED:email>"
    """
    kinds = tuple(kinds)
    lines = patch.split("\n")
    hits: list[PiiHit] = []
    for index, line_info in enumerate(layout if layout is not None else classify_patch_lines(lines)):
        if line_info.kind is not LineKind.ADDED or not line_info.path.endswith((".py", ".pyi")):
            continue
        content = lines[index][1:]
        if "#" not in content:
            continue
        for start, end in reversed(_comment_spans(content)):
            comment, found = redact_pii_line(content[start:end], kinds)
            content = content[:start] + comment + content[end:]
            hits.extend(PiiHit(field_name, index + 1, kind) for kind in found)
        lines[index] = "+" + content
    return "\n".join(lines), hits


def _comment_spans(code: str) -> list[tuple[int, int]]:
    """Character spans of comments in one line of Python; none when the line does not tokenize alone.

    >>> _comment_spans("x = '#not'  # yes")
    [(12, 17)]
    """
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code.lstrip()).readline))
    except (tokenize.TokenError, SyntaxError):  # a line inside a multi-line string or bracket
        return []
    shift = len(code) - len(code.lstrip())
    return [
        (token.start[1] + shift, token.end[1] + shift)
        for token in tokens
        if token.type == tokenize.COMMENT and token.start[0] == 1
    ]
