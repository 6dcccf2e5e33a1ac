"""A real redis-server for the tests: on a free port of 127.0.0.1, in its own folder, AOF on with
`appendfsync always`; it can be killed and restarted on the same port and folder."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
import redis

SERVER = "redis-server"


def require_redis_server() -> str:
    """The redis-server binary; skip without one, except under CI (CI=true, or
    ELASTREAM_REQUIRE_REDIS=1 as .ci/run sets), where that is a failure."""
    binary = shutil.which(SERVER)
    if binary is None:
        message = f"{SERVER} is not on PATH (Debian package redis-server; .ci/run installs it)"
        required = os.environ.get("ELASTREAM_REQUIRE_REDIS") == "1"
        if required or os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return binary


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """One redis-server process this test started (and only it is ever stopped)."""

    def __init__(self, folder: Path) -> None:
        self.binary = require_redis_server()
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 20.0) -> None:
        cmd = [
            self.binary,
            "--bind", "127.0.0.1",
            "--port", str(self.port),
            "--dir", str(self.folder),
            "--appendonly", "yes",
            "--appendfsync", "always",
            "--save", "",
            "--daemonize", "no",
            "--logfile", str(self.folder / "redis.log"),
        ]  # fmt: skip
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=1)
        deadline = time.time() + timeout_s
        while True:
            try:
                if client.ping():
                    client.close()
                    return
            except redis.exceptions.ConnectionError:  # not listening, or still loading the AOF
                if self.proc.poll() is not None:
                    raise RuntimeError(f"redis-server exited: {self.log()}") from None
                if time.time() > deadline:
                    raise RuntimeError(f"redis-server did not answer: {self.log()}") from None
                time.sleep(0.05)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        self.kill(signal.SIGTERM)

    def log(self) -> str:
        path = self.folder / "redis.log"
        return path.read_text()[-2000:] if path.exists() else ""
