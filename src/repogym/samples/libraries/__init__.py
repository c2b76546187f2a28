"""The sample libraries by kind; any `LibrarySpec` given as a dotted path ("pkg.mod:SPEC") works too."""

from __future__ import annotations

from repogym.registry import Registry
from repogym.samples.libraries import calculator, dates, intervals, textutils
from repogym.samples.spec import LibrarySpec

LIBRARIES: Registry[LibrarySpec] = Registry("sample library")
for _module in (calculator, dates, intervals, textutils):
    LIBRARIES.add(_module.SPEC.kind, _module.SPEC)

__all__ = ["LIBRARIES"]
