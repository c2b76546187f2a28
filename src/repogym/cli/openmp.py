"""torch's OpenMP threads on a shared CPU: they wait for work asleep, not spinning.

By default libgomp's idle threads spin for a while between parallel regions. When the machine's cores
are busy with other work (the sandbox's test runs during GRPO, another seed's training, a parallel test
suite), a spinning thread holds a core that another thread of the same operation is waiting for. Measured
with the tiny model on 2 cores at load 5-6 (docs/benchmarks.md, "torch threads on a busy machine"): a
training step took 8.7-9.2 s with torch's default of 2 threads, 2.5-3.1 s with OMP_WAIT_POLICY=PASSIVE,
and 2.0-2.2 s with one thread.

No library sets this for its caller. The variable must be set before libgomp starts, which is at torch's
import. So the CLI sets it first thing, and never over a value the user chose.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

POLICY = "OMP_WAIT_POLICY"


def wait_passively(environ: MutableMapping[str, str] = os.environ) -> None:
    """Set OMP_WAIT_POLICY=PASSIVE unless the caller has set it (OpenMP threads sleep between regions)."""
    environ.setdefault(POLICY, "PASSIVE")
