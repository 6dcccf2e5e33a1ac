"""A Spark standalone cluster on this machine, from the pip-installed PySpark: a master and N
workers started with `spark-class`, their process ids kept in a state file so that `down` stops
exactly what `up` started. RPC authentication (`spark.authenticate`) is on by default: a shared
secret generated at `up`, kept in a Spark properties file of mode 0600 beside the state file and
given to the master, the workers and (runtime/spark/session.py) the driver."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
HOST = "127.0.0.1"
DEFAULT_STATE = Path.home() / ".elastream" / "cluster.json"
AUTH_FILE = "spark-auth.conf"  # the shared secret, as a Spark properties file (mode 0600)
SECRET_BYTES = 32


class ClusterError(RuntimeError):
    """The cluster could not be started, found or stopped; the message says which part."""


@dataclass(frozen=True)
class Process:
    """One process the launcher started: its role, id, the class it runs and its log."""

    role: str  # "master" or "worker-<k>"
    pid: int
    java_class: str
    log: str


@dataclass(frozen=True)
class ClusterState:
    """What `up` started, as written to the state file."""

    master_url: str
    webui_url: str
    workers: int
    cores: int
    memory: str
    processes: tuple[Process, ...]
    auth_file: str | None = None  # the secret's properties file (None: no RPC authentication)

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, path: Path) -> ClusterState:
        if not path.exists():
            raise ClusterError(f"no cluster state at {path}: nothing was started with it")
        data = json.loads(path.read_text())
        processes = tuple(Process(**p) for p in data.pop("processes"))
        return cls(processes=processes, **data)


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def spark_class() -> Path:
    """The `spark-class` launcher inside the installed pyspark package."""
    import pyspark  # here: the CLI imports this module to build its parser, quickly

    path = Path(pyspark.__file__).parent / "bin" / "spark-class"
    if not path.exists():
        raise ClusterError(f"spark-class not found at {path}: is pyspark installed with its jars?")
    return path


def write_auth_file(path: Path) -> Path:
    """A new random shared secret written to `path` as the Spark properties that switch RPC
    authentication on; the file is created with mode 0600 (never readable by others, not even
    for a moment) and replaces an older one. The secret itself is never returned or printed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write("spark.authenticate true\n")
        out.write(f"spark.authenticate.secret {secrets.token_hex(SECRET_BYTES)}\n")
    return path


def read_secret(path: Path) -> str:
    """The shared secret of an auth file `write_auth_file` wrote (or one written by hand in the
    same Spark properties form); a clear error naming the file otherwise."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ClusterError(f"cannot read the Spark secret file {path}: {exc.strerror}") from None
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        if key == "spark.authenticate.secret" and value.strip():
            return value.strip()
    raise ClusterError(f"{path} holds no 'spark.authenticate.secret VALUE' line")


def _launch(args: list[str], log: Path) -> subprocess.Popen:
    env = dict(os.environ, SPARK_LOCAL_IP=HOST, SPARK_HOME=str(spark_class().parents[1]))
    with log.open("ab") as out:
        proc = subprocess.Popen(
            ["bash", str(spark_class()), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # a Ctrl-C in the terminal that ran `up` leaves it running
        )
    return proc


def up(
    workers: int,
    cores: int,
    memory: str,
    state_path: Path,
    timeout_s: float = 180.0,
    authenticate: bool = True,
) -> ClusterState:
    """Start a master and `workers` workers, wait until all are registered, save the state.
    With `authenticate`, every process gets a new shared secret (`write_auth_file`)."""
    if workers < 1 or cores < 1:
        raise ClusterError(f"--workers and --cores must be >= 1, got {workers} and {cores}")
    if state_path.exists() and _alive(ClusterState.load(state_path)):
        raise ClusterError(f"a cluster from {state_path} is still running: `cluster down` first")
    logs = state_path.parent / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    port, webui = free_port(), free_port()
    url, webui_url = f"spark://{HOST}:{port}", f"http://{HOST}:{webui}"
    roles = ["master"] + [f"worker-{k}" for k in range(workers)]
    auth = write_auth_file(state_path.parent / AUTH_FILE) if authenticate else None
    commands = [[MASTER_CLASS, "--host", HOST, "--port", str(port), "--webui-port", str(webui)]]
    commands += [_worker_command(url, cores, memory, logs) for _ in range(workers)]
    if auth is not None:  # the secret travels in a file, never on a command line
        commands = [[*command, "--properties-file", str(auth)] for command in commands]
    started: dict[str, subprocess.Popen] = {}
    processes = []
    for role, command in zip(roles, commands, strict=True):
        log = logs / f"{role}.log"
        started[role] = _launch(command, log)
        processes.append(Process(role, started[role].pid, command[0], str(log)))
    auth_file = None if auth is None else str(auth)
    state = ClusterState(url, webui_url, workers, cores, memory, tuple(processes), auth_file)
    state.save(state_path)  # saved before waiting: `down` can stop a cluster that never came up
    try:
        wait_for_workers(state, started, timeout_s)
    except ClusterError:
        down(state_path)  # nothing of a failed start is left running
        raise
    return state


def _worker_command(master_url: str, cores: int, memory: str, work_dir: Path) -> list[str]:
    sizes = ["--cores", str(cores), "--memory", memory, "--webui-port", str(free_port())]
    return [WORKER_CLASS, master_url, "--host", HOST, *sizes, "--work-dir", str(work_dir)]


def wait_for_workers(
    state: ClusterState, started: dict[str, subprocess.Popen], timeout_s: float
) -> None:
    """Poll the master's JSON status until every worker is ALIVE; fail if a process exits."""
    deadline = time.monotonic() + timeout_s
    alive, seen = 0, "no answer yet"
    while time.monotonic() < deadline:
        dead = [role for role, proc in started.items() if proc.poll() is not None]
        if dead:
            raise ClusterError(f"cluster process(es) exited at start: {', '.join(dead)} (see logs)")
        alive, seen = alive_workers(state.webui_url)
        if alive >= state.workers:
            return
        time.sleep(0.5)
    raise ClusterError(
        f"{alive} of {state.workers} workers registered with {state.master_url} within "
        f"{timeout_s:.0f} s; the master's status page last said: {seen} "
        f"(logs: {Path(state.processes[0].log).parent})"
    )


def alive_workers(webui_url: str) -> tuple[int, str]:
    """The number of ALIVE workers on the master's status page, and what the page said.
    A page not up yet, or served empty or half-written while the master starts, counts 0."""
    try:
        with urllib.request.urlopen(f"{webui_url}/json/", timeout=2) as response:
            body = response.read()
    except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
        return 0, f"not reachable ({error})"
    try:
        status = json.loads(body)
    except json.JSONDecodeError:
        return 0, f"not JSON yet ({len(body)} bytes)"
    workers = [w.get("state") for w in status.get("workers", [])]
    alive = workers.count("ALIVE")
    return alive, f"{alive} ALIVE of {len(workers)} workers"


def running(process: Process) -> bool:
    """True if `process.pid` is alive and still the Spark process we started (not a reused id).
    A process caught inside exec() shows an empty command line for a moment: still ours."""
    try:
        cmdline = Path(f"/proc/{process.pid}/cmdline").read_bytes()
        status = Path(f"/proc/{process.pid}/stat").read_text()
    except FileNotFoundError:
        return False
    if status.split(") ", 1)[-1].startswith("Z"):
        return False  # exited, not yet reaped
    return not cmdline or process.java_class.encode() in cmdline


def _alive(state: ClusterState) -> bool:
    return any(running(p) for p in state.processes)


def down(state_path: Path, timeout_s: float = 30.0) -> list[str]:
    """Stop the processes `up` started (workers first), then delete the state file and the
    secret. Returns the roles stopped; processes already gone are skipped."""
    state = ClusterState.load(state_path)
    stopped = []
    for process in reversed(state.processes):
        if running(process):
            os.killpg(process.pid, signal.SIGTERM)
            stopped.append(process.role)
    deadline = time.monotonic() + timeout_s
    while any(running(p) for p in state.processes) and time.monotonic() < deadline:
        time.sleep(0.2)
    for process in state.processes:
        if running(process):
            os.killpg(process.pid, signal.SIGKILL)
    if state.auth_file is not None:
        Path(state.auth_file).unlink(missing_ok=True)
    state_path.unlink()
    return stopped
