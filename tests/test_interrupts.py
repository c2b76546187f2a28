"""Ctrl-C reaches the main thread while it waits on workers, whichever thread the kernel gave SIGINT to."""

from __future__ import annotations

import signal
import threading
import time
from concurrent.futures import FIRST_COMPLETED, FIRST_EXCEPTION, ThreadPoolExecutor

import pytest

from repogym.interrupts import POLL_SECONDS, as_completed_interruptibly, wait_interruptibly

WORK_SECONDS = 6.0
_release = threading.Event()


def _sigint_to_this_worker_then_work() -> str:
    # What the kernel may do with a process-directed SIGINT: hand it to a worker, not the main thread.
    time.sleep(0.3)  # the main thread is blocked in its wait by now
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)
    _release.wait(WORK_SECONDS)  # the work left; the test ends it early once it has its answer
    return "done"


@pytest.fixture
def python_sigint_handler():
    """Python's own SIGINT handler for the test: a suite started in the background by a non-interactive shell
    (`cmd &`, nohup) inherits SIGINT ignored, and Python then installs none (this test failed so, not the code)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("waiter", ["wait", "as_completed"])
def test_sigint_delivered_to_a_worker_thread_interrupts_the_wait_at_once(waiter, python_sigint_handler):
    _release.clear()
    pool = ThreadPoolExecutor(1)
    started = time.monotonic()
    try:
        futures = [pool.submit(_sigint_to_this_worker_then_work)]
        with pytest.raises(KeyboardInterrupt):
            if waiter == "wait":
                wait_interruptibly(futures)
            else:
                list(as_completed_interruptibly(futures))
        waited = time.monotonic() - started
    finally:
        _release.set()
        pool.shutdown(wait=True, cancel_futures=True)
    # A plain concurrent.futures.wait raises only after the work is done (WORK_SECONDS).
    assert waited < 0.3 + POLL_SECONDS + 2.0 < WORK_SECONDS


def test_the_waits_return_what_concurrent_futures_returns():
    with ThreadPoolExecutor(2) as pool:
        slow, fast = pool.submit(time.sleep, 1.2), pool.submit(lambda: 7)
        done, not_done = wait_interruptibly([slow, fast], return_when=FIRST_COMPLETED)
        assert fast in done and slow in not_done  # returned before the slow one ended, across a poll
        results = [future.result() for future in as_completed_interruptibly([slow, fast])]
        assert sorted(results, key=str) == [7, None]
        done, not_done = wait_interruptibly([slow, fast])
        assert done == {slow, fast} and not not_done
        failing = pool.submit(lambda: 1 / 0)
        later = pool.submit(time.sleep, 1.2)
        done, not_done = wait_interruptibly([failing, later], return_when=FIRST_EXCEPTION)
        assert failing in done and later in not_done
