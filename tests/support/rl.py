"""Helpers of the training tests: CPU-sized GRPO settings and config files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def fast_settings(**extra: Any) -> dict[str, Any]:
    """GRPO settings that keep a CPU test short (tiny completions, no TensorBoard, no recomputation)."""
    return {
        "max_completion_length": 16,
        "gradient_checkpointing": False,
        "report_to": [],
        "save_steps": 1000,
        **extra,
    }


def write_config(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path
