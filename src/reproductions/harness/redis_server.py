"""A local redis-server that elastream starts itself (tests, benchmarks): on a free port of
127.0.0.1, in its own folder, AOF on with `appendfsync always` (what exactly-once needs, see
docs/runtime.md); it can be killed and restarted on the same port and folder."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import redis

SERVER = "redis-server"


@dataclass(frozen=True)
class TlsFiles:
    """A server certificate and key, and the CA certificate that signed it (PEM files)."""

    cert: Path
    key: Path
    ca: Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalRedis:
    """One redis-server process started by this object (and only it is ever stopped)."""

    def __init__(
        self,
        folder: Path,
        appendfsync: str = "always",
        password: str | None = None,
        tls: TlsFiles | None = None,
    ) -> None:
        binary = shutil.which(SERVER)
        if binary is None:
            raise FileNotFoundError(f"{SERVER} is not on PATH (Debian package redis-server)")
        self.binary = binary
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.appendfsync = appendfsync
        self.password = password  # `requirepass`: clients must AUTH with it
        self.tls = tls  # TLS only (no plain port), the server's certificate signed by tls.ca
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        auth = f":{quote(self.password, safe='')}@" if self.password else ""
        if self.tls is not None:
            return f"rediss://{auth}127.0.0.1:{self.port}/0?ca={quote(str(self.tls.ca))}"
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 20.0) -> None:
        """Start (or restart, replaying the AOF) and wait until it answers."""
        cmd = [
            self.binary,
            "--bind", "127.0.0.1",
            "--port", str(self.port),
            "--dir", str(self.folder),
            "--appendonly", "yes",
            "--appendfsync", self.appendfsync,
            "--save", "",
            "--daemonize", "no",
            "--logfile", str(self.folder / "redis.log"),
        ]  # fmt: skip
        if self.password:
            cmd += ["--requirepass", self.password]
        if self.tls is not None:
            i = cmd.index("--port")
            cmd[i : i + 2] = ["--port", "0", "--tls-port", str(self.port)]
            cmd += ["--tls-cert-file", str(self.tls.cert), "--tls-key-file", str(self.tls.key)]
            cmd += ["--tls-ca-cert-file", str(self.tls.ca), "--tls-auth-clients", "no"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        tls = {"ssl": True, "ssl_ca_certs": str(self.tls.ca)} if self.tls is not None else {}
        client = redis.Redis(
            host="127.0.0.1",
            port=self.port,
            password=self.password,
            socket_connect_timeout=1,
            **tls,
        )
        deadline = time.time() + timeout_s
        try:
            while not self._answers(client):
                if self.proc.poll() is not None:
                    raise RuntimeError(f"redis-server exited: {self.log()}")
                if time.time() > deadline:
                    raise RuntimeError(f"redis-server silent for {timeout_s} s: {self.log()}")
                time.sleep(0.05)
        finally:
            client.close()

    @staticmethod
    def _answers(client: redis.Redis) -> bool:
        try:
            return bool(client.ping())
        except redis.exceptions.ConnectionError:  # not listening yet, or still loading the AOF
            return False

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        self.kill(signal.SIGTERM)

    def log(self) -> str:
        path = self.folder / "redis.log"
        return path.read_text()[-2000:] if path.exists() else ""
