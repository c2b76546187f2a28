"""Localizers that use no gold information: spectrum-based fault localization (`localize="sbfl"`).

`sbfl` runs the task's FAIL_TO_PASS and PASS_TO_PASS tests (the test patch applied, as the
grader runs them) in a fresh sandbox episode under a pytest plugin that records which lines of
the repository's non-test code each test's call ran (`spectrum_plugin/repogym_spectrum.py`),
then ranks lines by Ochiai suspiciousness, ef / sqrt(F * (ef + ep)) (ef / ep: failing / passing
tests that ran the line, F: failing tests), the classic spectrum formula of program repair.
Ties are broken by how late the failing tests ran the line (the last line run before an
assertion fails is usually the culprit). It uses the tests, never the gold patch; tasks whose
tests are not pytest, or whose failing tests run no repository code, get an empty localization
(the prompt then shows no window) with the reason in `detail`.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from repogym.env.context import Localization, localizers
from repogym.grading.runner import test_directives
from repogym.sandbox.base import OUT_DIR, read_jail_file

if TYPE_CHECKING:
    from repogym.sandbox.runtime import TaskRuntime
    from repogym.task import Task

PLUGIN = Path(__file__).with_name("spectrum_plugin") / "repogym_spectrum.py"
#: At most this many top-ranked lines are localized (all tied for the best score, latest first).
TOP_LINES = 2


@localizers.register("sbfl")
def sbfl_localizer(task: Task, contents: Mapping[str, str], runtime: TaskRuntime | None) -> Localization:
    """Ochiai over per-test line spectra from one sandboxed run of the task's tests; see the module docstring."""
    if runtime is None:
        return Localization("sbfl", {}, uses_gold=False, detail="needs the task's prepared sandbox runtime")
    if task.env.log_parser != "pytest":
        return Localization(
            "sbfl", {}, uses_gold=False, detail=f"only pytest suites (this one: {task.env.log_parser})"
        )
    spectra = run_spectra(task, runtime)
    return rank(spectra)


def run_spectra(task: Task, runtime: TaskRuntime) -> dict[str, dict]:
    """{test id: {outcome, lines, last}} from one run of the task's test files in a fresh episode."""
    directives = test_directives([*task.FAIL_TO_PASS, *task.PASS_TO_PASS], task.test_patch)
    with runtime.episode() as episode:
        if task.test_patch.strip():
            patch = episode.put_file("test.patch", task.test_patch)
            episode.run(f"git apply --whitespace=nowarn {patch}")
        episode.put_file(PLUGIN.name, PLUGIN.read_text())
        out = f"{OUT_DIR}/spectrum.json"
        quoted = " ".join(f"'{d}'" for d in directives if "'" not in d)
        episode.run(
            f'export PYTHONPATH=/opt/repogym/in"${{PYTHONPATH:+:$PYTHONPATH}}" REPOGYM_SPECTRUM_FILE={out}; '
            f"python -m pytest -q -p no:cacheprovider -p repogym_spectrum {quoted}"
        )
        text = read_jail_file(episode.layer.out / "spectrum.json")
    try:
        data = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def rank(spectra: Mapping[str, dict], top: int = TOP_LINES) -> Localization:
    """Ochiai scores from spectra; the best `top` lines become the localization.

    >>> spectra = {"t::fail": {"outcome": "failed", "lines": {"m.py": [2, 5]}, "last": [["m.py", 5], ["m.py", 2]]},
    ...            "t::pass": {"outcome": "passed", "lines": {"m.py": [5]}, "last": []}}
    >>> rank(spectra).spots
    {'m.py': (2,)}
    """
    failing = [r for r in spectra.values() if r.get("outcome") == "failed"]
    if not failing:
        return Localization("sbfl", {}, uses_gold=False, detail="no test failed, so no line is suspicious")
    ef: Counter[tuple[str, int]] = Counter()
    ep: Counter[tuple[str, int]] = Counter()
    for result in spectra.values():
        target = ef if result.get("outcome") == "failed" else ep
        for path, lines in (result.get("lines") or {}).items():
            target.update((path, int(line)) for line in lines)
    recency: dict[tuple[str, int], int] = {}
    for result in failing:
        for position, (path, line) in enumerate(result.get("last") or []):
            recency[(path, int(line))] = max(recency.get((path, int(line)), -1), position)
    scores = {key: ef[key] / math.sqrt(len(failing) * (ef[key] + ep[key])) for key in ef}
    if not scores:
        return Localization("sbfl", {}, uses_gold=False, detail="the failing tests ran no repository code")
    ordered = sorted(scores, key=lambda key: (-scores[key], -recency.get(key, -1), key))
    best = [key for key in ordered if scores[key] == scores[ordered[0]]][:top]
    spots: dict[str, list[int]] = {}
    for path, line in best:
        spots.setdefault(path, []).append(line)
    return Localization(
        "sbfl", {path: tuple(sorted(lines)) for path, lines in spots.items()}, uses_gold=False,
        detail=f"Ochiai over {len(spectra)} tests ({len(failing)} failing)",
        scores={f"{path}:{line}": round(scores[(path, line)], 4) for path, line in ordered[:10]},
    )  # fmt: skip
