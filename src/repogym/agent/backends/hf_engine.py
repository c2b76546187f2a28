"""Continuous batching for the `hf` backend: one decode loop, requests join and leave it token by token.

A request is a `Job` (prompt token ids plus its own sampling settings). One
thread runs the loop: it admits waiting jobs into the running batch (their
prompts prefilled together, their KV cache left-padded onto the batch's), takes
one decode step for every running row, and retires a row the moment it ends:
a stop token, its own `max_tokens`, its deadline, or `Job.cancel()` from
another thread (the server calls it when the client hangs up). A cancelled or
expired job stops costing compute at the next token; the rest of the batch
goes on.

Why not `model.generate()`: it runs one batch to the end of its longest row,
with one sampling setting and one seed for all rows, and cannot take new rows;
transformers' own continuous batching (`generate_batch`, paged attention) has
no per-request seeds or greedy/sampled mix, and on CPU ran 4 prompts x 64
tokens of the tiny model 10-15x slower than this loop (same run, 2 cores).
Each row here has its own `torch.Generator`, so a seeded request samples the
same tokens alone or in any batch.

Guarantees: a row's tokens and log-probabilities do not depend on which other
rows share its batch (up to floating-point noise of padded attention); a
cancelled or timed-out job's partial output is dropped, never returned.
Not guaranteed: joining a running batch needs every cache layer to be a plain
`DynamicLayer` (full attention); for other caches (sliding windows, linear
attention) new jobs wait until the batch drains (bounded batches).
"""

from __future__ import annotations

import inspect
import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from repogym.agent.backends.hf_batch import RowBatch, warped_logprobs
from repogym.agent.policies import PolicyUnavailable, SamplingParams

#: How long an idle loop waits for more jobs to arrive before prefilling the first one alone.
GATHER_WINDOW_S = 0.01


class QueueFull(PolicyUnavailable):
    """The engine's waiting queue is at its bound; retry after `retry_after_s`."""

    def __init__(self, depth: int, retry_after_s: float) -> None:
        super().__init__(f"queue full ({depth} waiting); retry after {retry_after_s:.0f} s", kind="busy")
        self.retry_after_s = retry_after_s


class JobCancelled(PolicyUnavailable):
    """The job was cancelled before it finished (the client went away); its partial output is dropped."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"cancelled: {reason}", kind="cancelled")


class JobTimedOut(PolicyUnavailable):
    """The job passed its deadline before it finished; its partial output is dropped."""

    def __init__(self, timeout_s: float, generated: int) -> None:
        super().__init__(
            f"request exceeded the server's {timeout_s:g} s timeout ({generated} tokens generated, dropped)",
            kind="timeout",
        )


@dataclass(eq=False)
class Job:
    """One generation request inside the engine; `future` gets (token ids, log-probabilities) or an error."""

    prompt_ids: list[int]
    sampling: SamplingParams
    timeout_s: float | None = None
    future: Future[tuple[list[int], list[float]]] = field(default_factory=Future)
    submitted: float = field(default_factory=time.monotonic)
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    cancel_reason: str = ""
    generator: Any = None

    def cancel(self, reason: str = "cancelled by the caller") -> None:
        """Ask the loop to drop this job at its next token (safe from any thread; a finished job ignores it)."""
        self.cancel_reason = reason or "cancelled"

    def ended(self, now: float) -> PolicyUnavailable | None:
        """Why the job must stop now without a result, if it must."""
        if self.cancel_reason:
            return JobCancelled(self.cancel_reason)
        if self.timeout_s is not None and now - self.submitted > self.timeout_s:
            return JobTimedOut(self.timeout_s, len(self.tokens))
        return None


@dataclass(frozen=True)
class EngineStats:
    """What the engine has done since it started; the server's /health reports it."""

    queue_depth: int
    """Jobs waiting to join the batch."""
    in_flight: int
    """Jobs generating now (rows of the running batch)."""
    completed: int
    cancelled: int
    timed_out: int
    rejected: int
    """Jobs refused because the queue was full."""
    failed: int
    batches: int
    """Admissions: groups of jobs prefilled together and added to the running batch."""
    decode_steps: int
    tokens_generated: int
    peak_batch: int
    """Most rows decoded in one step."""
    mean_batch: float
    """Rows per decode step, on average (1.0 means no batching happened)."""
    mean_latency_s: float
    """Submit-to-result seconds of completed jobs, on average."""


class BatchEngine:
    """The decode loop over `model`; `submit()` from any thread, `close()` once."""

    def __init__(
        self,
        model: Any,
        stop_ids: list[int],
        pad_id: int,
        max_batch: int = 8,
        max_queue: int = 0,
    ) -> None:
        self.model = model
        self.stop_ids = frozenset(stop_ids)
        self.pad_id = pad_id
        self.max_batch = max(1, max_batch)
        self.max_queue = max_queue
        """Most jobs waiting at once; 0 = unbounded."""
        self._cache_kwarg = (
            "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        )
        self._waiting: deque[Job] = deque()
        self._wake = threading.Condition()
        self._closing = False
        self._running: set[Job] = set()
        self._counts = dict.fromkeys(
            ("completed", "cancelled", "timed_out", "rejected", "failed", "batches", "decode_steps",
             "tokens_generated", "peak_batch", "row_steps"), 0,
        )  # fmt: skip
        self._latency_total = 0.0
        self._thread = threading.Thread(target=self._loop_forever, name="hf-generate", daemon=True)
        self._thread.start()

    # -- from any thread ---------------------------------------------------------------------

    def submit(self, prompt_ids: list[int], sampling: SamplingParams, timeout_s: float | None = None) -> Job:
        """Queue a job; raises QueueFull when `max_queue` jobs are already waiting."""
        job = Job(list(prompt_ids), sampling, timeout_s)
        with self._wake:
            if self._closing:
                raise PolicyUnavailable("the model engine is shut down", kind="error")
            if self.max_queue and len(self._waiting) >= self.max_queue:
                self._counts["rejected"] += 1
                raise QueueFull(len(self._waiting), self._retry_after_s())
            self._waiting.append(job)
            self._wake.notify()
        return job

    def stats(self) -> EngineStats:
        with self._wake:
            counts = dict(self._counts)
            depth, running, latency = len(self._waiting), len(self._running), self._latency_total
        steps = counts.pop("decode_steps")
        row_steps = counts.pop("row_steps")
        return EngineStats(
            queue_depth=depth, in_flight=running, decode_steps=steps,
            mean_batch=round(row_steps / steps, 3) if steps else 0.0,
            mean_latency_s=round(latency / counts["completed"], 3) if counts["completed"] else 0.0, **counts,
        )  # fmt: skip

    def close(self) -> None:
        """Stop the loop; jobs still waiting or running fail with PolicyUnavailable."""
        with self._wake:
            self._closing = True
            self._wake.notify()
        self._thread.join(timeout=30)

    def _retry_after_s(self) -> float:
        """A guess at when a place frees up: the queue ahead, served max_batch at a time (1 s at least)."""
        done = self._counts["completed"]
        mean = self._latency_total / done if done else 1.0
        return float(min(30, max(1, round(mean * len(self._waiting) / self.max_batch))))

    # -- the loop (its own thread) -----------------------------------------------------------

    def _loop_forever(self) -> None:
        import torch

        with torch.inference_mode():
            self._loop()

    def _loop(self) -> None:
        batch: RowBatch | None = None
        while True:
            joining = self._take_waiting(batch)
            if joining is None:  # closing
                self._fail_all(batch, PolicyUnavailable("the model engine shut down", kind="error"))
                return
            try:
                if joining:
                    batch = self._admit(batch, joining)
                if batch is not None:
                    batch = self._decode_step(batch)
            except Exception as exc:  # a broken step fails its jobs, never the thread others wait on
                for job in [*(batch.jobs if batch else []), *joining]:
                    self._finish(job, exc)
                batch = None

    def _take_waiting(self, batch: RowBatch | None) -> list[Job] | None:
        """Jobs to admit now ([] = none); waits while idle; None when closing. Drops cancelled waiters."""
        with self._wake:
            if batch is None:
                while not self._waiting and not self._closing:
                    self._wake.wait()
                gathered_by = time.monotonic() + GATHER_WINDOW_S  # jobs sent together are prefilled together
                while not self._closing and len(self._waiting) < self.max_batch:
                    if (left := gathered_by - time.monotonic()) <= 0:
                        break
                    self._wake.wait(left)
            if self._closing:
                return None
            now = time.monotonic()
            for job in [job for job in self._waiting if job.ended(now)]:
                self._waiting.remove(job)
                self._finish(job, job.ended(now))
            room = self.max_batch - (len(batch.jobs) if batch else 0)
            if batch is not None and not batch.joinable:
                room = 0
            taken = [self._waiting.popleft() for _ in range(min(room, len(self._waiting)))]
            self._running.update(taken)
            return taken

    def _admit(self, batch: RowBatch | None, jobs: list[Job]) -> RowBatch:
        import torch

        for job in jobs:
            if job.sampling.seed is not None:
                job.generator = torch.Generator(device=self.model.device).manual_seed(job.sampling.seed)
        joined = RowBatch.prefill(self.model, jobs, self.pad_id, self._cache_kwarg)
        with self._wake:
            self._counts["batches"] += 1
        self._sample(joined, joined.last_logits)
        joined = self._retire(joined)
        if batch is None:
            return joined
        return batch.merge(joined) if joined is not None else batch

    def _decode_step(self, batch: RowBatch) -> RowBatch | None:
        logits = batch.forward_one(self.model, self._cache_kwarg)
        with self._wake:
            self._counts["decode_steps"] += 1
            self._counts["row_steps"] += len(batch.jobs)
            self._counts["peak_batch"] = max(self._counts["peak_batch"], len(batch.jobs))
        self._sample(batch, logits)
        return self._retire(batch)

    def _sample(self, batch: RowBatch, logits: Any) -> None:
        """One token per row, each with its own temperature, top_p and generator; appends to the jobs."""
        import torch

        logits = logits.float()
        raw_logprobs = torch.log_softmax(logits, dim=-1)
        chosen = raw_logprobs.argmax(dim=-1).tolist()
        for row, job in enumerate(batch.jobs):
            if job.sampling.temperature > 0:
                logprobs = warped_logprobs(logits[row], job.sampling)
                token = int(torch.multinomial(logprobs.exp(), 1, generator=job.generator))
                job.logprobs.append(float(logprobs[token]))
            else:
                token = chosen[row]
                job.logprobs.append(float(raw_logprobs[row, token]))
            job.tokens.append(token)
        batch.next_tokens = [job.tokens[-1] for job in batch.jobs]
        with self._wake:
            self._counts["tokens_generated"] += len(batch.jobs)

    def _retire(self, batch: RowBatch) -> RowBatch | None:
        """Finish the rows that ended; the batch of the rest (None when none is left)."""
        now = time.monotonic()
        keep = []
        for row, job in enumerate(batch.jobs):
            if (error := job.ended(now)) is not None:
                self._finish(job, error)
            elif job.tokens[-1] in self.stop_ids or len(job.tokens) >= job.sampling.max_tokens:
                self._finish(job, None)
            else:
                keep.append(row)
        if not keep:
            return None
        return batch.select(keep) if len(keep) < len(batch.jobs) else batch

    def _finish(self, job: Job, error: BaseException | None) -> None:
        if job.future.done():
            return
        with self._wake:
            self._running.discard(job)
            if error is None:
                self._counts["completed"] += 1
                self._latency_total += time.monotonic() - job.submitted
            elif isinstance(error, JobCancelled):
                self._counts["cancelled"] += 1
            elif isinstance(error, JobTimedOut):
                self._counts["timed_out"] += 1
            else:
                self._counts["failed"] += 1
        if error is None:
            job.future.set_result((job.tokens, job.logprobs))
        else:
            job.future.set_exception(error)

    def _fail_all(self, batch: RowBatch | None, error: BaseException) -> None:
        with self._wake:
            waiting, self._waiting = list(self._waiting), deque()
        for job in [*(batch.jobs if batch else []), *waiting]:
            self._finish(job, error)
