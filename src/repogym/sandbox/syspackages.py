"""What a failed build needs from the machine, named as the Debian package to install.

A build that compiles against a C library or runs a tool the machine lacks fails deep in an installer's
log, in one of a few shapes whatever the project: a compiler's "fatal error: gdal.h: No such file or
directory", a shell's "krb5-config: not found", "pg_config executable not found", a linker's "cannot find
-lpq", pkg-config's "Package xmlsec1 was not found in the pkg-config search path", CMake's "Could NOT find
ZLIB". `find_system_needs(log)` reads those shapes and `PACKAGES`, one table of what each Debian package
ships (headers, programs, pkg-config modules, libraries, CMake packages), names the package. What the table
does not know is still named (the header or program, with how to find its package), never dropped and never
guessed; the loose shapes ("could not find X") count only names the table knows, so an installer's own
"could not find a version" is not read as a missing program.

Builds run in the jail, which sees the host's /usr (sandbox/bwrap.py): what is missing there is missing
on the host, and `apt-get install` on the host is the fix.
"""

from __future__ import annotations

import enum
import functools
import re
import string
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "LACKS",
    "PACKAGES",
    "DebianPackage",
    "NeedKind",
    "SystemNeed",
    "describe_needs",
    "find_system_needs",
    "install_line",
    "installed_packages",
    "is_config_script",
    "package_for",
    "packages_of",
]


@dataclass(frozen=True)
class DebianPackage:
    """One Debian package and what of it a build asks for by name."""

    name: str
    headers: tuple[str, ...] = ()
    """Header paths as an `#include` names them; one ending in "/" stands for every header in that folder."""
    commands: tuple[str, ...] = ()
    """Programs (and the tool names installers print: setuptools-rust's "can't find Rust compiler")."""
    pkgconfig: tuple[str, ...] = ()
    """pkg-config modules (the .pc files' names)."""
    libraries: tuple[str, ...] = ()
    """Libraries as the linker's -l names them."""
    cmake: tuple[str, ...] = ()
    """CMake package names (`Could NOT find X`) and CMake's compiler variables."""


# fmt: off
#: Debian (bookworm and later) package names; each row lists what a build asks for by name.
PACKAGES: tuple[DebianPackage, ...] = (
    DebianPackage("build-essential", ("stdio.h", "stdlib.h", "string.h"), ("gcc", "cc", "g++", "c++", "make"),
                  cmake=("CMAKE_C_COMPILER", "CMAKE_CXX_COMPILER")),
    DebianPackage("python3-dev", ("Python.h",), ("python3-config",), ("python3",)),
    DebianPackage("pkg-config", commands=("pkg-config", "pkgconf"), cmake=("PkgConfig",)),
    DebianPackage("cargo", commands=("cargo", "rustc", "rust")),
    DebianPackage("swig", commands=("swig", "swig4.0")),
    DebianPackage("cmake", commands=("cmake",)),
    DebianPackage("ninja-build", commands=("ninja",)),
    DebianPackage("gfortran", commands=("gfortran", "f95", "f77")),
    DebianPackage("git", commands=("git",)),
    DebianPackage("libffi-dev", ("ffi.h", "ffitarget.h"), pkgconfig=("libffi",), libraries=("ffi",)),
    DebianPackage("libssl-dev", ("openssl/",), pkgconfig=("openssl", "libssl", "libcrypto"),
                  libraries=("ssl", "crypto"), cmake=("OpenSSL",)),
    DebianPackage("libpq-dev", ("libpq-fe.h", "postgres_ext.h", "pg_config.h"), ("pg_config",), ("libpq",),
                  ("pq",), ("PostgreSQL",)),
    DebianPackage("default-libmysqlclient-dev", ("mysql.h", "mysql/"), ("mysql_config", "mariadb_config"),
                  ("mysqlclient", "libmariadb", "mariadb"), ("mysqlclient", "mariadb")),
    DebianPackage("libxml2-dev", ("libxml/",), ("xml2-config",), ("libxml-2.0",), ("xml2",), ("LibXml2",)),
    DebianPackage("libxslt1-dev", ("libxslt/", "libexslt/"), ("xslt-config",), ("libxslt", "libexslt"),
                  ("xslt", "exslt")),
    DebianPackage("libxmlsec1-dev", ("xmlsec/",), ("xmlsec1-config",), ("xmlsec1", "xmlsec1-openssl"),
                  ("xmlsec1", "xmlsec1-openssl")),
    DebianPackage("libyaml-dev", ("yaml.h",), pkgconfig=("yaml-0.1",), libraries=("yaml",)),
    DebianPackage("zlib1g-dev", ("zlib.h", "zconf.h"), pkgconfig=("zlib",), libraries=("z",), cmake=("ZLIB",)),
    DebianPackage("libjpeg-dev", ("jpeglib.h", "jerror.h"), pkgconfig=("libjpeg",), libraries=("jpeg",),
                  cmake=("JPEG",)),
    DebianPackage("libpng-dev", ("png.h",), ("libpng-config",), ("libpng",), ("png",), ("PNG",)),
    DebianPackage("libtiff-dev", ("tiffio.h", "tiff.h"), pkgconfig=("libtiff-4",), libraries=("tiff",),
                  cmake=("TIFF",)),
    DebianPackage("libfreetype-dev", ("ft2build.h", "freetype2/"), ("freetype-config",), ("freetype2",),
                  ("freetype",), ("Freetype",)),
    DebianPackage("libgdal-dev", ("gdal.h", "gdal_version.h", "ogr_api.h", "cpl_conv.h"), ("gdal-config",),
                  ("gdal",), ("gdal",), ("GDAL",)),
    DebianPackage("libgeos-dev", ("geos_c.h",), ("geos-config",), ("geos",), ("geos_c",), ("GEOS",)),
    DebianPackage("libproj-dev", ("proj.h", "proj_api.h"), pkgconfig=("proj",), libraries=("proj",),
                  cmake=("PROJ",)),
    DebianPackage("libkrb5-dev", ("krb5.h", "krb5/", "gssapi/", "gssapi.h"), ("krb5-config",),
                  ("krb5", "krb5-gssapi", "mit-krb5", "mit-krb5-gssapi"), ("krb5", "gssapi_krb5")),
    DebianPackage("libldap-dev", ("ldap.h", "lber.h"), pkgconfig=("ldap", "lber"), libraries=("ldap", "lber")),
    DebianPackage("libsasl2-dev", ("sasl/",), pkgconfig=("libsasl2",), libraries=("sasl2",)),
    DebianPackage("libcurl4-openssl-dev", ("curl/",), ("curl-config",), ("libcurl",), ("curl",), ("CURL",)),
    DebianPackage("libsqlite3-dev", ("sqlite3.h",), pkgconfig=("sqlite3",), libraries=("sqlite3",),
                  cmake=("SQLite3",)),
    DebianPackage("libbz2-dev", ("bzlib.h",), libraries=("bz2",), cmake=("BZip2",)),
    DebianPackage("liblzma-dev", ("lzma.h",), pkgconfig=("liblzma",), libraries=("lzma",), cmake=("LibLZMA",)),
    DebianPackage("libzstd-dev", ("zstd.h",), pkgconfig=("libzstd",), libraries=("zstd",)),
    DebianPackage("liblz4-dev", ("lz4.h",), pkgconfig=("liblz4",), libraries=("lz4",)),
    DebianPackage("libsnappy-dev", ("snappy-c.h", "snappy.h"), libraries=("snappy",)),
    DebianPackage("libgmp-dev", ("gmp.h",), pkgconfig=("gmp",), libraries=("gmp",)),
    DebianPackage("libmpfr-dev", ("mpfr.h",), libraries=("mpfr",)),
    DebianPackage("libmpc-dev", ("mpc.h",), libraries=("mpc",)),
    DebianPackage("libhdf5-dev", ("hdf5.h", "H5public.h"), ("h5cc",), ("hdf5",), ("hdf5",), ("HDF5",)),
    DebianPackage("libnetcdf-dev", ("netcdf.h",), ("nc-config",), ("netcdf",), ("netcdf",)),
    DebianPackage("libcairo2-dev", ("cairo.h", "cairo/"), pkgconfig=("cairo",), libraries=("cairo",)),
    DebianPackage("libgirepository1.0-dev", ("girepository.h",), pkgconfig=("gobject-introspection-1.0",)),
    DebianPackage("libglib2.0-dev", ("glib.h", "glib-2.0/"), pkgconfig=("glib-2.0", "gobject-2.0", "gio-2.0"),
                  libraries=("glib-2.0",)),
    DebianPackage("libdbus-1-dev", ("dbus/",), pkgconfig=("dbus-1",)),
    DebianPackage("libsystemd-dev", ("systemd/",), pkgconfig=("libsystemd",), libraries=("systemd",)),
    DebianPackage("libopenblas-dev", ("cblas.h",), pkgconfig=("openblas",), libraries=("openblas",),
                  cmake=("BLAS",)),
    DebianPackage("liblapack-dev", ("lapacke.h",), pkgconfig=("lapack",), libraries=("lapack",),
                  cmake=("LAPACK",)),
    DebianPackage("libboost-dev", ("boost/",), cmake=("Boost",)),
    DebianPackage("libeigen3-dev", ("eigen3/", "Eigen/"), pkgconfig=("eigen3",), cmake=("Eigen3",)),
    DebianPackage("libexpat1-dev", ("expat.h",), pkgconfig=("expat",), libraries=("expat",), cmake=("EXPAT",)),
    DebianPackage("libreadline-dev", ("readline/",), libraries=("readline",)),
    DebianPackage("libncurses-dev", ("curses.h", "ncurses.h"), pkgconfig=("ncurses", "ncursesw"),
                  libraries=("ncurses", "ncursesw")),
    DebianPackage("libsodium-dev", ("sodium.h",), pkgconfig=("libsodium",), libraries=("sodium",)),
    DebianPackage("libzmq3-dev", ("zmq.h",), pkgconfig=("libzmq",), libraries=("zmq",)),
    DebianPackage("libevent-dev", ("event2/",), pkgconfig=("libevent",), libraries=("event",)),
    DebianPackage("libuv1-dev", ("uv.h",), pkgconfig=("libuv",), libraries=("uv",)),
    DebianPackage("libmagic-dev", ("magic.h",), libraries=("magic",)),
    DebianPackage("libcap-dev", ("sys/capability.h",), pkgconfig=("libcap",), libraries=("cap",)),
    DebianPackage("libacl1-dev", ("sys/acl.h", "acl/"), libraries=("acl",)),
    DebianPackage("libfuse3-dev", ("fuse3/",), pkgconfig=("fuse3",), libraries=("fuse3",)),
    DebianPackage("libusb-1.0-0-dev", ("libusb-1.0/",), pkgconfig=("libusb-1.0",), libraries=("usb-1.0",)),
    DebianPackage("libpcap-dev", ("pcap.h", "pcap/"), ("pcap-config",), ("libpcap",), ("pcap",)),
    DebianPackage("portaudio19-dev", ("portaudio.h",), pkgconfig=("portaudio-2.0",), libraries=("portaudio",)),
    DebianPackage("libsndfile1-dev", ("sndfile.h",), pkgconfig=("sndfile",), libraries=("sndfile",)),
    DebianPackage("libgraphviz-dev", ("graphviz/",), pkgconfig=("libcgraph", "libgvc"), libraries=("cgraph", "gvc")),
    DebianPackage("graphviz", commands=("dot", "neato", "twopi", "circo", "fdp", "sfdp")),
    DebianPackage("ffmpeg", commands=("ffmpeg", "ffprobe")),
    DebianPackage("imagemagick", commands=("convert", "magick", "identify", "compare")),
    DebianPackage("ghostscript", commands=("gs",)),
    DebianPackage("inkscape", commands=("inkscape",)),
    DebianPackage("texlive", commands=("latex", "pdflatex", "tex")),
    DebianPackage("texlive-xetex", commands=("xelatex", "xetex")),
    DebianPackage("texlive-luatex", commands=("lualatex", "luatex")),
    DebianPackage("dvipng", commands=("dvipng",)),
    DebianPackage("unixodbc-dev", ("sql.h", "sqlext.h"), ("odbc_config",), ("odbc",), ("odbc",)),
    DebianPackage("freetds-dev", ("sybdb.h", "sybfront.h"), libraries=("sybdb",)),
    DebianPackage("libmemcached-dev", ("libmemcached/",), pkgconfig=("libmemcached",), libraries=("memcached",)),
    DebianPackage("librdkafka-dev", ("librdkafka/",), pkgconfig=("rdkafka",), libraries=("rdkafka",)),
    DebianPackage("libgpgme-dev", ("gpgme.h",), ("gpgme-config",), ("gpgme",), ("gpgme",)),
    DebianPackage("libleveldb-dev", ("leveldb/",), libraries=("leveldb",)),
    DebianPackage("libharfbuzz-dev", ("harfbuzz/",), pkgconfig=("harfbuzz",), libraries=("harfbuzz",)),
)
# fmt: on


class NeedKind(enum.StrEnum):
    """What a build asked for by name."""

    HEADER = "header"
    COMMAND = "command"
    PKGCONFIG = "pkg-config module"
    LIBRARY = "library"
    CMAKE = "CMake package"


@dataclass(frozen=True)
class SystemNeed:
    """One thing a build needed from the machine and did not find there."""

    kind: NeedKind
    name: str
    """As the build named it: "gdal.h", "pg_config", "xmlsec1", "pq", "ZLIB"."""
    package: str | None
    """The Debian package that ships it; None when the table does not know (the name still says what)."""
    evidence: str
    """The log line that showed it."""

    def describe(self) -> str:
        """What is missing, in words: 'header gdal.h not found'.

        >>> SystemNeed(NeedKind.LIBRARY, "pq", "libpq-dev", "").describe()
        'library -lpq not found'
        """
        name = f"-l{self.name}" if self.kind is NeedKind.LIBRARY else self.name
        return f"{self.kind.value} {name} not found"

    def how_to_find(self) -> str:
        """For a need the table does not know: how to find the package that ships it."""
        search = {
            NeedKind.HEADER: f"apt-file search {self.name}",
            NeedKind.COMMAND: f"apt-file search bin/{self.name}",
            NeedKind.PKGCONFIG: f"apt-file search {self.name}.pc",
            NeedKind.LIBRARY: f"apt-file search lib{self.name}.so",
            NeedKind.CMAKE: f"apt-file search {self.name}Config.cmake",
        }[self.kind]
        return f"no Debian package known to repogym; `{search}` names it"


def _index(field: str) -> dict[str, str]:
    index: dict[str, str] = {}
    for package in PACKAGES:
        for name in getattr(package, field):
            index.setdefault(name if field == "headers" else name.lower(), package.name)
    return index


_HEADERS = _index("headers")
_HEADER_BASENAMES = {path.rsplit("/", 1)[-1]: pkg for path, pkg in _HEADERS.items() if not path.endswith("/")}
_COMMANDS = _index("commands")
_PKGCONFIG = _index("pkgconfig")
_LIBRARIES = _index("libraries")
_CMAKE = _index("cmake")
_BY_KIND = {
    NeedKind.COMMAND: _COMMANDS,
    NeedKind.PKGCONFIG: _PKGCONFIG,
    NeedKind.LIBRARY: _LIBRARIES,
    NeedKind.CMAKE: _CMAKE,
}


def package_for(kind: NeedKind, name: str) -> str | None:
    """The Debian package that ships `name` (None when the table does not know it).

    Headers match by their whole path, then by their folder ("libxml/xmlversion.h": "libxml/"), then by
    their file name; programs by name without a cross-compiler prefix or version suffix.

    >>> package_for(NeedKind.HEADER, "libxml/xmlversion.h"), package_for(NeedKind.HEADER, "ffi.h")
    ('libxml2-dev', 'libffi-dev')
    >>> package_for(NeedKind.COMMAND, "x86_64-linux-gnu-gcc"), package_for(NeedKind.COMMAND, "gcc-12")
    ('build-essential', 'build-essential')
    >>> package_for(NeedKind.HEADER, "repogym_absent.h") is None
    True
    """
    if kind is NeedKind.HEADER:
        folder = name.split("/", 1)[0] + "/" if "/" in name else ""
        return _HEADERS.get(name) or _HEADERS.get(folder) or _HEADER_BASENAMES.get(name.rsplit("/", 1)[-1])
    if kind is NeedKind.COMMAND:
        name = _bare_command(name)
    return _BY_KIND[kind].get(name.lower())


def _bare_command(name: str) -> str:
    """A program's name without its folder, cross-compiler triple and version suffix ('gcc-12' -> 'gcc')."""
    name = name.rsplit("/", 1)[-1]
    name = re.sub(r"^\w+-linux-gnu\w*-", "", name)
    return re.sub(r"-\d+(?:\.\d+)*$", "", name)


_HEADER_NAME = r"[\w./+-]+\.(?:h|hh|hpp|hxx)"
_PROGRAM = r"[\w+-]+(?:\.[\w+-]+)*"  # a program name (a full stop after it ends the sentence)
#: Shapes that say a thing is missing whatever its name: every name they find is a need.
_SHAPES: tuple[tuple[NeedKind, re.Pattern[str]], ...] = (
    (NeedKind.HEADER, re.compile(rf"error: ({_HEADER_NAME}): No such file or directory")),  # gcc
    (NeedKind.HEADER, re.compile(rf"fatal error: '({_HEADER_NAME})' file not found")),  # clang
    (NeedKind.COMMAND, re.compile(rf"\bsh: (?:line )?(?:\d+: )?(?:\S*/)?({_PROGRAM}): (?:command )?not found")),
    (NeedKind.COMMAND, re.compile(rf"(?:^|\s)(?:\S*/)?({_PROGRAM}): command not found", re.M)),
    (NeedKind.COMMAND, re.compile(
        rf"(?:unable to execute|command) '(?:[^'\s]*/)?({_PROGRAM})'(?: failed)?: No such file or directory")),
    (NeedKind.PKGCONFIG, re.compile(rf"Package ({_PROGRAM}) was not found in the pkg-config search path")),
    (NeedKind.PKGCONFIG, re.compile(rf"Package '({_PROGRAM})', required by '[^']*', not found")),  # pkgconf
    (NeedKind.PKGCONFIG, re.compile(rf"No package '({_PROGRAM})' found")),
    (NeedKind.PKGCONFIG, re.compile(rf"ERROR: Dependency \"?({_PROGRAM}?)\"? not found")),  # meson
    (NeedKind.LIBRARY, re.compile(rf"(?:cannot find|unable to find library|library not found for) -l({_PROGRAM})")),
    (NeedKind.CMAKE, re.compile(r"Could NOT find (\w+)")),
    (NeedKind.CMAKE, re.compile(r"No (CMAKE_\w+_COMPILER) could be found")),
)  # fmt: skip
#: A name's start: not inside a longer run of name characters. `\b` is also true between "a" and "-", so a
#: line of "a-a-a-..." would start a match at each of its characters and read on to the end each time
#: (quadratic: 43 s for a 20 KB line); test logs, which a candidate writes, are read with these shapes too.
_NAME_START = r"(?<![\w+.-])"
#: Loose shapes ("could not find X"): a need only when the table knows X as a program, or X is a
#: library's config script (`*-config`, `*_config`), so "could not find a version" is nothing.
_LOOSE_COMMAND_SHAPES: tuple[re.Pattern[str], ...] = (
    re.compile(rf"{_NAME_START}({_PROGRAM}) (?:executable |program |binary )?not found", re.I),
    re.compile(rf"(?:can't|cannot|could not|couldn't|unable to|did not) find (?:the |a )?({_PROGRAM})", re.I),
    re.compile(rf"Program '({_PROGRAM})' not found"),  # meson
    re.compile(
        rf"{_NAME_START}({_PROGRAM}),? (?:the [^,\n]*, )?is not installed", re.I
    ),  # maturin: "Cargo, the ..., is"
    re.compile(rf"No such file or directory: '(?:[^'\s]*/)?({_PROGRAM})'"),  # subprocess of a setup.py
)
_CONFIG_SCRIPT = re.compile(r"^[\w.+]+[-_]config$")
#: Words that every shape above holds ("not found", "No such file or directory", "could not find", "is not
#: installed"), lower case: only the lines holding one are read with the shapes.
_HINTS = ("found", "find", "no such file", "not installed")
#: ASCII-only lower-casing: it keeps every character where it was (str.lower does not: "İ" becomes two).
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def is_config_script(name: str) -> bool:
    """Whether `name` is a library's config script (`xml2-config`, `mysql_config`), which a build runs to find
    the library: a loose shape counts one even where the table does not know its package.

    >>> is_config_script("xml2-config"), is_config_script("pg_config"), is_config_script("config")
    (True, True, False)
    """
    return bool(_CONFIG_SCRIPT.match(name))


def find_system_needs(log: str) -> tuple[SystemNeed, ...]:
    """What the build log (or a test log) shows missing from the machine, each once, in the order the log shows
    them. Only the lines that hold one of `_HINTS` are read with the shapes (str.find over the lowered log):
    logs can be megabytes, and a test log is read on every failing grade (0.2 s for sympy's 270 KB, 7 ms so).

    >>> [n.package for n in find_system_needs("src/a.c:2:10: fatal error: gdal.h: No such file or directory")]
    ['libgdal-dev']
    >>> [(n.name, n.package) for n in find_system_needs("Error: pg_config executable not found.")]
    [('pg_config', 'libpq-dev')]
    >>> [n.package for n in find_system_needs("/bin/sh: 1: krb5-config: not found\\n/usr/bin/ld: cannot find -lpq")]
    ['libkrb5-dev', 'libpq-dev']
    >>> find_system_needs("ERROR: Could not find a version that satisfies the requirement geo")
    ()
    """
    log = _hint_lines(log)
    found: dict[tuple[NeedKind, str], SystemNeed] = {}
    spans: list[tuple[int, SystemNeed]] = []

    def add(kind: NeedKind, name: str, where: int) -> None:
        key = (kind, _bare_command(name).lower() if kind is NeedKind.COMMAND else name)
        if key not in found:
            found[key] = SystemNeed(kind, name, package_for(kind, name), _line_at(log, where))
            spans.append((where, found[key]))

    for kind, shape in _SHAPES:
        for match in shape.finditer(log):
            add(kind, match.group(1), match.start())
    for shape in _LOOSE_COMMAND_SHAPES:
        for match in shape.finditer(log):
            name = match.group(1)
            if package_for(NeedKind.COMMAND, name) or is_config_script(name):
                add(NeedKind.COMMAND, name, match.start())
    return tuple(need for _, need in sorted(spans, key=lambda pair: pair[0]))


def _hint_lines(text: str) -> str:
    """The lines of `text` that hold one of `_HINTS`, in order."""
    lowered = text.translate(_ASCII_LOWER)
    starts: set[int] = set()
    for hint in _HINTS:
        at = lowered.find(hint)
        while at >= 0:
            starts.add(lowered.rfind("\n", 0, at) + 1)
            end = lowered.find("\n", at)
            at = lowered.find(hint, end) if end >= 0 else -1
    lines = []
    for start in sorted(starts):
        end = text.find("\n", start)
        lines.append(text[start : end if end >= 0 else len(text)])
    return "\n".join(lines)


def _line_at(text: str, where: int) -> str:
    start = text.rfind("\n", 0, where) + 1
    end = text.find("\n", where)
    return text[start : end if end >= 0 else len(text)].strip()[:200]


def packages_of(needs: Iterable[SystemNeed]) -> tuple[str, ...]:
    """The Debian packages the needs name, each once, in order (needs the table does not know add none)."""
    return tuple(dict.fromkeys(need.package for need in needs if need.package))


def installed_packages(names: Iterable[str]) -> frozenset[str] | None:
    """Which of the Debian packages `names` dpkg records as installed here (the jail sees the host's /usr, so
    the host's packages are the builds' and the test runs'); None where dpkg cannot tell: no dpkg-query, no
    dpkg database (its exit status 2), no answer in 30 s. A package dpkg knows only as "config-files" or
    "not-installed" is not installed.

    >>> installed_packages([]) == frozenset()
    True
    """
    return _installed(tuple(sorted(set(names))))


@functools.lru_cache(maxsize=256)
def _installed(names: tuple[str, ...]) -> frozenset[str] | None:
    if not names:
        return frozenset()
    try:
        done = subprocess.run(
            ["dpkg-query", "--show", "--showformat=${Package} ${db:Status-Status}\\n", *names],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode not in (0, 1):  # 1: some name is not a package dpkg knows, which is an answer
        return None
    return frozenset(
        fields[0]
        for line in done.stdout.splitlines()
        if len(fields := line.split()) == 2 and fields[1] == "installed"
    )


def install_line(packages: Iterable[str]) -> str:
    """The command that installs `packages` on Debian or Ubuntu.

    >>> install_line(["libpq-dev", "swig"])
    'apt-get install libpq-dev swig'
    """
    return "apt-get install " + " ".join(packages)


#: How a message about a failed build introduces `describe_needs`.
LACKS = "the machine lacks"


def describe_needs(needs: Iterable[SystemNeed]) -> str:
    """One line for what a build lacked: each package with what it was needed for, then how to install them.

    >>> describe_needs(find_system_needs("fatal error: 'gdal.h' file not found\\nsh: 1: swig: not found"))
    'libgdal-dev (header gdal.h not found), swig (command swig not found); install: apt-get install libgdal-dev swig'
    """
    needs = list(needs)
    wanted: dict[str, list[str]] = {}
    for need in needs:
        if need.package:
            wanted.setdefault(need.package, []).append(need.describe())
    parts = [f"{package} ({'; '.join(what)})" for package, what in wanted.items()]
    parts += [f"{need.describe()} ({need.how_to_find()})" for need in needs if not need.package]
    return ", ".join(parts) + (f"; install: {install_line(wanted)}" if wanted else "")
