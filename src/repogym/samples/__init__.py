"""Small but real Python libraries with a git history of planted bugs and fixes: test data for every stage.

::

    from repogym.samples import generate_repo

    repo = generate_repo(Path("/tmp/calc"), seed=1)   # or: repogym samples generate OUT_DIR
    repo.fixes[0].FAIL_TO_PASS                        # the answer key, see SampleRepo

Each repository is a pip-installable package (setuptools, src/ layout, no
runtime dependencies) with a pytest suite that passes at HEAD. Its history,
deterministic from the seed (same seed, same commit shas), holds:

* planted bugs: an innocent-looking commit breaks code no test covers; later a
  fix changes the code and adds a regression test that fails before it, either
  as one commit or as a PR branch merged with "Merge pull request #N from
  user/branch" (both kinds when there are two fixes or more);
* a feature commit or two (code and tests), refactors (code only), a
  tests-only commit, docs-only commits, bot commits (dependabot bumping
  requirements-dev.txt, github-actions[bot]'s "Bump version to 0.2.0");
* a GitHub token or AWS access key leaked by one fix commit and removed by a
  later commit.

The answer key (`SampleRepo`, written with `write_manifest`) and the PR/issue
export (format: `repogym.samples.prs`) live outside the repository.
"""

from __future__ import annotations

from repogym.samples.generate import generate_repo, generate_suite
from repogym.samples.libraries import LIBRARIES
from repogym.samples.model import (
    CommitInfo,
    CommitKind,
    FixKind,
    PlantedFix,
    PlantedSecret,
    SampleRepo,
    load_manifest,
)
from repogym.samples.prs import read_export

__all__ = [
    "LIBRARIES",
    "CommitInfo",
    "CommitKind",
    "FixKind",
    "PlantedFix",
    "PlantedSecret",
    "SampleRepo",
    "generate_repo",
    "generate_suite",
    "load_manifest",
    "read_export",
]
