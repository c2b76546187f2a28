"""The package index as of a moment, for every pip of a build: a loopback server that hides later uploads,
except the releases the task itself pins that the moment cannot give.

uv resolves as of `env.exclude_newer` by itself (UV_EXCLUDE_NEWER). pip learned to in 26.0
(`--uploaded-prior-to`); the pip of an environment's era cannot (SWE-bench's conda environments hold the
pip of 2024), and its `python -m pip install` lines would resolve what they leave open as of today.
So a dated build step gives pip this view in place of the index (PIP_INDEX_URL): each project's page as
the upstream index serves it in JSON (PEP 691), less every file uploaded at or after the cutoff (PEP 700
upload times), written back as a PEP 503 HTML page, which every pip since 9 reads (hashes,
requires-python and yanked marks kept). The files themselves are fetched from where the upstream page
says, unchanged.

A spec's own exact pins come first (`dated_view`): SWE-bench's sphinx spec pins tox==4.16.0, uploaded a
week after the date its rules resolve as of. A release the task pins exactly (`name==version` or
`name===version`, in env.packages or on a `pip install` line of env.install) none of whose files the cutoff
lets through is let through itself: the view lists that release's files, and uv gets a date of its own for
that project only (`exclude-newer-package`, which uv reads from a settings file: UV_CONFIG_FILE), just past
the release's last upload. The cutoff is not moved for the step as a whole: everything else, the pinned
release's dependencies too, stays as of the cutoff, so one late pin cannot bring a week (or years) of other
releases into the environment.

Guarantees (tests/sandbox/test_datedindex.py and test_dated_pins.py, against a real index served on
loopback, with real pip and uv, in the jail):

- A file uploaded at or after the cutoff, or with no upload time, is never listed (fail closed), unless
  it belongs to a release an exact pin of the task names and no file of that release precedes the cutoff.
  Then that release's files are listed, and no other release of the project gains anything.
- A release the cutoff already gives (any of its files earlier) is served as before: a build that could
  install its pins before this rule installs the same files, so no cached environment changes meaning.
- An exact pin the index has no release for (or a project it lacks) fails the step before it runs, with
  an error naming the pin, the task field that holds it and the index.
- An upstream that answers without upload times, or not in JSON, is an error page (502) naming the
  index and the fix, which pip prints; a project the index lacks is a 404, as the index would answer.
- The server listens on 127.0.0.1 only, for the duration of one build step (`dated_index`).

Not guaranteed: an install line that names another index or a folder of files (`-i`, `--extra-index-url`,
`--find-links`, inside a requirements file too) bypasses the view, and its pins are neither checked nor let
through; so does a direct URL requirement. Pins inside requirements files (`-r`), and files whose names
hold no version, are not let through. uv's date for a pinned project also shows uv that project's
releases between the cutoff and the pinned one (the pin still decides what is installed). A pin whose
release needs a dependency newer than the cutoff does not resolve: pin that dependency too. In a step
where a pin is let through, uv reads repogym's settings file instead of discovering a uv.toml or
`[tool.uv]` of the repository's own. A pin with an environment marker is let through when found, but
its absence is no error (the marker may not apply).
"""

from __future__ import annotations

import datetime
import html
import json
import re
import ssl
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from repogym.errors import EnvBuildError
from repogym.sandbox.datedpins import ExactPin, LatePin, names_release, write_uv_settings

_JSON = "application/vnd.pypi.simple.v1+json"
_PROJECT = re.compile(r"^/simple/([A-Za-z0-9._-]+)/?$")
_FETCH_TIMEOUT_S = 60


@dataclass(frozen=True)
class DatedView:
    """What the installers of one dated build step read."""

    index_url: str
    """The view's simple index, for PIP_INDEX_URL."""
    uv_config: Path | None = None
    """A uv settings file (UV_CONFIG_FILE) dating each late-pinned project on its own; None: no pin is late."""
    let_through: tuple[str, ...] = ()
    """The pins let through past the cutoff, as the task writes them (said in the build log)."""


def upload_time(text: object) -> datetime.datetime | None:
    """A PEP 700 upload time as an aware datetime (None when missing or unreadable).

    >>> upload_time("2024-07-03T03:29:14.864386Z").isoformat()
    '2024-07-03T03:29:14.864386+00:00'
    >>> upload_time(None) is None
    True
    """
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


def dated_page(
    project: dict, page_url: str, cutoff: datetime.datetime, pinned: Sequence[SpecifierSet] = ()
) -> str:
    """The PEP 503 page of `project` (a PEP 691 JSON page fetched from `page_url`) with only the files
    uploaded before `cutoff`, and those of the releases `pinned` names; raises ValueError when the index
    gives no upload time at all."""
    files = project.get("files")
    if not isinstance(files, list):
        raise ValueError("the page has no 'files' list")
    if files and not any(isinstance(f, dict) and "upload-time" in f for f in files):
        raise ValueError("the index gives no upload times (PEP 700)")
    links = []
    for entry in files:
        if not isinstance(entry, dict) or not entry.get("filename") or not entry.get("url"):
            continue
        moment = upload_time(entry.get("upload-time"))
        if (moment is None or moment >= cutoff) and not names_release(entry["filename"], pinned):
            continue
        url = urllib.parse.urljoin(page_url, entry["url"])
        hashes = entry.get("hashes") or {}
        if isinstance(hashes, dict) and hashes.get("sha256"):
            url = f"{url.split('#', 1)[0]}#sha256={hashes['sha256']}"
        attributes = [f'href="{html.escape(url)}"']
        if entry.get("requires-python"):
            attributes.append(f'data-requires-python="{html.escape(str(entry["requires-python"]))}"')
        yanked = entry.get("yanked")
        if yanked:
            reason = yanked if isinstance(yanked, str) else ""
            attributes.append(f'data-yanked="{html.escape(reason)}"')
        links.append(f"<a {' '.join(attributes)}>{html.escape(entry['filename'])}</a><br/>")
    name = html.escape(str(project.get("name", "")))
    body = "\n".join(links)
    return (
        f"<!DOCTYPE html>\n<html><head><title>Links for {name}</title></head><body>\n{body}\n</body></html>\n"
    )


def fetch_project(page_url: str, context: ssl.SSLContext) -> dict:
    """A project's PEP 691 JSON page; raises urllib's errors, or ValueError when the answer is not JSON."""
    request = urllib.request.Request(page_url, headers={"Accept": _JSON})
    with urllib.request.urlopen(request, timeout=_FETCH_TIMEOUT_S, context=context) as reply:
        kind = reply.headers.get_content_type()
        raw = reply.read()
    if kind != _JSON:
        raise ValueError(f"the index answered {kind}, not PEP 691 JSON")
    project = json.loads(raw)
    if not isinstance(project, dict):
        raise ValueError("the page is not a JSON object")
    return project


def _context(cafile: Path | None) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(cafile) if cafile else None)


def late_pins(
    upstream: str, cutoff: datetime.datetime, pins: Sequence[ExactPin], cafile: Path | None = None
) -> tuple[LatePin, ...]:
    """The pins whose release the cutoff hides whole, read from `upstream` (remembered for the process:
    uploads are only ever added); raises EnvBuildError naming the pin and its field when the index has
    no such release."""
    base = upstream.rstrip("/") + "/"
    key = (base, cutoff, tuple(pins))
    with _LATE_LOCK:
        if key in _LATE:
            return _LATE[key]
    names = sorted({pin.name for pin in pins})
    context = _context(cafile)
    with ThreadPoolExecutor(max_workers=8) as pool:
        pages = dict(
            zip(names, pool.map(lambda name: _pin_page(base, name, pins, context), names), strict=True)
        )
    late = [item for pin in pins if (item := _late(pin, pages[pin.name], f"{base}{pin.name}/", cutoff))]
    with _LATE_LOCK:
        _LATE[key] = tuple(late)
    return tuple(late)


def _late(pin: ExactPin, project: dict | None, page_url: str, cutoff: datetime.datetime) -> LatePin | None:
    """`pin` as a late pin when every file of its release came at or after `cutoff`; None when the cutoff
    gives the release (or, for a pin with a marker, when the index lacks it); else EnvBuildError."""
    raw = (project or {}).get("files")
    files = [f for f in raw if isinstance(f, dict)] if isinstance(raw, list) else []
    times = [
        upload_time(f.get("upload-time")) for f in files if names_release(f.get("filename"), [pin.specifier])
    ]
    if times:
        if any(moment is not None and moment < cutoff for moment in times):
            return None
        return LatePin(pin, max((moment for moment in times if moment is not None), default=cutoff))
    listed = (project or {}).get("versions")  # PEP 700: every release, whatever its files are named
    if pin.marked or (
        isinstance(listed, list) and any(pin.specifier.contains(str(v), prereleases=True) for v in listed)
    ):
        return None
    why = "no such project" if project is None else f"none of its {len(files)} files is of that release"
    raise EnvBuildError(
        f"{pin.field} pins {pin.requirement!r}, a release the index does not have ({page_url}: {why}); fix "
        f"the pin in the task's {pin.field}, or in the env-file rule that sets it"
    )


_LATE: dict[tuple, tuple[LatePin, ...]] = {}
_LATE_LOCK = threading.Lock()


def _pin_page(base: str, name: str, pins: Sequence[ExactPin], context: ssl.SSLContext) -> dict | None:
    """A pinned project's JSON page (None when the index has no such project)."""
    page_url = f"{base}{name}/"
    named = ", ".join(f"{pin.requirement!r} ({pin.field})" for pin in pins if pin.name == name)
    try:
        return fetch_project(page_url, context)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise EnvBuildError(
            f"{page_url} answered {exc.code} {exc.reason}; cannot check the pin {named}"
        ) from exc
    except (OSError, ValueError) as exc:
        raise EnvBuildError(
            f"cannot check the pin {named} against {page_url}: {exc}. A dated build needs an index that "
            "serves PEP 691 JSON with upload times (PyPI does)"
        ) from exc


class _Index(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        upstream: str,
        cutoff: datetime.datetime,
        cafile: Path | None,
        pinned: Mapping[str, tuple[SpecifierSet, ...]],
    ) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.upstream = upstream.rstrip("/") + "/"
        self.cutoff = cutoff
        self.context = _context(cafile)
        self.pinned = pinned


class _Handler(BaseHTTPRequestHandler):
    server: _Index

    def do_GET(self) -> None:
        match = _PROJECT.match(urllib.parse.urlsplit(self.path).path)
        if not match:
            self._send(404, "text/plain", "only /simple/<project>/ pages are served\n")
            return
        name = canonicalize_name(match.group(1))
        page_url = f"{self.server.upstream}{name}/"
        try:
            project = fetch_project(page_url, self.server.context)
            page = dated_page(project, page_url, self.server.cutoff, self.server.pinned.get(name, ()))
        except urllib.error.HTTPError as exc:
            self._send(exc.code, "text/plain", f"{page_url}: {exc.code} {exc.reason}\n")
            return
        except (urllib.error.URLError, OSError) as exc:
            self._send(502, "text/plain", f"{page_url}: not reachable: {exc}\n")
            return
        except ValueError as exc:
            why = (
                f"repogym's dated view of {self.server.upstream}: {exc}; it cannot hide the uploads after "
                f"{self.server.cutoff.isoformat()} from pip. Use an index that serves PEP 691 JSON with "
                "upload times (PyPI does), or a pip >= 26 with the task's exclude_newer unset\n"
            )
            self._send(502, "text/plain", why)
            return
        self._send(200, "text/html; charset=utf-8", page)

    def _send(self, status: int, kind: str, text: str) -> None:
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        return  # pip's own log says what it fetched


def _moment(cutoff: str) -> datetime.datetime:
    moment = upload_time(cutoff)
    if moment is None:
        raise ValueError(f"dated_index: cutoff {cutoff!r} is not an RFC 3339 date-time")
    return moment


@contextmanager
def dated_index(
    upstream: str, cutoff: str, cafile: Path | None = None, late: Sequence[LatePin] = ()
) -> Iterator[str]:
    """Serve `upstream` (a simple index URL) as of `cutoff` (RFC 3339, UTC) on loopback while the block
    runs, the releases of `late` let through; yields the view's index URL for PIP_INDEX_URL."""
    moment = _moment(cutoff)
    pinned: dict[str, tuple[SpecifierSet, ...]] = {}
    for item in late:
        pinned[item.pin.name] = (*pinned.get(item.pin.name, ()), item.pin.specifier)
    server = _Index(upstream, moment, cafile, pinned)
    thread = threading.Thread(target=server.serve_forever, name="repogym-dated-index", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@contextmanager
def dated_view(
    upstream: str, cutoff: str, pins: Sequence[ExactPin] = (), cafile: Path | None = None
) -> Iterator[DatedView]:
    """The dated index of one build step, the task's late pins let through (see the module docstring);
    a pin the index lacks raises EnvBuildError before anything is served."""
    late = late_pins(upstream, _moment(cutoff), pins, cafile) if pins else ()
    with (
        tempfile.TemporaryDirectory(prefix="repogym-dated-") as folder,
        dated_index(upstream, cutoff, cafile, late) as url,
    ):
        settings = write_uv_settings(Path(folder), late) if late else None
        yield DatedView(url, settings, tuple(item.pin.requirement for item in late))
