"""SWE-bench predictions: JSONL rows `{instance_id, model_name_or_path, model_patch}`.

SWE-bench also accepts a JSON array or an object keyed by instance id; both
are read here too. A `model_patch` of null means "no patch" (graded as empty).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repogym.errors import DatasetError
from repogym.files import atomic_writer


@dataclass(frozen=True)
class Prediction:
    instance_id: str
    model_name_or_path: str
    model_patch: str

    def to_dict(self) -> dict[str, str]:
        return {
            "instance_id": self.instance_id,
            "model_name_or_path": self.model_name_or_path,
            "model_patch": self.model_patch,
        }

    @classmethod
    def from_dict(cls, row: Any, where: str) -> Prediction:
        if not isinstance(row, dict):
            raise DatasetError(f"{where}: expected a JSON object, got {type(row).__name__}")
        instance_id = row.get("instance_id")
        if not isinstance(instance_id, str) or not instance_id:
            raise DatasetError(f"{where}: missing or empty field 'instance_id'")
        # SWE-bench writes null for "no patch"; some tools also leave the model name null.
        model = row.get("model_name_or_path") or ""
        patch = row.get("model_patch")
        if patch is None:
            patch = ""
        if not isinstance(model, str):
            raise DatasetError(f"{where}: field 'model_name_or_path' must be a string, got {model!r}")
        if not isinstance(patch, str):
            raise DatasetError(f"{where}: field 'model_patch' must be a string, got {type(patch).__name__}")
        return cls(instance_id, model, patch)


def load_predictions(path: str | os.PathLike[str]) -> list[Prediction]:
    """Read predictions (JSONL, JSON array or JSON object keyed by id); ids must be unique."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise DatasetError(f"{file}: no such file") from None
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{file}: not UTF-8 text (byte {exc.start}): {exc.reason}") from None
    except OSError as exc:
        raise DatasetError(f"{file}: cannot read: {exc.strerror or exc}") from None
    stripped = text.lstrip()
    if not stripped:
        raise DatasetError(f"{file}: the file is empty")
    rows: list[tuple[str, Any]] = []
    if stripped[0] == "[" or (
        stripped[0] == "{" and "\n{" not in stripped.strip() and _is_keyed_object(stripped)
    ):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{file}:{exc.lineno}: malformed JSON: {exc.msg}") from None
        if isinstance(data, list):
            rows = [(f"{file}: item {i}", row) for i, row in enumerate(data)]
        else:
            rows = [(f"{file}: key {key!r}", {"instance_id": key, **row}) for key, row in data.items()]
    else:
        # split("\n"), not splitlines(): JSON text may hold U+2028, U+0085 or \x1c raw, which
        # splitlines() would break a record at (json.dumps with ensure_ascii=False keeps them).
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                rows.append((f"{file}:{number}", json.loads(line)))
            except json.JSONDecodeError as exc:
                raise DatasetError(
                    f"{file}:{number}: malformed JSON: {exc.msg} at column {exc.colno}"
                ) from None
    predictions: list[Prediction] = []
    seen: dict[str, str] = {}
    for where, row in rows:
        prediction = Prediction.from_dict(row, where)
        if prediction.instance_id in seen:
            raise DatasetError(
                f"{where}: duplicate instance_id {prediction.instance_id!r} (first at {seen[prediction.instance_id]})"
            )
        seen[prediction.instance_id] = where
        predictions.append(prediction)
    return predictions


def _is_keyed_object(text: str) -> bool:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return False
    return (
        isinstance(data, dict)
        and "instance_id" not in data
        and all(isinstance(v, dict) for v in data.values())
    )


def save_predictions(predictions: Iterable[Prediction], path: str | os.PathLike[str]) -> int:
    """Write SWE-bench's predictions JSONL atomically; returns the number written."""
    lines = [json.dumps(prediction.to_dict(), ensure_ascii=False) + "\n" for prediction in predictions]
    try:
        with atomic_writer(path) as handle:
            handle.writelines(lines)
    except OSError as exc:
        raise DatasetError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return len(lines)
