"""The HTTP endpoint a run serves while it goes: /metrics (Prometheus text format), /state (the
latest interval as JSON) and / (the live view), behind a bearer token off loopback."""

from __future__ import annotations

import errno
import json
import logging
import os
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any

from elastream.base.auth import authorized, check_bind
from elastream.config.ops import DEFAULT_METRICS_PORT, MetricsSettings
from elastream.report.prom import RunMetrics

log = logging.getLogger(__name__)
TOKEN_ENV = "ELASTREAM_METRICS_TOKEN"


class MetricsServer:
    """A threaded HTTP server over one run's RunMetrics; a context manager."""

    def __init__(self, metrics: RunMetrics, host: str, port: int, token: str | None = None) -> None:
        check_bind(host, token, "the metrics endpoint", "metrics.token or ELASTREAM_METRICS_TOKEN")
        self.metrics, self.token = metrics, token
        self.httpd = ThreadingHTTPServer((host, port), self._handler())
        self.httpd.daemon_threads = True
        self.host, self.port = self.httpd.server_address[:2]
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, name="elastream-metrics", daemon=True
        )

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in str(self.host) else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> MetricsServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> MetricsServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if not authorized(self.headers.get("Authorization"), server.token):
                    self._send(HTTPStatus.UNAUTHORIZED, b"bearer token required\n", "text/plain")
                    return
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    body = server.metrics.exposition()
                    self._send(HTTPStatus.OK, body, server.metrics.content_type())
                elif path == "/state":
                    body = json.dumps(server.metrics.state(), default=str).encode()
                    self._send(HTTPStatus.OK, body, "application/json")
                elif path == "/":
                    self._send(HTTPStatus.OK, live_page(), "text/html; charset=utf-8")
                else:
                    self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain")

            def _send(self, status: HTTPStatus, body: bytes, kind: str) -> None:
                self.send_response(status)
                if status == HTTPStatus.UNAUTHORIZED:
                    self.send_header("WWW-Authenticate", "Bearer")
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                log.debug("metrics endpoint: " + format, *args)

        return Handler


def metrics_token(settings: MetricsSettings) -> str | None:
    """The configured bearer token, else the environment's, else None."""
    if settings.token is not None:
        return settings.token.get_secret_value() or None
    return os.environ.get(TOKEN_ENV) or None


def open_endpoint(metrics: RunMetrics, settings: MetricsSettings) -> MetricsServer:
    """The server on the configured port; on the default port, a free one if it is taken."""
    token = metrics_token(settings)
    if settings.port is not None:
        try:
            return MetricsServer(metrics, settings.host, settings.port, token)
        except OSError as exc:
            raise RuntimeError(
                f"metrics endpoint: cannot listen on {settings.host}:{settings.port} "
                f"({exc.strerror}); choose another --metrics-port, or 0 for none"
            ) from None
    try:
        return MetricsServer(metrics, settings.host, DEFAULT_METRICS_PORT, token)
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        log.warning("metrics: port %d is taken; serving on a free port", DEFAULT_METRICS_PORT)
        return MetricsServer(metrics, settings.host, 0, token)


def live_page() -> bytes:
    """The live view's single HTML page (report/live.html)."""
    return (resources.files("elastream.report") / "live.html").read_bytes()
