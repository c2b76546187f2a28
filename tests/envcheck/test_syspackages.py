"""A build that lacks a C library or program names the Debian package, whatever project printed the failure.

The shapes are the compilers', shells', linkers', pkg-config's, meson's, CMake's and installers' own; the
table decides the package. Every row of the table is run through the generic shape of its kind, so a rule
that only knew one project's message would fail here for the other rows. Lines that only look alike (an
installer that could not find a version, a data file that is missing) name nothing.
"""

from __future__ import annotations

import pytest

from repogym.sandbox.syspackages import (
    PACKAGES,
    NeedKind,
    describe_needs,
    find_system_needs,
    packages_of,
)
from repogym.validate.diagnose import SetupCause, diagnose_build, env_build_cause

#: Failure lines as real builds print them (the project in brackets), and the package each needs.
REAL_LINES = {
    "src/geo/_speed.c:2:10: fatal error: gdal.h: No such file or directory": "libgdal-dev",
    "psycopg/psycopgmodule.c:28:10: fatal error: 'libpq-fe.h' file not found": "libpq-dev",  # clang
    "src/lxml/includes/etree_defs.h:14:10: fatal error: libxml/xmlversion.h: No such file or directory": "libxml2-dev",
    "c/_cffi_backend.c:15:10: fatal error: ffi.h: No such file or directory": "libffi-dev",
    "ext/_yaml.h:2:10: fatal error: yaml.h: No such file or directory": "libyaml-dev",
    "src/x.c:3:10: fatal error: Python.h: No such file or directory": "python3-dev",
    "build/temp.c:5:10: fatal error: openssl/ssl.h: No such file or directory": "libssl-dev",
    "src/_imaging.c:12:10: fatal error: jpeglib.h: No such file or directory": "libjpeg-dev",
    "src/decode.c:9:10: fatal error: zlib.h: No such file or directory": "zlib1g-dev",
    "Error: pg_config executable not found.": "libpq-dev",  # psycopg2
    "OSError: mysql_config not found": "default-libmysqlclient-dev",  # mysqlclient < 2.2
    "/bin/sh: 1: krb5-config: not found": "libkrb5-dev",  # gssapi
    "Could not find gdal-config. Make sure you have installed the GDAL native library": "libgdal-dev",
    "Package xmlsec1 was not found in the pkg-config search path.": "libxmlsec1-dev",  # xmlsec
    "Package 'xmlsec1', required by 'virtual:world', not found": "libxmlsec1-dev",  # pkgconf's words
    "error: can't find Rust compiler": "cargo",  # setuptools-rust
    "Cargo, the Rust package manager, is not installed or is not on PATH.": "cargo",  # maturin
    "bash: line 1: rustc: command not found": "cargo",
    "error: command 'gcc' failed: No such file or directory": "build-essential",  # setuptools
    "unable to execute 'x86_64-linux-gnu-gcc': No such file or directory": "build-essential",  # distutils
    "error: command 'swig' failed: No such file or directory": "swig",
    "Did not find pkg-config by name 'pkg-config'": "pkg-config",  # meson
    "FileNotFoundError: [Errno 2] No such file or directory: 'pkg-config'": "pkg-config",
    'ERROR: Dependency "libxml-2.0" not found, tried pkgconfig': "libxml2-dev",  # meson
    "/usr/bin/ld: cannot find -lpq: No such file or directory": "libpq-dev",
    "CMake Error: Could NOT find ZLIB (missing: ZLIB_LIBRARY ZLIB_INCLUDE_DIR)": "zlib1g-dev",
    "No CMAKE_C_COMPILER could be found.": "build-essential",
}

#: Lines of failed builds that lack nothing from the machine.
UNRELATED_LINES = (
    "ERROR: Could not find a version that satisfies the requirement geo==9 (from versions: none)",
    "FileNotFoundError: [Errno 2] No such file or directory: 'README.md'",
    "  ╰─▶ Because geo was not found in the package registry and you require geo, we can conclude ...",
    "E   ModuleNotFoundError: No module named 'yaml'",
    "error: command '/usr/bin/gcc' failed with exit code 1",
    "src/a.c:10:5: error: 'PyObject' has no member named 'ob_refcnt'",
    "warning: no files found matching '*.txt' under directory 'docs'",
)


@pytest.mark.parametrize("line", list(REAL_LINES), ids=lambda line: line[:48])
def test_a_real_failure_line_names_its_debian_package(line):
    assert packages_of(find_system_needs(line)) == (REAL_LINES[line],)


@pytest.mark.parametrize("line", UNRELATED_LINES, ids=lambda line: line[:48])
def test_a_line_that_lacks_nothing_from_the_machine_names_nothing(line):
    assert find_system_needs(line) == ()


def _rows(kind: str) -> list[tuple[str, str]]:
    return [(name, package.name) for package in PACKAGES for name in getattr(package, kind)]


SHAPES = {
    "headers": "native/core.c:41:10: fatal error: {}: No such file or directory",
    "commands": "/bin/sh: 1: {}: not found",
    "pkgconfig": "Package {} was not found in the pkg-config search path.",
    "libraries": "/usr/bin/ld: cannot find -l{}: No such file or directory",
    "cmake": "CMake Error at CMakeLists.txt:3 (find_package):\n  Could NOT find {} (missing: X)",
}


@pytest.mark.parametrize("kind", list(SHAPES))
def test_every_row_of_the_table_is_found_through_the_generic_shape_of_its_kind(kind):
    """A folder entry ("libxml/") stands for any header in it; every name maps to its own row's package."""
    wrong = []
    for name, package in _rows(kind):
        asked = f"{name}any.h" if name.endswith("/") else name
        found = packages_of(find_system_needs(SHAPES[kind].format(asked)))
        if found != (package,):
            wrong.append(f"{asked}: {found} instead of {package}")
    assert not wrong, wrong


def test_what_the_table_does_not_know_is_named_with_how_to_find_its_package():
    needs = find_system_needs(
        "src/x.c:1:10: fatal error: repogym_unheard_of.h: No such file or directory\n"
        "/bin/sh: 1: frobnicate-config: not found\n"
    )
    assert [(need.kind, need.name, need.package) for need in needs] == [
        (NeedKind.HEADER, "repogym_unheard_of.h", None),
        (NeedKind.COMMAND, "frobnicate-config", None),
    ]
    text = describe_needs(needs)
    assert "header repogym_unheard_of.h not found" in text and "apt-file search repogym_unheard_of.h" in text
    assert "install:" not in text  # nothing known to install: no apt-get line that would guess


def test_needs_are_reported_once_in_log_order_with_the_line_that_shows_them():
    log = (
        "   Building geo @ file:///testbed\n"
        "src/a.c:1:10: fatal error: gdal.h: No such file or directory\n"
        "sh: 1: swig: not found\n"
        "src/b.c:1:10: fatal error: gdal.h: No such file or directory\n"
    )
    needs = find_system_needs(log)
    assert [need.name for need in needs] == ["gdal.h", "swig"]
    assert needs[0].evidence == "src/a.c:1:10: fatal error: gdal.h: No such file or directory"
    assert describe_needs(needs).endswith("; install: apt-get install libgdal-dev swig")


def test_a_build_error_names_the_package_even_when_the_compiler_line_is_far_above_the_tail(tmp_path):
    """diagnose_build reads the whole build log the message names: the message's tail is the installer's."""
    log = tmp_path / "build.log"
    log.write_text("fatal error: hdf5.h: No such file or directory\n" + "noise\n" * 500)
    message = f"environment build for o/r failed (exit code 1); log {log}; tail:\nnoise\nnoise"
    found = diagnose_build(message)
    assert found.cause is SetupCause.SYSTEM_PACKAGE_MISSING
    assert found.detail == "libhdf5-dev (header hdf5.h not found); install: apt-get install libhdf5-dev"
    assert env_build_cause(message).startswith("the machine lacks: libhdf5-dev")


def test_a_build_that_lacks_nothing_keeps_the_installers_words(tmp_path):
    log = tmp_path / "build.log"
    log.write_text("ERROR: Could not find a version that satisfies the requirement geo==9\n")
    found = diagnose_build(f"environment build for o/r failed (exit code 1); log {log}; tail:\n...")
    assert found.cause is SetupCause.INSTALL_FAILED
    assert found.detail == "ERROR: Could not find a version that satisfies the requirement geo==9"


def test_no_installed_python_is_its_own_cause():
    message = (
        "the commit needs Python >=3.99 (requires-python), none installed (installed: 3.11.7); install one"
    )
    assert diagnose_build(message).cause is SetupCause.NO_MATCHING_PYTHON


def test_installed_packages_reads_dpkgs_status_and_says_when_dpkg_cannot_tell(tmp_path, monkeypatch):
    """Only "installed" counts (a package removed but for its config files, or known and not installed, does
    not); an exit status of 2 (no dpkg database) or no dpkg-query at all means dpkg cannot tell: None."""
    from repogym.sandbox import syspackages

    fake = tmp_path / "dpkg-query"
    fake.write_text(
        "#!/bin/sh\n"
        "printf 'graphviz installed\\nffmpeg config-files\\ntexlive not-installed\\n\\nodd\\n'\n"
        'echo "dpkg-query: no packages found matching absent" >&2\nexit ${FAKE_STATUS:-1}\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    syspackages._installed.cache_clear()
    assert syspackages.installed_packages(["graphviz", "ffmpeg", "texlive", "absent"]) == {"graphviz"}
    monkeypatch.setenv("FAKE_STATUS", "2")
    syspackages._installed.cache_clear()
    assert syspackages.installed_packages(["graphviz", "ffmpeg"]) is None
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    syspackages._installed.cache_clear()
    assert syspackages.installed_packages(["graphviz"]) is None
    syspackages._installed.cache_clear()
