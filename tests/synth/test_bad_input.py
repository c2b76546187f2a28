"""Bad input to synth is answered with an error that says what is wrong and what to do."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from repogym.errors import ConfigError, RepoSourceError, UnknownNameError
from repogym.synth.config import SynthConfig
from repogym.synth.methods import resolve_methods
from repogym.synth.synth import synthesize

from ..support.git import git
from ..support.shapes import GEOMETRY, REPO_NAME, TESTS, make_shapes_repo

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("synth-shapes")]


def config(**changes) -> SynthConfig:
    return SynthConfig(repo_name=REPO_NAME, per_function=1, **changes)


def test_a_rev_that_does_not_exist_is_named(shapes_repo, tmp_path):
    with pytest.raises(RepoSourceError, match=r"no commit named 'v9\.9'"):
        synthesize(shapes_repo, config(rev="v9.9"), tmp_path)


def test_a_folder_that_is_not_a_repository(tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(RepoSourceError, match="not a git repository"):
        synthesize(tmp_path / "plain", config(), tmp_path / "store")


def test_an_unknown_method_lists_the_known_ones():
    with pytest.raises(UnknownNameError, match=r"known: .*op_change"):
        resolve_methods(["op_chnage"])
    with pytest.raises(ValidationError, match="unknown method"):
        SynthConfig(methods=["op_chnage"])


def test_a_repo_without_tests_says_so(synth_cache, tmp_path):
    repo = make_shapes_repo(tmp_path / "notests", {"src/shapes/__init__.py": "", "src/shapes/geometry.py": GEOMETRY})
    with pytest.raises(ConfigError, match=r"no result to build on .*synth needs a pytest suite"):
        synthesize(repo, config(), tmp_path / "store")


def test_tests_that_cover_nothing_say_so(synth_cache, tmp_path):
    files = {
        "src/shapes/__init__.py": "",
        "src/shapes/geometry.py": GEOMETRY,
        "tests/test_nothing.py": "def test_truth():\n    assert True\n",
    }
    repo = make_shapes_repo(tmp_path / "uncovered", files)
    with pytest.raises(ConfigError, match="no function is covered by the tests"):
        synthesize(repo, config(), tmp_path / "store")


def test_a_covered_file_that_cannot_be_parsed_is_skipped_and_named(synth_cache, tmp_path):
    """A latin-1 module imports fine (so the tests cover it) but is not UTF-8: synth names it and goes on."""
    repo = make_shapes_repo(
        tmp_path / "latin1",
        {"src/shapes/__init__.py": "", "src/shapes/geometry.py": GEOMETRY, "tests/test_geometry.py": TESTS},
    )
    (repo / "src/shapes/legacy.py").write_bytes(
        b"# -*- coding: latin-1 -*-\ndef greet(n):\n    return 'caf\xe9' * (n + 1)\n"
    )
    (repo / "tests/test_legacy.py").write_text(
        "from shapes.legacy import greet\n\n\ndef test_greet():\n    assert len(greet(1)) == 8\n"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "legacy module")
    result = synthesize(repo, config(), tmp_path / "store")
    assert [path for path, _ in result.funnel.unparsable] == ["src/shapes/legacy.py"]
    assert "not UTF-8" in result.funnel.unparsable[0][1]
    assert result.tasks and all(t.metadata["file"] == "src/shapes/geometry.py" for t in result.tasks)
