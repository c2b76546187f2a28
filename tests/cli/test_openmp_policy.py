"""The CLI makes torch's OpenMP threads wait asleep (OMP_WAIT_POLICY=PASSIVE) unless the user chose a policy.

Spinning threads on a busy machine made a tiny-model training step 3-4x slower (repogym.cli.openmp).
"""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = """
import os, sys
sys.argv = ["repogym", "samples", "--help"]
from repogym.cli import main
try:
    main()
except SystemExit:
    pass
print("policy=" + os.environ.get("OMP_WAIT_POLICY", "unset"))
"""


def _policy(**extra: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"} | extra
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True)
    return done.stdout.strip().splitlines()[-1]


def test_a_command_runs_with_passive_openmp_threads():
    assert _policy() == "policy=PASSIVE"


def test_the_users_own_openmp_policy_is_kept():
    assert _policy(OMP_WAIT_POLICY="ACTIVE") == "policy=ACTIVE"
