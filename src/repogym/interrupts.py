"""Waiting on worker threads without delaying Ctrl-C.

Python runs signal handlers in the main thread only, and a process-directed SIGINT may be delivered
to any thread. When the kernel picks a worker, the main thread blocked in `concurrent.futures.wait`
(a lock acquire with no timeout) is not woken: KeyboardInterrupt is raised only once every future has
finished. That happened to `repogym validate` in CI: Ctrl-C after the first candidate took effect after
the fortieth. The standard library has no interruptible wait, so this one wakes twice a second to let
the main thread run a pending handler (tests/test_interrupts.py delivers SIGINT to a worker thread).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import ALL_COMPLETED, FIRST_COMPLETED, FIRST_EXCEPTION, Future, wait
from typing import TypeVar

T = TypeVar("T")

#: How long the main thread sleeps between checks for a signal delivered to another thread.
POLL_SECONDS = 0.5


def wait_interruptibly(
    futures: Iterable[Future[T]], return_when: str = ALL_COMPLETED
) -> tuple[set[Future[T]], set[Future[T]]]:
    """`concurrent.futures.wait(futures, return_when=...)` that Ctrl-C interrupts within POLL_SECONDS."""
    pending = list(futures)
    while True:
        done, not_done = wait(pending, timeout=POLL_SECONDS, return_when=return_when)
        if (
            not not_done
            or (return_when == FIRST_COMPLETED and done)
            or (return_when == FIRST_EXCEPTION and any(f.exception() is not None for f in done))
        ):
            return done, not_done


def as_completed_interruptibly(futures: Iterable[Future[T]]) -> Iterator[Future[T]]:
    """`concurrent.futures.as_completed(futures)` that Ctrl-C interrupts within POLL_SECONDS."""
    pending: set[Future[T]] = set(futures)
    while pending:
        done, pending = wait_interruptibly(pending, return_when=FIRST_COMPLETED)
        yield from done
