"""The pre-filter in front of detect-secrets loses no detection: planted secrets of every type, random lines, attacks.

The reference is detect-secrets itself with every line scanned (`prefilter=False`).
"""

from __future__ import annotations

import random
import re

import pytest

from repogym.privacy.patchlines import LineKind
from repogym.privacy.scanpool import ScanField, scan_batch
from repogym.privacy.secretgate import GATES, SecretGate, fingerprint
from repogym.privacy.secrets import SecretScanner

from ..support.secret_corpus import FILLER, PLANTED

FILE_TYPES = ("app.py", "conf.yaml", "setup.cfg", "main.go", "notes.txt", "App.java", "x.tf", "lib.c")


def _hits(patch: str, prefilter: bool, ignored: tuple[str, ...] = ()) -> list[tuple[object, ...]]:
    with SecretScanner(ignored, prefilter=prefilter) as scanner:
        return [(h.field, h.line, h.type, h.kind, h.value) for h in scanner.scan_patch(patch, "patch")]


def _text_hits(text: str, prefilter: bool) -> list[tuple[object, ...]]:
    with SecretScanner((), prefilter=prefilter) as scanner:
        return [
            (h.field, h.line, h.type, h.kind, h.value) for h in scanner.scan_text(text, "problem_statement")
        ]


def _patch(path: str, hunk: list[str]) -> str:
    removed = sum(1 for line in hunk if not line.startswith("+"))
    added = sum(1 for line in hunk if not line.startswith("-"))
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,{removed} +1,{added} @@\n"
        + "\n".join(hunk)
    )


@pytest.mark.parametrize(
    ("kind", "line", "name"), PLANTED, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(PLANTED)]
)
def test_each_planted_secret_is_found_by_the_full_scan_and_by_the_gated_one(
    kind: str, line: str, name: str
) -> None:
    patch = _patch(name, [" x = 1", f"+{line}", f"-{line}", f" {line}"])
    full = _hits(patch, prefilter=False)
    assert kind in {hit[2] for hit in full if hit[3] is LineKind.ADDED}, (
        "the corpus line no longer trips its plugin"
    )
    assert {hit[3] for hit in full if hit[2] == kind} == {LineKind.ADDED, LineKind.REMOVED, LineKind.CONTEXT}
    assert _hits(patch, prefilter=True) == full


def test_a_mixed_history_of_patches_and_texts_gives_the_same_hits_with_and_without_the_gate() -> None:
    rng = random.Random(7)
    lines = [line for _, line, _ in PLANTED] + FILLER * 6
    for name in FILE_TYPES:
        hunk = [rng.choice("+- ") + rng.choice(lines) for _ in range(120)]
        patch = _patch(f"pkg/{name}", hunk)
        assert _hits(patch, prefilter=True) == _hits(patch, prefilter=False)
    text = "\n".join(rng.choice(lines) for _ in range(200))
    assert _text_hits(text, prefilter=True) == _text_hits(text, prefilter=False)


def test_an_allowlist_pragma_two_lines_up_does_not_hide_a_secret() -> None:
    """Attack on the gate: dropping the line between a pragma and a secret must not make them neighbours."""
    secret = 'password = "Zq8fLw2RkP0xYt"'
    hunk = [
        "+# pragma: allowlist nextline secret",
        "+x = 1",
        f"+{secret}",
        "+# pragma: allowlist nextline secret",
        f"+{secret}",
    ]
    patch = _patch("app.py", hunk)
    full = _hits(patch, prefilter=False)
    assert [hit[1] for hit in full] == [7], (
        "the reference reports the first secret and honours the pragma on the second"
    )
    assert _hits(patch, prefilter=True) == full


def test_unicode_case_folding_cannot_hide_a_keyword() -> None:
    """Attack: 'api_\u212aey' (a Kelvin sign) matches detect-secrets' case-insensitive 'api_key' but not str.lower()."""
    patch = _patch("app.py", ['+api_\u212aey = "Zq8fLw2RkP0xYt"', "+ok = 1"])
    full = _hits(patch, prefilter=False)
    assert [hit[2] for hit in full] == ["Secret Keyword"]
    assert _hits(patch, prefilter=True) == full


def _fragment(rng: random.Random) -> str:
    secret_lines = [line for _, line, _ in PLANTED]
    pieces = [
        lambda: rng.choice(secret_lines),
        lambda: rng.choice(secret_lines)[: rng.randrange(4, 40)],
        lambda: rng.choice(FILLER),
        lambda: rng.choice(
            ["key", "pass", "pwd", "token", "secret", "aws", "cl", "sl", "xox", "://", "@", ":"]
        ),
        lambda: rng.choice("\"'=: ") * rng.randrange(1, 3),
        lambda: "".join(
            rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123456789_-+/=.")
            for _ in range(rng.randrange(1, 70))
        ),
    ]
    return rng.choice(pieces)()


def test_random_lines_that_any_plugin_reports_on_always_pass_the_gate() -> None:
    """Soundness against the plugins themselves: a plugin's raw finding (before filters) implies the gate passes.

    The public-IP plugin is off, as in ScrubConfig's default: with it on, whole texts are not pre-searched.
    """
    from detect_secrets.settings import get_plugins

    rng = random.Random(11)
    lines = ["".join(_fragment(rng) for _ in range(rng.randrange(1, 4))) for _ in range(1500)]
    with SecretScanner(("Public IP (ipv4)",)) as scanner:
        gate = scanner.gate
        assert gate is not None
        plugins = get_plugins()
        reported = [
            line
            for line in lines
            if any(
                plugin.analyze_line(filename=name, line=line.rstrip())
                for plugin in plugins
                for name in FILE_TYPES
            )
        ]
        assert len(reported) > 300, "the random lines should trip plugins often"
        missed = [line for line in reported if not gate.may_hold_secret(line)]
        assert missed == []
        candidates = gate.candidate_lines("\n".join(lines))
        assert candidates is not None
        assert [
            line for index, line in enumerate(lines) if line in reported and index not in candidates
        ] == []


def test_every_installed_plugin_has_a_gate_read_off_its_current_patterns() -> None:
    """A detect-secrets upgrade that changes a pattern shows here (and falls back at run time, see below)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.settings import get_plugins

    with SecretScanner(()) as scanner:
        assert scanner.gate is not None and scanner.gate.fallbacks == []
        by_name = {type(plugin).__name__: plugin for plugin in get_plugins()}
    assert set(by_name) == {cls.__name__ for cls in get_mapping_from_secret_type_to_class().values()}
    assert {name: fingerprint(plugin) for name, plugin in by_name.items()} == {
        name: GATES[name]().fingerprint for name in by_name
    }


class GitHubTokenDetector:  # the name of a known plugin, with patterns the gate was not written for
    denylist = (re.compile(r"zz-token-[0-9]{4}"),)


class SomeFilePlugin:  # a plugin that is not regex-based: nothing tells which lines it matches
    pass


def test_a_plugin_whose_patterns_changed_falls_back_to_its_own_patterns() -> None:
    gate = SecretGate([GitHubTokenDetector()])
    assert gate.fallbacks == ["GitHubTokenDetector"]
    assert gate.may_hold_secret("x = 'zz-token-1234'") and not gate.may_hold_secret("ghp_" + "a" * 36)
    assert gate.candidate_lines("a\nb") is None  # its own patterns may span anything: every line is scanned


def test_an_unknown_plugin_that_is_not_regex_based_opens_the_gate() -> None:
    gate = SecretGate([SomeFilePlugin()])
    assert gate.open and gate.may_hold_secret("nothing here")


def test_scanning_in_worker_processes_gives_what_one_process_gives() -> None:
    rng = random.Random(3)
    lines = [line for _, line, _ in PLANTED] + FILLER
    batch = [
        [
            ScanField(
                "patch", _patch("app.py", [rng.choice("+- ") + rng.choice(lines) for _ in range(30)]), "patch"
            ),
            ScanField("problem_statement", "Fails with jane@corp.com and " + rng.choice(lines), "text"),
        ]
        for _ in range(12)
    ]
    alone = scan_batch(batch, workers=1, pii=("email",))
    spread = scan_batch(batch, workers=2, pii=("email",), min_parallel_chars=0)
    assert spread == alone
    assert all(scan.pii["problem_statement"][1] for scan in alone)
