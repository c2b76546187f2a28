"""One exception tree for repogym.

Exceptions are for programmer and user errors (a bad file, a bad config, an
unknown name). Things that happen to an attempt (a patch that does not apply,
a test run that times out) are outcomes recorded in results, never raised.
"""

from __future__ import annotations

import threading
from typing import Any


class RepogymError(Exception):
    """Base class of every error repogym raises on purpose."""


class ConfigError(RepogymError):
    """A run configuration is invalid: the message names the key path, the bad value and what is allowed."""


class DatasetError(RepogymError):
    """A task or predictions file cannot be read or written: the message names the file, line or row and field."""


class UnknownNameError(RepogymError, KeyError):
    """A registry or lookup was asked for a name it does not know: the message lists the known ones."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class RepoSourceError(RepogymError):
    """A task's repository cannot be found or cloned."""


class SandboxError(RepogymError):
    """The sandbox itself is unusable (missing bwrap, bad configuration), as opposed to a command failing in it."""


class EnvBuildError(RepogymError):
    """A Python environment for a repository could not be built."""


_lazy_lock = threading.Lock()


def __getattr__(name: str) -> Any:
    """`ResetNeeded` is made on first use: it subclasses gymnasium's, and importing gymnasium (numpy with
    it) costs a quarter of a second that the CLI's grade and import commands have no use for."""
    if name != "ResetNeeded":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _lazy_lock:
        if "ResetNeeded" not in globals():
            # gymnasium is a required dependency, not an optional one, but errors.py is imported by every
            # command and gymnasium costs 0.4-0.6 s (numpy with it): the one module-level exception to PLC0415.
            import gymnasium.error  # noqa: PLC0415

            class ResetNeeded(RepogymError, gymnasium.error.ResetNeeded):
                """An episode was stepped after it ended, or before reset()."""

            ResetNeeded.__module__ = __name__
            globals()["ResetNeeded"] = ResetNeeded
    return globals()["ResetNeeded"]
