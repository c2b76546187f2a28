"""A dated build never hides the spec's own exact pins (sandbox/datedindex.py, sandbox/datedpins.py).

The hole: SWE-bench's sphinx spec pins tox==4.16.0, uploaded a week after the date its rules resolve as of,
so every sphinx build failed: the cutoff hid a release the task itself names. Shown against a real package
index served on loopback (wheels made here, PEP 691 JSON with upload times), with the pip of an era (the
interpreter's own, which cannot filter by date) and uv, in the jail, through `run_build_step`.

The index: pkg 1.0 (2020), 1.5 (a day after the cutoff), 2.0 (a week after, needs dep), 3.0 (later);
dep 1.0 (2020), 2.0 (after the cutoff); half 1.0, its sdist before the cutoff and its wheel after.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import threading
import urllib.request
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import uv

from repogym.data import builtin_specs
from repogym.errors import EnvBuildError
from repogym.sandbox.base import Bind, Mounts
from repogym.sandbox.bwrap import SANDBOX_UID, BwrapSandbox, is_root
from repogym.sandbox.datedindex import dated_view
from repogym.sandbox.datedpins import exact_pins, pip_install_arguments
from repogym.sandbox.envbuild import UV_JAIL, run_build_step
from repogym.sandbox.envkey import exclude_newer_timestamp
from repogym.sandbox.interpreters import pick_interpreter
from repogym.task import EnvSpec, Task

_DAY = "2024-06-27"  # exclude_newer: the index as of the end of that day
_CUTOFF = exclude_newer_timestamp(_DAY)
_RELEASES = {  # project -> (version, upload time, requirements)
    "pkg": [
        ("1.0", "2020-01-01T00:00:00Z", ["dep"]),
        ("1.5", "2024-06-29T00:00:00Z", ["dep"]),
        ("2.0", "2024-07-03T10:00:00.500000Z", ["dep>=1"]),
        ("3.0", "2024-08-01T00:00:00Z", ["dep"]),
    ],
    "dep": [("1.0", "2020-01-01T00:00:00Z", []), ("2.0", "2024-07-01T00:00:00Z", [])],
}


def _wheel(folder: Path, name: str, version: str, requires: list[str]) -> Path:
    """A pure-Python wheel whose module says its version."""
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f"VERSION = {version!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    buffer, record = io.BytesIO(), []
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(text.encode())}")
        archive.writestr(f"{info}/RECORD", "\n".join([*record, f"{info}/RECORD,,"]) + "\n")
    path = folder / f"{name}-{version}-py3-none-any.whl"
    path.write_bytes(buffer.getvalue())
    return path


def _entry(path: Path, uploaded: str) -> dict:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return {
        "filename": path.name,
        "url": f"../../files/{path.name}",
        "hashes": {"sha256": digest},
        "upload-time": uploaded,
    }


@pytest.fixture(scope="module")
def upstream(tmp_path_factory) -> Iterator[str]:
    """The index on loopback: PEP 691 JSON pages with upload times, and the files they name."""
    folder = tmp_path_factory.mktemp("index")
    pages: dict[str, list[dict]] = {}
    for name, releases in _RELEASES.items():
        pages[name] = [_entry(_wheel(folder, name, v, reqs), when) for v, when, reqs in releases]
    sdist = folder / "half-1.0.tar.gz"
    sdist.write_bytes(b"not built here")
    pages["half"] = [
        _entry(sdist, "2024-01-01T00:00:00Z"),
        _entry(_wheel(folder, "half", "1.0", []), "2024-07-02T00:00:00Z"),
    ]
    installer = folder / "legacy-setup.exe"  # a name that holds no version: the page's versions list says it
    installer.write_bytes(b"MZ")
    pages["legacy"] = [_entry(installer, "2024-07-02T00:00:00Z")]
    versions = {"legacy": ["1.0"]}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            name = self.path.removeprefix("/simple/").strip("/")
            if self.path.startswith("/simple/") and name in pages:
                kind = "application/vnd.pypi.simple.v1+json"
                body = json.dumps(
                    {
                        "meta": {"api-version": "1.1"},
                        "name": name,
                        "files": pages[name],
                        "versions": versions.get(name, []),
                    }
                ).encode()
            elif self.path.startswith("/files/") and (folder / self.path[7:]).is_file():
                kind, body = "application/octet-stream", (folder / self.path[7:]).read_bytes()
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_HEAD(self) -> None:  # uv asks first whether a file serves ranges: answer as a plain server may
            self.send_error(405)

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        server.server_close()


def _page(view: str, name: str) -> str:
    with urllib.request.urlopen(f"{view}{name}/", timeout=10) as reply:
        return reply.read().decode()


def test_dated_view_lets_a_late_pinned_release_through_and_nothing_else(upstream):
    pins = exact_pins(["pkg==2.0", "half==1.0"], [])
    with dated_view(upstream, _CUTOFF, pins) as view:
        pkg, dep, half = (_page(view.index_url, name) for name in ("pkg", "dep", "half"))
        settings = view.uv_config.read_text() if view.uv_config else ""
    assert re.findall(r">pkg-([\d.]+)-py3", pkg) == ["1.0", "2.0"]  # not 1.5 nor 3.0, both after the cutoff
    assert re.findall(r">dep-([\d.]+)-py3", dep) == ["1.0"]  # pkg 2.0's dependency stays as of the cutoff
    # half 1.0 has a file the cutoff gives: served as before the rule (the later wheel stays hidden).
    assert "half-1.0.tar.gz" in half and "half-1.0-py3" not in half
    assert view.let_through == ("pkg==2.0",)
    # uv's own date for pkg alone: just past the last upload of 2.0's files.
    assert 'exclude-newer-package = { "pkg" = "2024-07-03T10:00:01Z" }' in settings


def test_exact_pins_are_read_from_packages_and_pip_install_lines():
    pins = exact_pins(
        [
            "numpy==1.23.0",
            "pytest>=7",
            "scipy==1.*",
            "Sphinx[test]==7.1.0",
            'six==1.16.0; python_version<"3"',
        ],
        [
            "uv pip install --python /opt/x 'tox===4.16.0' --constraint c.txt",
            "python -m pip install -r requirements.txt && python setup.py develop",
            "pip3 download pkg==1.0; echo pkg==2.0",  # neither installs anything
        ],
    )
    assert [(p.requirement, p.name, p.field, p.marked) for p in pins] == [
        ("numpy==1.23.0", "numpy", "env.packages", False),
        ("Sphinx[test]==7.1.0", "sphinx", "env.packages", False),
        ('six==1.16.0; python_version<"3"', "six", "env.packages", True),
        ("tox===4.16.0", "tox", "env.install[0]", False),
    ]


def test_every_pin_of_swebench_specs_is_read_as_one():
    """The rule is general, not sphinx's: every `==` requirement of every SWE-bench rule, in its packages or on
    its pip install lines, is an exact pin the dated view would let through; sphinx's tox among them."""
    for rule in builtin_specs("swebench").rules:
        packages, install = rule.fields.get("packages", []), rule.fields.get("install", [])
        written = [text for text in packages if "==" in text]
        written += [text for command in install for text in pip_install_arguments(command) if "==" in text]
        assert [pin.requirement for pin in exact_pins(packages, install)] == written, rule.where
        if rule.repo == "sphinx-doc/sphinx":
            assert "tox==4.16.0" in written


@pytest.fixture()
def jail(tmp_path, upstream, monkeypatch):
    """What a build step needs to run here: the host index set to the loopback one (uv and pip read it), a
    private uv cache, and a runner of `run_build_step` with the interpreter repogym runs on."""
    for variable in ("UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_INDEX", "PIP_EXTRA_INDEX_URL"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("UV_DEFAULT_INDEX", upstream)
    monkeypatch.setenv("PIP_INDEX_URL", upstream)
    for name in ("repo", "tmp", "uv-cache"):
        (tmp_path / name).mkdir()
        if is_root():
            os.chown(tmp_path / name, SANDBOX_UID, SANDBOX_UID)
    interpreter = pick_interpreter("")

    def run(env: EnvSpec, script: str) -> tuple[str, str]:
        task = Task(instance_id="local__pins-1", repo="local/pins", base_commit="0" * 40, patch="", env=env)
        mounts = Mounts(
            workspace=tmp_path / "repo",
            tmp=tmp_path / "tmp",
            interpreter_prefix=interpreter.prefix,
            network=True,
            extra=(
                Bind(Path(uv.find_uv_bin()), UV_JAIL),
                Bind(tmp_path / "uv-cache", "/opt/repogym/uv-cache", writable=True),
            ),
        )
        log = tmp_path / "build.log"
        result = run_build_step(
            BwrapSandbox(), task, script.replace("{python}", str(interpreter.executable)), mounts, log, "pins"
        )
        return result.output, log.read_text()

    return run


def _both(requirement: str) -> str:
    """Install `requirement` with the interpreter's own pip (which cannot filter by date) and with uv."""
    return (
        "set -e\n"
        f"{{python}} -m pip install --no-cache-dir --disable-pip-version-check --target /tmp/pip '{requirement}'\n"
        f"{UV_JAIL} pip install --python {{python}} --target /tmp/uv '{requirement}'\n"
        "echo PIP: $(ls /tmp/pip | grep dist-info)\n"
        "echo UV: $(ls /tmp/uv | grep dist-info)\n"
    )


def test_dated_build_installs_the_specs_late_pin_with_pip_and_uv(jail):
    """pkg==2.0 came after the cutoff: both installers get it, and its dependency as of the cutoff."""
    env = EnvSpec(packages=("pkg==2.0",), exclude_newer=_DAY)
    output, log = jail(env, _both("pkg==2.0"))
    assert "Looking in indexes: http://127.0.0.1:" in output  # pip read the dated view
    assert "PIP: dep-1.0.dist-info pkg-2.0.dist-info" in output
    assert "UV: dep-1.0.dist-info pkg-2.0.dist-info" in output
    assert "# exact pins let through past exclude_newer: pkg==2.0" in log


def test_dated_build_without_the_pin_stays_as_of_the_cutoff(jail):
    """The same index for a task that pins nothing: pkg resolves to 1.0, for pip and uv alike."""
    output, log = jail(EnvSpec(packages=("pkg",), exclude_newer=_DAY), _both("pkg"))
    assert "PIP: dep-1.0.dist-info pkg-1.0.dist-info" in output
    assert "UV: dep-1.0.dist-info pkg-1.0.dist-info" in output
    assert "let through" not in log


def test_dated_build_a_pin_the_index_lacks_names_the_pin_and_its_field(jail, tmp_path):
    """A pin no release answers fails the step before it runs, naming the pin and where the task sets it."""
    lacking = EnvSpec(install=("python -m pip install -e . pkg==9.9",), exclude_newer=_DAY)
    with pytest.raises(
        EnvBuildError, match=r"env\.install\[0\] pins 'pkg==9\.9', a release the index does not have"
    ):
        jail(lacking, "touch /tmp/ran")
    no_project = EnvSpec(packages=("nosuch==1.0",), exclude_newer=_DAY)
    with pytest.raises(EnvBuildError, match=r"env\.packages pins 'nosuch==1\.0'.*no such project"):
        jail(no_project, "touch /tmp/ran")
    assert not (tmp_path / "tmp" / "ran").exists()


def test_a_release_whose_file_names_hold_no_version_is_no_missing_pin(upstream):
    """The index lists legacy 1.0 (PEP 700 versions) but its only file's name says no version: the pin is
    not called missing (the build goes on as before the rule), and nothing is let through for it."""
    with dated_view(upstream, _CUTOFF, exact_pins(["legacy==1.0"], [])) as view:
        assert view.let_through == () and view.uv_config is None
    with (
        pytest.raises(EnvBuildError, match=r"'legacy==2\.0', a release the index does not have"),
        dated_view(upstream, _CUTOFF, exact_pins(["legacy==2.0"], [])),
    ):
        pass
