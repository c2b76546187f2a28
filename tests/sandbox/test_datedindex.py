"""The dated view of the package index (sandbox/datedindex.py) against a real index served on loopback."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from repogym.sandbox.datedindex import dated_index

_FILES = [
    {
        "filename": "demo-1.0-py3-none-any.whl",
        "url": "../../files/demo-1.0-py3-none-any.whl",
        "hashes": {"sha256": "aa" * 32},
        "requires-python": ">=3.6",
        "upload-time": "2020-01-01T00:00:00.000000Z",
    },
    {
        "filename": "demo-1.1-py3-none-any.whl",
        "url": "https://files.example/demo-1.1-py3-none-any.whl",
        "hashes": {"sha256": "bb" * 32},
        "yanked": "broken <metadata>",
        "upload-time": "2023-05-01T10:00:00Z",
    },
    {
        "filename": "demo-2.0-py3-none-any.whl",
        "url": "https://files.example/demo-2.0-py3-none-any.whl",
        "hashes": {"sha256": "cc" * 32},
        "upload-time": "2024-06-28T00:00:00Z",
    },
    {"filename": "demo-2.1.tar.gz", "url": "https://files.example/demo-2.1.tar.gz", "hashes": {}},
]


@contextmanager
def _upstream(pages: dict[str, tuple[str, bytes]]) -> Iterator[str]:
    """A simple index on loopback answering `pages` (path -> (content type, body)), 404 elsewhere."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            kind, body = pages.get(self.path, ("text/plain", b""))
            self.send_response(200 if self.path in pages else 404)
            self.send_header("Content-Type", kind)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        server.server_close()


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_dated_view_lists_only_files_uploaded_before_the_cutoff():
    page = json.dumps({"name": "demo", "files": _FILES}).encode()
    pages = {"/simple/demo/": ("application/vnd.pypi.simple.v1+json", page)}
    with _upstream(pages) as upstream, dated_index(upstream, "2024-06-28T00:00:00Z") as view:
        status, html = _get(f"{view}Demo/")  # pip asks by any spelling; the index by the normal one
    assert status == 200
    assert "demo-1.0-py3-none-any.whl" in html and "demo-1.1-py3-none-any.whl" in html
    assert "demo-2.0" not in html  # uploaded at the cutoff: after the day exclude_newer names
    assert "demo-2.1" not in html  # no upload time: never listed
    # What pip reads besides the name: the file's absolute URL and hash, requires-python, the yank reason.
    root = upstream.removesuffix("simple/")  # the page's relative URL, made absolute against the page
    assert f'href="{root}files/demo-1.0-py3-none-any.whl#sha256={"aa" * 32}"' in html
    assert 'data-requires-python="&gt;=3.6"' in html
    assert 'data-yanked="broken &lt;metadata&gt;"' in html


def test_index_without_upload_times_is_an_error_naming_the_fix():
    files = [{key: value for key, value in entry.items() if key != "upload-time"} for entry in _FILES]
    page = json.dumps({"name": "demo", "files": files}).encode()
    html_only = b"<html><a href='x.whl'>x.whl</a></html>"
    pages = {
        "/simple/demo/": ("application/vnd.pypi.simple.v1+json", page),
        "/simple/other/": ("text/html", html_only),
    }
    with _upstream(pages) as upstream, dated_index(upstream, "2024-06-28T00:00:00Z") as view:
        no_times, no_times_text = _get(f"{view}demo/")
        not_json, not_json_text = _get(f"{view}other/")
        missing, _ = _get(f"{view}absent/")
    assert (no_times, not_json, missing) == (502, 502, 404)
    assert "no upload times" in no_times_text and "PEP 691 JSON with upload times" in no_times_text
    assert "text/html, not PEP 691 JSON" in not_json_text


def test_cutoff_must_be_a_moment():
    with (
        pytest.raises(ValueError, match="not an RFC 3339"),
        dated_index("http://127.0.0.1:9/simple/", "soon"),
    ):
        pass
