"""The interpreter search is kept per state of the folders it searches (sandbox/interpreters.py): an
interpreter installed after the first search is found by the next one."""

from __future__ import annotations

from repogym.sandbox.interpreters import find_interpreters


def _install(root, version: str) -> None:
    binary = root / "versions" / version / "bin" / f"python{version.rsplit('.', 1)[0]}"
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    binary.chmod(0o755)


def test_interpreter_installed_after_a_search_is_found_by_the_next(tmp_path, monkeypatch):
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    _install(tmp_path, "3.99.1")
    assert "3.99.1" in {i.version for i in find_interpreters()}
    assert find_interpreters() == find_interpreters()  # the same answer while nothing changed
    _install(tmp_path, "3.98.2")
    assert {"3.98.2", "3.99.1"} <= {i.version for i in find_interpreters()}
