"""The validation tests' candidates: toy-task variants of every kind a miner hands over (flaky tests, a new
test module, a planted secret), built by tests/validate/conftest.py."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repogym.testing import TESTS_AFTER
from repogym.validate import ValidationRun

#: An AWS access key id that detect-secrets recognises (not a real key).
PLANTED_SECRET = "AKIAZ3MHQW7XK2RT5BNP"

FLAKY_TEST = """

def test_flaky():
    # Passes on a phase's first run only: the counter lives in the jail's /tmp, which the runs share.
    import os
    path = "/tmp/flaky-counter"
    count = int(open(path).read()) if os.path.exists(path) else 0
    with open(path, "w") as handle:
        handle.write(str(count + 1))
    assert count % 2 == 0
"""

FLAKY_FIX_TEST = TESTS_AFTER.replace(
    "from calc import add, mul", "import os\n\nfrom calc import add, mul"
).replace(
    "def test_add():\n    assert add(2, 3) == 5\n",
    "def test_add():\n"
    '    path = "/tmp/add-counter"\n'
    "    count = int(open(path).read()) if os.path.exists(path) else 0\n"
    '    open(path, "w").write(str(count + 1))\n'
    "    assert count % 2 == 0 and add(2, 3) == 5\n",
)

#: A test module for a function the fix adds: before the fix it cannot even be imported.
NEW_TEST_MODULE = """diff --git a/tests/test_sub.py b/tests/test_sub.py
new file mode 100644
--- /dev/null
+++ b/tests/test_sub.py
@@ -0,0 +1,5 @@
+from calc import sub
+
+
+def test_sub():
+    assert sub(5, 3) == 2
"""


@dataclass(frozen=True)
class Batch:
    """One validation run of the candidates: the run, its task file and its funnel."""

    run: ValidationRun
    out: Path
    funnel: Path
