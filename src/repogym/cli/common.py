"""Console objects and small helpers shared by the CLI sub-apps."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def print_json(data: Any) -> None:
    """Machine-readable output on stdout, nothing else mixed in."""
    print(json.dumps(data, indent=2, ensure_ascii=False))
