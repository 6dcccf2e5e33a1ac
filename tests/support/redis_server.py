"""The tests' redis-server (`LocalRedis`: free port, own folder, AOF with `appendfsync always`) and
its TLS files, skipped without redis-server or openssl, except under CI where that is a failure
(support.tools)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from reproductions.harness.redis_server import SERVER, LocalRedis, TlsFiles
from support.tools import REDIS, require_tool

__all__ = ["LocalRedis", "local_redis", "require_redis_server", "tls_files"]


def require_redis_server() -> None:
    """Skip without redis-server, except where CI requires it (support.tools)."""
    require_tool((SERVER,), REDIS, "redis-server")


def local_redis(
    folder: Path, password: str | None = None, tls: TlsFiles | None = None
) -> LocalRedis:
    """A (not yet started) redis-server for this test, in `folder`."""
    require_redis_server()
    return LocalRedis(folder, password=password, tls=tls)


def tls_files(folder: Path) -> TlsFiles:
    """A throw-away CA and a server certificate for 127.0.0.1 signed by it (openssl)."""
    openssl = require_tool(("openssl",), REDIS, "openssl")  # the TLS tests are Redis tests
    folder.mkdir(parents=True, exist_ok=True)
    ca, ca_key = folder / "ca.crt", folder / "ca.key"
    cert, key, csr = folder / "server.crt", folder / "server.key", folder / "server.csr"
    san = folder / "san.ext"
    san.write_text("subjectAltName = IP:127.0.0.1\n")
    steps = [
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test-ca",
         "-keyout", ca_key, "-out", ca],
        ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", key,
         "-out", csr],
        ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-days", "1",
         "-extfile", san, "-out", cert],
    ]  # fmt: skip
    for step in steps:
        subprocess.run([openssl, *map(str, step)], check=True, capture_output=True)
    return TlsFiles(cert, key, ca)
