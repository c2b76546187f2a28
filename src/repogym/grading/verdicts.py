"""One verdict per distinct candidate: a store that grades each (task, runtime, patch, settings) once and hands
the same verdict to every copy of that candidate.

A GRPO group samples the same answer many times (a small model more so), an eval draws several attempts per
task, and every copy used to start its own sandbox and run the same tests over the same tree. Here the first
copy grades; a copy asked for while that grade runs waits for it; a later copy gets the stored verdict.

Guarantees:

- A verdict is shared only between candidates that are the same bytes for the same task on the same
  runtime (the same prepared checkout and environment: the store belongs to one `TaskRuntime` object), with
  the same grading settings (skip rule, test limits, network). Nothing else of one candidate reaches
  another's grade: every grade that runs is still a fresh episode of its own (grade.py), so a candidate that
  writes files, pollutes caches or forges its report changes only its own verdict
  (tests/grading/test_hostile_shared_state.py).
- The task's identity is its whole definition (every field, hashed), not its id alone: two task objects
  that share an id but differ in tests or test patch never share a verdict.
- Verdicts that say the grader could not do its job (INFRA_ERROR, ENV_BUILD_FAILED) are never stored nor
  handed on: each copy grades for itself, as a full grade would. A grade that raises is not stored either.
- Bounded: at most `capacity` verdicts per runtime, the least recently used dropped first.

Not guaranteed:

- A flaky test: the stored verdict is the first grade's; a full grade of each copy might differ from it.
  Grading-time checks that re-run the same patch on purpose (validation's flakiness runs) must not use a
  store, which is why `grade()` only uses one when given (`verdicts=`).
- A reused verdict is the same object's content: its `report.log_path` is the first grade's log, and its
  timings carry `verdict_reused: 1.0`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from repogym.grading.report import GradeResult, Outcome, SkipRule
from repogym.sandbox.base import Limits
from repogym.task import Task

#: Outcomes that mean the grader failed, not the candidate: never shared between copies.
_NOT_SHARED = frozenset({Outcome.INFRA_ERROR, Outcome.ENV_BUILD_FAILED})


@dataclass(frozen=True)
class VerdictKey:
    """What makes two grades the same grade (the runtime is the store's own)."""

    task_digest: str
    """sha256 of the task's whole definition (`task_digest`)."""
    patch_sha256: str
    """sha256 of the candidate's exact bytes: no normalisation, since whitespace can decide an apply."""
    skip_rule: SkipRule
    test_limits: Limits | None
    allow_network: bool


def task_digest(task: Task) -> str:
    """sha256 of every field of `task` (its repr: dataclass fields in order), so equal ids never suffice."""
    return hashlib.sha256(repr(task).encode("utf-8")).hexdigest()


def verdict_key(
    task: Task, patch: str, skip_rule: SkipRule, test_limits: Limits | None, allow_network: bool
) -> VerdictKey:
    digest = hashlib.sha256(patch.encode("utf-8", errors="surrogatepass")).hexdigest()
    return VerdictKey(task_digest(task), digest, skip_rule, test_limits, allow_network)


class VerdictStore:
    """Verdicts of one runtime, by `VerdictKey`; thread-safe; see the module docstring."""

    def __init__(self, capacity: int = 4096) -> None:
        if capacity < 1:
            raise ValueError(f"VerdictStore(capacity={capacity}): capacity must be at least 1")
        self.capacity = capacity
        self._done: OrderedDict[VerdictKey, GradeResult] = OrderedDict()
        self._running: dict[VerdictKey, Future[GradeResult]] = {}
        self._lock = threading.Lock()
        self.graded = 0
        """Grades this store ran."""
        self.reused = 0
        """Verdicts handed to a copy instead of a grade."""

    def __len__(self) -> int:
        with self._lock:
            return len(self._done)

    def verdict(self, key: VerdictKey, grade: Callable[[], GradeResult]) -> GradeResult:
        """The verdict for `key`: stored, or the one a running grade of the same key gives, else `grade()`."""
        with self._lock:
            stored = self._done.get(key)
            if stored is not None:
                self._done.move_to_end(key)
                self.reused += 1
                return _reused(stored)
            running = self._running.get(key)
            if running is None:
                running = self._running[key] = Future()
                owner = True
            else:
                owner = False
        if not owner:
            try:
                shared = running.result()
            except Exception:
                # The first copy's grade raised: this copy grades for itself, as a full grade would.
                return self._grade_alone(grade)
            if shared.outcome in _NOT_SHARED:
                return self._grade_alone(grade)
            with self._lock:
                self.reused += 1
            return _reused(shared)
        return self._grade_first(key, running, grade)

    def _grade_first(
        self, key: VerdictKey, running: Future[GradeResult], grade: Callable[[], GradeResult]
    ) -> GradeResult:
        try:
            result = self._grade_alone(grade)
        except BaseException as exc:
            with self._lock:
                self._running.pop(key, None)
            running.set_exception(exc)
            raise
        with self._lock:
            self._running.pop(key, None)
            if result.outcome not in _NOT_SHARED:
                self._done[key] = result
                while len(self._done) > self.capacity:
                    self._done.popitem(last=False)
        running.set_result(result)
        return result

    def _grade_alone(self, grade: Callable[[], GradeResult]) -> GradeResult:
        result = grade()
        with self._lock:
            self.graded += 1
        return result


def _reused(result: GradeResult) -> GradeResult:
    return dataclasses.replace(result, timings={**result.timings, "verdict_reused": 1.0})


_stores: dict[int, VerdictStore] = {}
_stores_lock = threading.Lock()


def verdicts_for(owner: object) -> VerdictStore:
    """The verdict store of `owner` (a `TaskRuntime`: everyone grading over it shares it), made on first use
    and dropped when `owner` is collected."""
    key = id(owner)
    with _stores_lock:
        store = _stores.get(key)
        if store is None:
            store = _stores[key] = VerdictStore()
            weakref.finalize(owner, _forget, key, store)
        return store


def _forget(key: int, store: VerdictStore) -> None:
    with _stores_lock:
        if _stores.get(key) is store:
            del _stores[key]
