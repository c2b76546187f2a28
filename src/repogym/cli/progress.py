"""Progress on stderr for long commands: the library's `(what, done, total)` callbacks drawn as rich bars."""

from __future__ import annotations

from typing import Any

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from repogym.cli.common import err_console


class LiveBars:
    """The library's progress callbacks (`(what, done, total)`) drawn as rich bars on stderr: a bar per count
    (`what` up to its first ':', the rest shown beside it), live from the first count until `pause()`.

    Printing a line (`say`) or handing the terminal to a trainer's own bar pauses them first: rich allows one
    live display at a time. Use it as a context manager so the bars end with the command."""

    def __init__(self) -> None:
        self._live: Progress | None = None
        self._bars: dict[str, Any] = {}

    def __call__(self, what: str, done: int, total: int) -> None:
        if self._live is None:
            self._live = Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("ETA"), TimeRemainingColumn(), console=err_console,
            )  # fmt: skip
            self._live.start()
            self._bars = {}
        # "synth calcium: injecting": one bar per repository, its step in the text
        key = what.split(":", 1)[0]
        if key not in self._bars:
            self._bars[key] = self._live.add_task(what, total=total or None)
        self._live.update(self._bars[key], description=what, completed=done, total=total or None)

    def pause(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def say(self, line: str) -> None:
        """Print a line on stderr below the bars drawn so far."""
        self.pause()
        err_console.print(Text(line), soft_wrap=True)

    def __enter__(self) -> LiveBars:
        return self

    def __exit__(self, *exc: object) -> None:
        self.pause()
