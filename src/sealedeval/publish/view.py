"""``sealedeval view``: serve the results folder on a loopback port and open report.html.

Like ``inspect view``: one command from a finished build to the report in a browser. report.html
needs no server (it opens from disk too); serving the folder keeps its relative links to
result.json, report.md, the figures and the scorecards working, and gives a URL to share on the
same machine. Bound to 127.0.0.1 only: the results may hold unpublished answers, so the server
is never reachable from another host. The standard library's server, on a thread; Ctrl-C stops.
"""

from __future__ import annotations

import functools
import http.server
import threading
import webbrowser
from pathlib import Path
from typing import Any

from sealedeval.errors import UserError

HOST = "127.0.0.1"
REPORT = "report.html"


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Static files from the results folder, without a log line per request on stderr."""

    def log_message(self, format: str, *args: Any) -> None:
        return

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")  # a rebuilt report shows on reload
        super().end_headers()


def make_server(results: Path, port: int = 0) -> http.server.ThreadingHTTPServer:
    """A server of ``results`` on ``HOST:port`` (0: any free port); a missing report is a user
    error naming the file."""
    if not (results / REPORT).is_file():
        raise UserError(f"{results / REPORT}: missing; run `sealedeval publish` first")
    handler = functools.partial(_Handler, directory=str(results.resolve()))
    try:
        return http.server.ThreadingHTTPServer((HOST, port), handler)
    except OSError as e:
        raise UserError(f"sealedeval view: cannot listen on {HOST}:{port} ({e.strerror})") from None


def serve(results: Path, *, port: int = 0, open_browser: bool = True) -> int:
    """Serve until Ctrl-C; prints the report's URL first (and opens it unless told not to)."""
    server = make_server(results, port)
    url = f"http://{HOST}:{server.server_address[1]}/{REPORT}"
    thread = threading.Thread(target=server.serve_forever, name="sealedeval-view", daemon=True)
    thread.start()
    print(f"serving {results} at {url} (Ctrl-C stops)", flush=True)
    if open_browser:
        webbrowser.open(url)
    try:
        while thread.is_alive():
            thread.join(0.5)
    except KeyboardInterrupt:
        print("stopped", flush=True)
    finally:
        server.shutdown()
        server.server_close()
    return 0
