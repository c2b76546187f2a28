"""Attacks on what the host reads back from the jail: paths the jail can plant (links, FIFOs) where the host
later reads a patch or a tool's result, and host paths the jail can learn to aim at.

Each test is named after its attack and runs in a real bwrap episode; a contained attack asserts what a user
would notice (no host file in what the host returns, no hang). An attack that works today is marked
`xfail(strict=True, reason="HOLE: ...")`: the suite stays green, the hole stays visible, and the mark must
be removed (strict) the day the hole is closed.
"""

from __future__ import annotations

import time

import pytest

from repogym.sandbox.base import Limits

# A git clean filter in the jail's own ~/.gitconfig (HOME=/tmp/home is the episode's tmp). Episode.diff ran
# `git add -A` with it, so the filter ran inside the diff command and replaced $DIFF_DIR/patch with a link
# to a path the host will read. The jail creates that path in its own /tmp so the diff's redirect succeeds.
# Each run leaves a mark in the jail's /tmp: the test checks the filter is live for the jail's own git.
_DIFF_FILTER = """#!/bin/sh
echo ran >> /tmp/filter-ran
mkdir -p {parent} 2>/dev/null
ln -sf {target} /opt/repogym/diff/patch 2>/dev/null
cat
"""


def test_diff_does_not_follow_links_planted_by_a_git_filter(episode, host_secret):
    """Was a hole at 4021a70: Episode.diff read scratch/patch with read_text(), following a link a git
    filter from the jail's ~/.gitconfig planted during `git add -A` (any host file under /tmp became the patch).
    The diff's git now reads none of the jail's configuration, and reads the patch without following links:
    the episode's change is reported as it is, and no host file."""
    episode.put_file("filter.sh", _DIFF_FILTER.format(parent=host_secret.parent, target=host_secret))
    setup = (
        "cp /opt/repogym/in/filter.sh /tmp/filter.sh && chmod +x /tmp/filter.sh && "
        "printf '* filter=evil\\n' > /tmp/attrs && "
        "git config --global core.attributesFile /tmp/attrs && "
        "git config --global filter.evil.clean /tmp/filter.sh && "
        "echo 'x = 1' >> src/calc/__init__.py"
    )
    assert episode.run(setup).exit_code == 0
    patch, _ = episode.diff()
    assert "TOP-SECRET-HOST-VALUE" not in patch
    assert "+x = 1" in patch, patch
    # The attack was armed: the filter is live for the jail's own git (`git add` runs it).
    armed = episode.run("git add -A && cat /tmp/filter-ran")
    assert armed.ok and "ran" in armed.output, armed.output


def test_diff_with_a_fifo_in_the_workspace_finishes(episode):
    result = episode.run("mkfifo pipe && mkfifo src/calc/pipe.py && echo 'x = 1' >> README.md")
    assert result.exit_code == 0, result.output
    started = time.monotonic()
    patch, run = episode.diff(limits=Limits(wall_s=20))
    assert time.monotonic() - started < 15
    assert run.ok and "+x = 1" in patch


def test_file_tool_result_link_does_not_show_a_host_file(episode, toy_task, tmp_path):
    """Was a hole at 4021a70: file_op read out/fileop-N.result.json (a predictable name) with read_text(),
    so a link planted there with bash showed a host file to the agent (a FIFO there hung the step)."""
    from repogym.env.options import EnvOptions
    from repogym.env.tools import ToolContext, install_fileops, view_file

    host_json = tmp_path / "host-settings.json"
    host_json.write_text('{"ok": true, "text": "TOP-SECRET-HOST-VALUE"}')
    install_fileops(episode)
    context = ToolContext(episode, toy_task, EnvOptions(tool_timeout_s=10))
    planted = episode.run(f"ln -s {host_json} /opt/repogym/out/fileop-0.result.json")
    assert planted.exit_code == 0
    output = view_file(context, "README.md")
    assert "TOP-SECRET-HOST-VALUE" not in output.text
    # The attack hit: the tool's result went to the planted link (dangling in the jail), and the step failed.
    assert output.error and "fileop-0.result.json" in output.text, output
    # Control: the link is gone with that step's files, and the same call now shows the file.
    assert "A tiny calculator." in view_file(context, "README.md").text


@pytest.mark.xfail(
    strict=True,
    reason="HOLE (low; documented in bwrap.py since e556d02): /proc/self/mountinfo shows host paths (the "
    "cache root, the episode's folder, the pristine checkout) as bind sources and overlay options, which "
    "tells a jail where to aim anything the host might later read",
)
def test_mount_table_does_not_name_host_cache_paths(episode):
    from repogym.sandbox.cache import cache_root

    table = episode.run("cat /proc/self/mountinfo /proc/self/mounts").output
    assert str(cache_root()) not in table
    assert str(episode.layer.root) not in table
