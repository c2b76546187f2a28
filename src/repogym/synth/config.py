"""SynthConfig: every knob of `repogym synth`, each documented once, next to its field."""

from __future__ import annotations

from pydantic import Field, field_validator

from repogym.config import ConfigModel
from repogym.sandbox.base import Limits
from repogym.synth.methods import method_groups, method_names

#: Paths never mutated besides test files (`repogym.testpaths`, support files included): packaging, docs
#: and examples (a bug there is not a bug in the code).
DEFAULT_EXCLUDE = (
    "setup.py",
    "docs/",
    "doc/",
    "examples/",
    "benchmarks/",
)


class SynthConfig(ConfigModel):
    """How `repogym synth` picks functions, mutates them and records the candidates."""

    rev: str = "HEAD"
    """The clean repo state the bugs are injected into (a branch, tag or sha)."""
    methods: list[str] = Field(default_factory=list)
    """Bug-injection methods to use (see `repogym synth methods`), or the groups `single_line`, `structural`
    and `class`; empty = all of them."""
    per_function: int = Field(default=10, ge=1)
    """Most candidates drawn per covered function (per class for the class-level methods)."""
    single_line_weight: float = Field(default=3.0, gt=0)
    """How much likelier a single-line method (operator, comparison, boolean, constant, swap) is drawn than a
    structural one; 1.0 draws every method alike."""
    max_tests: int = Field(default=50, ge=1)
    """Most tests run per candidate among those that run the mutated lines."""
    p2p_tests: int = Field(default=10, ge=0)
    """Extra passing tests of the same test files run per candidate, so PASS_TO_PASS has members."""
    max_candidates: int = Field(default=0, ge=0)
    """Write at most this many candidates (a seeded sample of all drawn); 0 = no limit."""
    seed: int = 0
    """Same seed, same repo state: same candidates, same instance ids, same commit shas."""
    exclude: list[str] = Field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    """Paths never mutated besides test files, which never are (`repogym.testpaths.is_test_path` with support
    files); gitignore-like patterns, as `repogym mine`'s test_paths."""
    include: list[str] = Field(default_factory=list)
    """When set, only paths matching one of these patterns are mutated."""
    repo_name: str = ""
    """"owner/name" written in each task's `repo`; empty = from the origin remote, else local/<folder>."""
    python: str = ""
    """Python version of the tasks' environment (e.g. "3.9"); empty = the interpreter repogym runs on."""
    packages: list[str] = Field(default_factory=list)
    """Extra requirements of the environment (coverage is always added: the coverage run needs it)."""
    install: list[str] = Field(default_factory=list)
    """Install commands of the environment; empty = detect from the repository."""
    test_cmd: str = ""
    """Command that runs the tests (pytest's default when empty)."""
    sandbox: str = "bwrap"
    """Where the coverage run happens: 'bwrap' (isolated) or 'local' (NO isolation)."""
    limits: Limits = Field(default_factory=Limits)
    """Resource limits of the coverage run."""

    @field_validator("methods")
    @classmethod
    def _known_methods(cls, names: list[str]) -> list[str]:
        known, groups = method_names(), method_groups()
        unknown = [name for name in names if name not in known and name not in groups]
        if unknown:
            raise ValueError(
                f"unknown method(s) {unknown}; known: {', '.join(known)}; groups: {', '.join(groups)}"
            )
        return list(dict.fromkeys(m for name in names for m in groups.get(name, [name])))

    @field_validator("repo_name")
    @classmethod
    def _owner_slash_name(cls, value: str) -> str:
        if value and (value.count("/") != 1 or value.startswith("/") or value.endswith("/")):
            raise ValueError(f"repo_name must look like 'owner/name', got {value!r}")
        return value
