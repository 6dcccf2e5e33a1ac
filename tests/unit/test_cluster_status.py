"""Reading the standalone master's status page (runtime/spark/cluster.py: alive_workers), served by
a real HTTP server here; a real master is read in tests/spark/test_cluster.py. A master that has
bound its port but not yet written its page (CI 11 saw an empty body) counts no worker yet."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from elastream.runtime.spark.cluster import alive_workers


class StatusPage(BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args) -> None:
        return  # keep the test's output clean


@pytest.fixture
def page() -> Iterator[tuple[str, type[StatusPage]]]:
    handler = type("Page", (StatusPage,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("body", [b"", b'{"workers": [{"state": "AL'])
def test_a_page_not_written_yet_counts_no_worker_and_says_so(page, body):
    url, handler = page
    handler.body = body
    assert alive_workers(url) == (0, f"not JSON yet ({len(body)} bytes)")


def test_only_alive_workers_count(page):
    url, handler = page
    states = ["ALIVE", "DEAD", "ALIVE", "UNKNOWN"]
    handler.body = json.dumps({"workers": [{"state": s} for s in states]}).encode()
    assert alive_workers(url) == (2, "2 ALIVE of 4 workers")


def test_a_master_not_listening_counts_no_worker():
    server = ThreadingHTTPServer(("127.0.0.1", 0), StatusPage)
    port = server.server_address[1]
    server.server_close()  # the port is free: nothing answers
    count, said = alive_workers(f"http://127.0.0.1:{port}")
    assert count == 0 and said.startswith("not reachable")
