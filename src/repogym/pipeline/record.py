"""A stage's result on disk: a frozen dataclass that writes itself into its stage's folder and is read back
from there. That is what resuming means: a finished stage is one whose record is in its folder.

A record is `FOLDER/<RECORD>` (`stage.json`, or the file a result class names when its folder holds other
stages' work too), one JSON object: `{"kind": "repogym.stage", "layout": 2, "result": "SFTResult",
"fields": {...}}`. The drivers' own files (OUT/quickstart.json, output_dir/flywheel.json) share the
`kind` / `layout` header (`read_record`).

Guarantees:
- a record is written atomically (`repogym.files.write_json`) after its stage returned, so a record on disk
  is a finished stage; a stage killed midway leaves none, runs again and resumes its own partial work
  (trajectory stores, checkpoints);
- a record reads back equal to the result that wrote it (tuples stay tuples, None stays None);
- a file that is not this layout's record of that result (an older repogym's single state file, another
  stage's record, hand-edited JSON) is a ConfigError naming the file and what to do, never a silent re-run
  or a wrong skip.

Not guaranteed: that the files a finished stage made are still as it left them (a record does not hash its
folder), nor that a record was made with today's settings: each driver checks its own (the quickstart its
plan in OUT/quickstart.json).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, Self, get_origin, get_type_hints

from repogym.errors import ConfigError
from repogym.files import write_json

#: The layout of the pipeline's files; 1 was the single ledger of every stage (`{"stages": {...}}`).
LAYOUT = 2
STAGE_KIND = "repogym.stage"


def read_record(path: Path, kind: str, fix: str) -> dict[str, Any]:
    """The JSON object at `path` when it is this layout's `kind`; anything else is a ConfigError that names
    the file and ends with `fix` (what the user can do: a new output folder, say)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{path}: unreadable ({type(exc).__name__}: {exc}); {fix}") from None
    if isinstance(data, dict) and "stages" in data and "kind" not in data:
        raise ConfigError(
            f"{path}: written by an older repogym, which kept every stage's result in this one file; this one "
            f"reads each stage's result from the stage's own folder and cannot resume that run: {fix}"
        )
    if not isinstance(data, dict) or data.get("kind") != kind or data.get("layout") != LAYOUT:
        found = (
            f"{data.get('kind')!r} layout {data.get('layout')!r}"
            if isinstance(data, dict)
            else "not an object"
        )
        raise ConfigError(f"{path}: not a {kind!r} file of layout {LAYOUT} ({found}); {fix}")
    return data


@dataclass(frozen=True)
class StageResult:
    """Base of every stage's result: a frozen dataclass of JSON values, recorded in its stage's folder."""

    RECORD: ClassVar[str] = "stage.json"
    """The record's file name inside the stage's folder."""

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON reads them back (tuples as lists)."""
        return json.loads(json.dumps(asdict(self)))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> Self:
        """The result `to_dict` wrote; `where` (the file) is named when a field is missing."""
        hints = get_type_hints(cls)
        names = [f.name for f in fields(cls)]
        missing = [name for name in names if name not in data]
        if missing:
            raise ConfigError(
                f"{where}: a {cls.__name__} record without {', '.join(missing)}; delete the file to run the "
                "stage again"
            )
        return cls(**{n: tuple(data[n]) if get_origin(hints[n]) is tuple else data[n] for n in names})

    @classmethod
    def find(cls, folder: Path) -> Self | None:
        """The finished stage's result recorded in `folder`, or None when the stage has not finished there."""
        path = folder / cls.RECORD
        if not path.is_file():
            return None
        fix = "delete it to run the stage again, or give a new output folder"
        data = read_record(path, STAGE_KIND, fix)
        if data.get("result") != cls.__name__:
            raise ConfigError(f"{path}: the record of a {data.get('result')}, not of a {cls.__name__}; {fix}")
        return cls.from_dict(data.get("fields") or {}, str(path))

    def save(self, folder: Path) -> Path:
        """Record this result in `folder` (atomically); returns the record's path."""
        path = folder / self.RECORD
        record = {
            "kind": STAGE_KIND,
            "layout": LAYOUT,
            "result": type(self).__name__,
            "fields": self.to_dict(),
        }
        write_json(path, record)
        return path
