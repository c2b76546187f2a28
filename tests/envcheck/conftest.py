"""Repositories built to need a system package this machine lacks, and the header or program that is missing.

The missing thing is chosen from the table's own rows by looking at this machine (never a made-up name the
table could not know), so the tests ask what a user's build would ask; where every candidate is installed the
tests say so and skip rather than pass without asking.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from repogym.sandbox.syspackages import NeedKind, package_for
from repogym.validate.doctor import header_present

from ..support.git import init_repo

#: Headers of the table that machines often lack, tried in order.
HEADERS = ("gdal.h", "hdf5.h", "geos_c.h", "proj.h", "krb5.h", "cairo.h", "netcdf.h", "sodium.h", "zmq.h",
           "gpgme.h", "portaudio.h", "sndfile.h", "libpq-fe.h", "yaml.h", "ffi.h")  # fmt: skip
#: Config programs of the table, tried in order.
PROGRAMS = ("gdal-config", "krb5-config", "mysql_config", "geos-config", "nc-config", "curl-config",
            "gpgme-config", "xmlsec1-config", "pcap-config", "h5cc")  # fmt: skip
#: The jail's PATH (sandbox/bwrap.py): builds find their programs there.
JAIL_PATH = "/usr/local/bin:/usr/bin:/bin"

PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "geo"
version = "0.1.0"
requires-python = ">=3.8"

[project.optional-dependencies]
test = ["pytest"]
"""
SETUP_PY = """from setuptools import Extension, setup

setup(package_dir={"": "src"}, packages=["geo"], ext_modules=[Extension("geo._speed", ["src/geo/_speed.c"])])
"""
SPEED_C = """#include <Python.h>
#include <%s>

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speed", NULL, -1, NULL};

PyMODINIT_FUNC PyInit__speed(void) { return PyModule_Create(&module); }
"""
#: A setup.py that asks a library's config program for its flags, as GDAL's, mysqlclient's and gssapi's do.
PROBING_SETUP_PY = """import subprocess

from setuptools import Extension, setup

flags = subprocess.check_output(["%s", "--cflags"], text=True).split()
setup(package_dir={"": "src"}, packages=["geo"],
      ext_modules=[Extension("geo._speed", ["src/geo/_speed.c"], extra_compile_args=flags)])
"""
TESTS = "def test_imports():\n    import geo._speed  # noqa: F401\n"


@pytest.fixture(scope="session")
def absent_header() -> tuple[str, str]:
    """(a header the table knows and this machine lacks, its Debian package)."""
    for header in HEADERS:
        if not header_present(header):
            return header, str(package_for(NeedKind.HEADER, header))
    pytest.skip(f"every candidate header is installed here ({', '.join(HEADERS)}): no build can lack one")


@pytest.fixture(scope="session")
def absent_program() -> tuple[str, str]:
    """(a library's config program the table knows and the jail cannot find, its Debian package)."""
    for program in PROGRAMS:
        if shutil.which(program, path=JAIL_PATH) is None:
            return program, str(package_for(NeedKind.COMMAND, program))
    pytest.skip(f"every candidate program is installed here ({', '.join(PROGRAMS)})")


def c_extension_repo(folder: Path, header: str, setup_py: str = SETUP_PY) -> Path:
    """A one-commit package whose C extension includes `header` (and Python.h); its test imports it."""
    init_repo(folder, {
        "pyproject.toml": PYPROJECT, "setup.py": setup_py, "src/geo/__init__.py": "",
        "src/geo/_speed.c": SPEED_C % header, "tests/test_geo.py": TESTS,
    })  # fmt: skip
    return folder
