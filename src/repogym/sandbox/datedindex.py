"""The package index as of a moment, for every pip of a build: a loopback server that hides later uploads.

uv resolves as of `env.exclude_newer` by itself (UV_EXCLUDE_NEWER). pip learned to in 26.0
(`--uploaded-prior-to`); the pip of an environment's era cannot (SWE-bench's conda environments hold the
pip of 2024), and its `python -m pip install` lines would resolve what they leave open as of today.
So a dated build step gives pip this view in place of the index (PIP_INDEX_URL): each project's page as
the upstream index serves it in JSON (PEP 691), less every file uploaded at or after the cutoff (PEP 700
upload times), written back as a PEP 503 HTML page, which every pip since 9 reads (hashes,
requires-python and yanked marks kept). The files themselves are fetched from where the upstream page
says, unchanged.

Guarantees (tests/sandbox/test_datedindex.py, against a real index served on loopback):

- A file uploaded at or after the cutoff, or with no upload time, is never listed (fail closed).
- An upstream that answers without upload times, or not in JSON, is an error page (502) naming the
  index and the fix, which pip prints; a project the index lacks is a 404, as the index would answer.
- The server listens on 127.0.0.1 only, for the duration of one build step (`dated_index`).

Not guaranteed: an install line that names another index or a folder of files (`-i`, `--extra-index-url`,
`--find-links`, inside a requirements file too) bypasses the view; so does a direct URL requirement.
"""

from __future__ import annotations

import datetime
import html
import json
import re
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

_JSON = "application/vnd.pypi.simple.v1+json"
_PROJECT = re.compile(r"^/simple/([A-Za-z0-9._-]+)/?$")
_FETCH_TIMEOUT_S = 60


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


def dated_page(project: dict, page_url: str, cutoff: datetime.datetime) -> str:
    """The PEP 503 page of `project` (a PEP 691 JSON page fetched from `page_url`) with only the files
    uploaded before `cutoff`; raises ValueError when the index gives no upload time at all."""
    files = project.get("files")
    if not isinstance(files, list):
        raise ValueError("the page has no 'files' list")
    if files and not any(isinstance(f, dict) and "upload-time" in f for f in files):
        raise ValueError("the index gives no upload times (PEP 700)")
    links = []
    for entry in files:
        moment = upload_time(entry.get("upload-time")) if isinstance(entry, dict) else None
        if moment is None or moment >= cutoff or not entry.get("filename") or not entry.get("url"):
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


class _Index(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream: str, cutoff: datetime.datetime, cafile: Path | None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.upstream = upstream.rstrip("/") + "/"
        self.cutoff = cutoff
        self.context = ssl.create_default_context(cafile=str(cafile) if cafile else None)


class _Handler(BaseHTTPRequestHandler):
    server: _Index

    def do_GET(self) -> None:
        match = _PROJECT.match(urllib.parse.urlsplit(self.path).path)
        if not match:
            self._send(404, "text/plain", "only /simple/<project>/ pages are served\n")
            return
        name = re.sub(r"[-_.]+", "-", match.group(1)).lower()
        page_url = f"{self.server.upstream}{name}/"
        request = urllib.request.Request(page_url, headers={"Accept": _JSON})
        try:
            with urllib.request.urlopen(
                request, timeout=_FETCH_TIMEOUT_S, context=self.server.context
            ) as reply:
                kind = reply.headers.get_content_type()
                raw = reply.read()
        except urllib.error.HTTPError as exc:
            self._send(exc.code, "text/plain", f"{page_url}: {exc.code} {exc.reason}\n")
            return
        except (urllib.error.URLError, OSError) as exc:
            self._send(502, "text/plain", f"{page_url}: not reachable: {exc}\n")
            return
        try:
            if kind != _JSON:
                raise ValueError(f"the index answered {kind}, not PEP 691 JSON")
            page = dated_page(json.loads(raw), page_url, self.server.cutoff)
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


@contextmanager
def dated_index(upstream: str, cutoff: str, cafile: Path | None = None) -> Iterator[str]:
    """Serve `upstream` (a simple index URL) as of `cutoff` (RFC 3339, UTC) on loopback while the block
    runs; yields the view's index URL for PIP_INDEX_URL."""
    moment = upload_time(cutoff)
    if moment is None:
        raise ValueError(f"dated_index: cutoff {cutoff!r} is not an RFC 3339 date-time")
    server = _Index(upstream, moment, cafile)
    thread = threading.Thread(target=server.serve_forever, name="repogym-dated-index", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
