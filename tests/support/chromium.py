"""Headless Chromium for report tests, kept off the network.

Only ever pointed at a local file. Where `unshare --net` works (root, as in CI) the browser runs in
a network namespace with no interface at all; everywhere, its own networking is switched off by
flags and a proxy that goes nowhere, so even a reference that slipped into a page cannot leave.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
    "--disable-default-apps", "--no-pings", "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
    "--hide-scrollbars", "--virtual-time-budget=10000",
)  # fmt: skip


def executable() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@functools.cache
def _offline_prefix() -> tuple[str, ...]:
    try:
        subprocess.run(["unshare", "--net", "true"], check=True, capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ()
    return ("unshare", "--net")


def run(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run Chromium on `page` (a local file) with a throwaway profile; stdout is what it printed."""
    exe = executable()
    if exe is None:
        raise RuntimeError("chromium is not installed")
    profile.mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(profile), "LANG": "C.UTF-8"}
    command = [*_offline_prefix(), exe, *FLAGS, f"--user-data-dir={profile}", *args, page.resolve().as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)
