"""Reading overlayfs upper layers on the host: the flattened tree equals the merged view a jail saw."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from repogym.sandbox.base import Limits, Mounts
from repogym.sandbox.overlaytrees import flatten, only_rewrites
from repogym.sandbox.workspace import EpisodeLayer

_LISTING = (
    "find . -path ./.git -prune -o -print | LC_ALL=C sort | while read p; do "
    'if [ -L "$p" ]; then echo "$p -> $(readlink "$p")"; elif [ -f "$p" ]; then echo "$p $(sha256sum < "$p" | cut -c1-16)"; '
    'else echo "$p/"; fi; done'
)


def _host_listing(root: Path) -> list[str]:
    lines = []
    for path in sorted(root.rglob("*"), key=lambda p: str(p.relative_to(root)).encode()):
        relative = "./" + str(path.relative_to(root))
        if relative == "./.git" or relative.startswith("./.git/"):
            continue
        if path.is_symlink():
            lines.append(f"{relative} -> {path.readlink()}")
        elif path.is_file():
            lines.append(f"{relative} {hashlib.sha256(path.read_bytes()).hexdigest()[:16]}")
        else:
            lines.append(f"{relative}/")
    return lines


@pytest.fixture
def overlay_layer(toy_runtime):
    if not toy_runtime.sandbox.supports_overlay:
        pytest.skip("needs overlayfs episodes (root)")
    layer = EpisodeLayer.create(toy_runtime.pristine, overlay=True)
    yield layer
    layer.close()


def _run(runtime, layer, command: str) -> str:
    mounts = Mounts(workspace=layer.workspace, tmp=layer.tmp, overlay=layer.overlay())
    result = runtime.sandbox.run(command, mounts, Limits(wall_s=60))
    assert result.ok, result.output
    return result.output


def test_flattened_upper_matches_the_merged_view_with_whiteouts_and_opaque_folders(
    toy_runtime, overlay_layer, tmp_path
):
    assert only_rewrites(overlay_layer.root / "upper", toy_runtime.pristine)  # nothing written yet
    _run(
        toy_runtime,
        overlay_layer,
        "rm README.md && rm -rf src/calc && mkdir src/calc && echo new > src/calc/__init__.py && "
        "echo x > tests/extra.txt && ln -s tests/extra.txt link && mkdir -p deep/er && echo y > deep/er/f",
    )
    merged = _run(toy_runtime, overlay_layer, _LISTING).splitlines()
    upper = overlay_layer.root / "upper"
    assert stat.S_ISCHR((upper / "README.md").lstat().st_mode)  # a whiteout
    assert any(name.endswith("overlay.opaque") for name in os.listxattr(upper / "src" / "calc"))
    assert not only_rewrites(upper, toy_runtime.pristine)
    assert flatten(upper, toy_runtime.pristine, tmp_path / "tree")
    assert _host_listing(tmp_path / "tree") == [line for line in merged if line != "./"]
    # Links, not copies: the tree shares the lower's and the upper's files.
    tree_test = tmp_path / "tree" / "tests" / "test_calc.py"
    assert tree_test.stat().st_ino == (toy_runtime.pristine / "tests" / "test_calc.py").stat().st_ino


def test_an_upper_that_rewrote_files_with_their_own_bytes_is_redundant(toy_runtime, overlay_layer):
    _run(
        toy_runtime,
        overlay_layer,
        "cp README.md /tmp/r && cat /tmp/r > README.md && touch tests/test_calc.py",
    )
    assert (overlay_layer.root / "upper" / "README.md").is_file()
    assert only_rewrites(overlay_layer.root / "upper", toy_runtime.pristine)
