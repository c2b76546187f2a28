"""Name -> implementation registries.

Each seam (reward functions, policies, sandboxes, log parsers) has one
`Registry`. Short names are registered with a decorator; any dotted path
`package.module:attribute` (or `package.module.attribute`) also resolves, so
users plug in their own code without registering it. A short name may also
stand for a dotted path (`add_path`), imported on first use: a process that
needs one implementation does not import them all.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from repogym.errors import UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """A named table of implementations of one kind.

    >>> parsers = Registry("log parser")
    >>> @parsers.register("upper")
    ... def upper(text):
    ...     return text.upper()
    >>> parsers.get("upper")("ok")
    'OK'
    >>> parsers.get("os.path:basename")("/a/b.py")
    'b.py'
    >>> parsers.get("uper")
    Traceback (most recent call last):
    ...
    repogym.errors.UnknownNameError: unknown log parser 'uper' (did you mean 'upper'?); known: upper; or give a dotted path such as 'package.module:name'
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._aliases: dict[str, str] = {}
        self._paths: dict[str, str] = {}
        """Names registered by `add_path`: name -> dotted path (what it resolved to is cached in _entries)."""

    def register(self, name: str, *aliases: str) -> Callable[[T], T]:
        """Decorator registering `obj` under `name` (and optional aliases)."""

        def decorator(obj: T) -> T:
            self.add(name, obj, *aliases)
            return obj

        return decorator

    def add(self, name: str, obj: T, *aliases: str) -> None:
        self._claim(name, aliases)
        self._entries[name] = obj
        for alias in aliases:
            self._aliases[alias] = name

    def add_path(self, name: str, path: str, *aliases: str) -> None:
        """Register `name` as what the dotted `path` names, imported the first time `name` is looked up.

        >>> table = Registry("log parser")
        >>> table.add_path("base", "os.path:basename")
        >>> table.names(), "base" in table
        (['base'], True)
        >>> table.get("base")("/a/b.py")
        'b.py'
        """
        self._claim(name, aliases)
        self._paths[name] = path
        for alias in aliases:
            self._aliases[alias] = name

    def _claim(self, name: str, aliases: tuple[str, ...]) -> None:
        for key in (name, *aliases):
            if key in self._entries or key in self._paths or key in self._aliases:
                raise ValueError(f"{self.kind} {key!r} is registered twice")

    def canonical(self, name: str) -> str:
        """The registered name behind an alias (the name itself otherwise)."""
        return self._aliases.get(name, name)

    def get(self, name: str) -> T:
        """Look up a short name, an alias, or import a dotted path."""
        key = self.canonical(name)
        if key in self._entries:
            return self._entries[key]
        if key in self._paths:
            # Kept in _paths too: a thread that looks the name up meanwhile imports the same object.
            self._entries[key] = _import_dotted(self._paths[key], self.kind)  # type: ignore[assignment]
            return self._entries[key]
        if ":" in name or ("." in name and not name.startswith(".")):
            try:
                return _import_dotted(name, self.kind)
            except UnknownNameError as exc:
                # A dotted name may also be a mistyped short name: list the known ones either way.
                raise UnknownNameError(f"{exc}; known {self.kind} names: {self._known()}") from exc.__cause__
        close = difflib.get_close_matches(name, sorted({*self._entries, *self._paths, *self._aliases}), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownNameError(
            f"unknown {self.kind} {name!r}{hint}; known: {self._known()}; "
            "or give a dotted path such as 'package.module:name'"
        )

    def _known(self) -> str:
        return ", ".join(sorted({*self._entries, *self._paths, *self._aliases})) or "(none)"

    def names(self) -> list[str]:
        return sorted({*self._entries, *self._paths})

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.canonical(name) in (self._entries.keys() | self._paths.keys())

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


def _import_dotted(path: str, kind: str) -> object:
    """Resolve `pkg.mod:attr.sub` or `pkg.mod.attr.sub` (the longest importable module prefix wins)."""
    module_name, sep, attr = path.partition(":")
    if sep:
        module = _import_module(module_name, path, kind)
    else:
        module, module_name, attr = _import_longest_prefix(path, kind)
    if not attr:
        raise UnknownNameError(
            f"{kind} {path!r}: names a module, not an attribute; use 'package.module:name'"
        )
    obj: object = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UnknownNameError(
                f"{kind} {path!r}: module {module_name!r} has no attribute {attr!r}"
            ) from None
    return obj


def _import_module(module_name: str, path: str, kind: str) -> object:
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        raise UnknownNameError(f"{kind} {path!r}: cannot import module {module_name!r}: {exc}") from exc


def _import_longest_prefix(path: str, kind: str) -> tuple[object, str, str]:
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            missing = exc.name or module_name
            if module_name != missing and not module_name.startswith(missing + "."):
                # The module exists but something it imports does not: that is the error to show.
                raise UnknownNameError(f"{kind} {path!r}: importing {module_name!r} failed: {exc}") from exc
            continue  # this prefix is not a module: try a shorter one
        except ImportError as exc:
            raise UnknownNameError(f"{kind} {path!r}: cannot import module {module_name!r}: {exc}") from exc
        return module, module_name, ".".join(parts[cut:])
    raise UnknownNameError(f"{kind} {path!r}: no importable module in it")
