"""A Spark standalone cluster started by `elastream cluster up` on this machine, with Spark's RPC
authentication (a shared secret in a 0600 file, given to master, workers and drivers, found in
no command line, log or output): a pipeline submitted with spark-submit runs on it, on Redis
Streams queues (the backend for executors on other machines), with replicas changing live and
exact conservation, and survives the SIGKILL of an executor; executors are leased as hosts
billed per BTU (added, and retired by graceful decommission, through the Executors interface);
a driver without the secret is refused with one line; `cluster down` stops exactly what was
started."""

import dataclasses
import itertools
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyspark
import pytest
from support.first_pipeline import setup, verify
from support.paths import PIPELINES
from support.redis_server import LocalRedis, local_redis
from support.spark_runs import assert_conserved, descendants, events_sent

from elastream.cli import submit_script
from elastream.config import make_config
from elastream.config.files import load_pipeline
from elastream.control.controller import Controller
from elastream.control.mape import run_mape
from elastream.runner.engines import config_stages
from elastream.runtime.queues import RedisQueueStore
from elastream.runtime.queues.records import QueueError
from elastream.runtime.spark.cluster import ClusterState, free_port, read_secret, running
from elastream.runtime.spark.runtime import SparkEngine, store_address
from elastream.workloads import Trace
from elastream.workloads.resolve import generate

# its tests share one cluster, in order: one worker of the Spark group runs them all
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.xdist_group("cluster")]
PIPELINE = PIPELINES / "filter3.yaml"
WORK1 = PIPELINES / "work1.yaml"
TRACE = "spike:peak=60,magnitude=6,onset=8,ramp=2,hold=15,decay=2,duration=40"


def elastream(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "elastream.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> tuple[ClusterState, tuple[str, str]]:
    """Two workers of two cores, started once for this module's tests (the last one stops it)."""
    state_path = tmp_path_factory.mktemp("cluster") / "cluster.json"
    state_arg = ("--state", str(state_path))
    started = elastream("cluster", "up", "--workers", "2", "--cores", "2", *state_arg)
    assert started.returncode == 0, started.stderr
    state = ClusterState.load(state_path)
    assert state.master_url in started.stdout
    yield state, state_arg
    if state_path.exists():  # a test failed before the last one stopped the cluster
        elastream("cluster", "down", *state_arg)


@pytest.fixture(scope="module")
def redis(tmp_path_factory) -> LocalRedis:
    """A redis-server (AOF, appendfsync always) for this module's runs."""
    server = local_redis(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


def sink_roots(store: RedisQueueStore, queue: str) -> list[int]:
    """The sink queue's roots; none while the run has not created its queues yet."""
    try:
        return store.sink_roots(queue)
    except QueueError:  # the queue is not there yet: the driver is still starting
        return []


def wait_for_sink(run: subprocess.Popen, store: RedisQueueStore, n: int, timeout_s: float = 300):
    """Until `n` events have reached the sink (Spark's start-up included)."""
    deadline = time.time() + timeout_s
    while len(sink_roots(store, "out")) < n:
        assert run.poll() is None, run.stdout.read()
        assert time.time() < deadline, f"fewer than {n} sink events after {timeout_s:.0f} s"
        time.sleep(1)


def submit_to(state: ClusterState, out: Path, trace: str, *extra: str) -> subprocess.Popen:
    """`elastream run` submitted with spark-submit, authenticated by the cluster's secret file
    (docs/deploy.md, "spark-submit")."""
    spark_submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    cmd = [
        str(spark_submit), "--master", state.master_url, "--properties-file", state.auth_file,
        str(submit_script()), "run", str(PIPELINE), "--trace", trace, "--interval-s", "3",
        "--out", str(out), "--quiet", *extra,
    ]  # fmt: skip
    python = {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env = {**os.environ, **python, "SPARK_LOCAL_IP": "127.0.0.1"}  # the driver's UI: loopback
    return subprocess.Popen(
        cmd,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )


def assert_secret_kept(state: ClusterState, pids: list[int], *outputs: Path, console: str) -> None:
    """The secret file is the owner's alone; every cluster process runs with authentication; the
    secret is on no command line, in no log, no output file and not on the console."""
    secret = read_secret(Path(state.auth_file))
    assert Path(state.auth_file).stat().st_mode & 0o777 == 0o600
    for process in state.processes:
        log = Path(process.log).read_text()
        assert "authentication enabled" in log, process.role
        assert secret not in log, process.log
    for pid in pids:
        assert secret.encode() not in cmdline(pid), pid
    held = [p for root in outputs for p in root.rglob("*") if p.is_file()]
    assert len(held) >= len(outputs)  # summary.json, spark.log, ... were looked at
    assert [p for p in held if secret.encode() in p.read_bytes()] == []
    assert secret not in console


def cmdline(pid: int) -> bytes:
    """A process's command line (empty if it has exited meanwhile)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return b""


def test_a_pipeline_runs_live_on_the_cluster_on_redis_and_survives_an_executor_sigkill(
    cluster, redis, tmp_path
):
    state, _ = cluster
    assert [p.role for p in state.processes] == ["master", "worker-0", "worker-1"]
    assert all(running(p) for p in state.processes)
    workers = [p.pid for p in state.processes if p.role.startswith("worker")]

    out = tmp_path / "run"
    # The driver's address as docs/deploy.md sets it for a cluster of several machines.
    driver_port = free_port()
    settings = tmp_path / "settings.yaml"
    conf = {"spark.driver.host": "127.0.0.1", "spark.driver.port": str(driver_port)}
    settings.write_text(json.dumps({"spark": {"conf": conf}}))  # JSON is YAML
    run = submit_to(
        state,
        out,
        TRACE,
        "--event-timeout-s",
        "none",
        "--config",
        str(settings),
        "--queues",
        redis.url,
    )
    store = RedisQueueStore(store_address(make_config(out=out, queues=redis.url)))
    wait_for_sink(run, store, 100)  # in the spike
    executors = [pid for w in workers for pid in descendants(w, "CoarseGrainedExecutorBackend")]
    assert len(executors) == 2, executors  # one per worker
    driver_url = f"CoarseGrainedScheduler@127.0.0.1:{driver_port}".encode()
    assert all(driver_url in Path(f"/proc/{pid}/cmdline").read_bytes() for pid in executors)
    # each worker hands its executors the secret through their environment, never argv
    secret = read_secret(Path(state.auth_file)).encode()
    assert all(secret in Path(f"/proc/{pid}/environ").read_bytes() for pid in executors)
    pids = [p.pid for p in state.processes] + executors + [run.pid, *descendants(run.pid, "")]
    assert_secret_kept(state, pids, console="")  # while it runs: the command lines
    os.kill(executors[0], signal.SIGKILL)
    output, _ = run.communicate(timeout=600)
    assert run.returncode == 0, output
    assert_secret_kept(state, [], out, console=output)
    assert "Spark UI: http://127.0.0.1:" in output and "the Spark UI listens on" not in output

    summary = json.loads((out / "summary.json").read_text())
    assert summary["reconfigurations"] > 0  # replicas changed live, on the cluster
    assert summary["processed_ratio"] == 1.0
    # Spark usually retries the lost tasks itself; a query that failed anyway was restarted, and
    # each restart is both reported on the console and counted in the summary.
    assert summary["query_restarts"] == output.count("restarting it from its checkpoint")
    assert not (out / "queues.db").exists()  # the queues are in Redis
    audit = store.audit()
    # nothing lost, nothing twice: every event the trace sent (one source) has one fate
    trace = generate(TRACE)
    assert summary["events_in"] == events_sent(trace)
    assert_conserved(audit, summary["events_in"])


def test_executors_are_leased_as_hosts_and_released_in_the_last_part_of_their_btu(
    cluster, tmp_path
):
    """In a Python process of its own (a fresh driver JVM whatever ran before in this one: an
    authenticated driver started in a JVM that an earlier local-mode session launched never
    registered with the master, 25 Nov, not yet diagnosed); its /metrics scraped at the end."""
    state, _ = cluster
    done = subprocess.run(
        [sys.executable, __file__, state.master_url, state.auth_file, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, SUBPROCESS_PATH))},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run = json.loads((tmp_path / "leasing.json").read_text())
    seen, totals = run["seen"], run["totals"]
    assert run["authenticated"] == "true"

    assert totals["hosts_leased"] == 2, seen
    assert totals["host_boot_s"] is not None and totals["host_boot_s"] > 0
    assert max(replicas for _, replicas, _, _ in seen) >= 3, seen  # more replicas ran
    # what ran in an interval was enacted at the end of the one before, within its hosts' slots
    assert all(now[1] <= 2 * before[2] for before, now in itertools.pairwise(seen)), seen
    (held,) = run["released_held_s"]
    assert 60.0 * math.ceil(held / 60.0) - held <= 0.05 * 60.0, (held, seen)  # last 5 % of a BTU
    assert held > 60.0, (held, seen)  # its first BTU needed it: kept for a second
    assert totals["host_re_leases"] == 0
    assert seen[-1][2:] == [1, 1], seen  # one host left, its executor gone (decommissioned)
    assert totals["host_btus"] >= 3 + 2 and totals["host_cost"] == totals["host_btus"]
    # the hosts' metrics as a scrape of the run's /metrics shows them at its end
    assert run["metrics"] == {
        "elastream_hosts_up": seen[-1][2],
        "elastream_host_cost_price_units": totals["host_cost"],
        "elastream_hosts_leased_total": 2,
        "elastream_host_re_leases_total": totals["host_re_leases"],
    }

    assert all(n == 1 for n in run["run_ids"].values()), run["run_ids"]  # no restart
    assert totals["query_restarts"] == 0
    audit = run["audit"]
    assert (audit["events_in"], audit["pending"]) == (LEASING_SENT, 0), audit
    fates = ("to_sink", "filtered", "timeout", "overflow", "failed")
    assert sum(audit[f] for f in fates) == LEASING_SENT, audit
    assert audit["roots_with_two_fates"] == audit["duplicate_sink_roots"] == 0, audit
    assert run["processed_ratio"] == 1.0


# tests/ (support) and the checkout's src/: the code under test, whatever the venv installed
SUBPROCESS_PATH = (Path(__file__).parents[1], Path(__file__).parents[2] / "src")

# 10 s at 10 ev/s (1 replica), 24 s at 70 ev/s (3 replicas of 40 ms: two hosts of 2 slots),
# then 116 s at 5 ev/s: a host is surplus, released (by the last BTU's rule) only in the last
# 3 s of a BTU none of whose decisions needed it: not in its first BTU (it held the step), in
# its second. (VISP's rule released the first host at 58 s, 1 Dec 12:05.)
LEASING_RATES = [10.0] * 10 + [70.0] * 24 + [5.0] * 116
LEASING_SENT = 10 * 10 + 24 * 70 + 116 * 5


def leasing_run(master: str, auth_file: str, folder: Path) -> None:
    """The leasing run on the cluster at `master` (run by the test above in a process of its
    own): what the test checks, to folder/leasing.json."""
    from support.scrape import get, parse, value

    from elastream.report.endpoint import MetricsServer
    from elastream.report.prom import RunMetrics

    leasing = {
        "slots": 2,
        "btu_s": 60.0,
        "min_hosts": 1,
        "max_hosts": 2,
        "release_rule": "last_btu",
    }
    spark = {"master": master, "leasing": leasing, "auth_file": auth_file}
    config = make_config(
        interval_s=2.0, out=folder / "run", drain_s=60, event_timeout_s=None, spark=spark
    )
    pipeline = load_pipeline(WORK1)
    engine = SparkEngine(pipeline, config, Trace(np.array(LEASING_RATES)))
    seen: list[tuple[float, int, int, int]] = []  # t, replicas, hosts up, live executors

    def watch(snapshot, decision):
        up = sum(1 for h in engine.hosts() if h.ready_at <= snapshot.t)
        seen.append((snapshot.t, snapshot.op("work").replicas, up, len(executor_ids(engine))))

    metrics = RunMetrics(pipeline)
    with MetricsServer(metrics, "127.0.0.1", 0) as server:
        psps, stages = Controller.build("psps"), config_stages(config)
        result = run_mape(engine, psps, observers=[watch, metrics], stages=stages)
        metrics.finish(result.totals)
        sample = parse(get(server.url + "/metrics")[1])
    run = {"pipeline": pipeline.name}
    names = (
        "elastream_hosts_up",
        "elastream_host_cost_price_units",
        "elastream_hosts_leased_total",
        "elastream_host_re_leases_total",
    )
    report = {
        "seen": seen,
        "totals": dataclasses.asdict(result.totals),
        "authenticated": engine.spark.sparkContext.getConf().get("spark.authenticate"),
        "released_held_s": [r.end - r.lease_start for r in engine.leases.finished],
        "metrics": {name: value(sample, name, **run) for name in names},
        "run_ids": {name: len(ids) for name, ids in engine.queries.run_ids.items()},
        "audit": dataclasses.asdict(engine.store.audit()),
        "processed_ratio": result.summary.processed_ratio,
    }
    (folder / "leasing.json").write_text(json.dumps(report))


def executor_ids(engine: SparkEngine) -> list[str]:
    return engine.leases.executors.ids() if engine.leases else []


def test_a_driver_without_the_secret_is_refused_with_one_line(cluster, tmp_path):
    """A run pointed at the cluster without its secret (its state file is not the default one,
    so the run cannot find it): the master refuses the unauthenticated driver, Spark gives up
    after about a minute, and the run says so in one line naming the master (no traceback)."""
    state, _ = cluster
    run = elastream(
        "run", str(PIPELINE), "--spark-master", state.master_url, "--out", str(tmp_path / "run"),
        "--trace", "constant:rate=10,duration=5", "--quiet", "--no-metrics",
        timeout=300,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    assert "could not register with the Spark master" in lines[0], lines
    assert state.master_url in lines[0] and "without a secret" in lines[0], lines
    assert read_secret(Path(state.auth_file)) not in run.stderr + run.stdout


def test_the_readme_pipeline_runs_on_the_cluster_from_a_new_folder(cluster, tmp_path):
    """The README's first pipeline, run by the console script from its own folder: its `myapp`
    reaches the executors' Python workers (whose working directory is their worker's, not this
    folder) in the zip the driver ships, as --py-files."""
    state, _ = cluster
    setup(tmp_path)
    (tmp_path / "run.yaml").write_text(json.dumps({"spark": {"auth_file": state.auth_file}}))
    cmd = [str(Path(sys.executable).parent / "elastream"), "run", "pipeline.yaml"]
    cmd += ["--out", "runs/words", "--duration", "15", "--master", state.master_url]
    cmd += ["--config", "run.yaml", "--quiet", "--no-metrics"]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    verify(tmp_path)  # pandas.read_parquet(results/): one row per word of the input


def test_cluster_down_stops_exactly_what_up_started(cluster):
    state, state_arg = cluster
    stopped = elastream("cluster", "down", *state_arg)
    assert stopped.returncode == 0, stopped.stderr
    assert not any(running(p) for p in state.processes)
    assert not Path(state_arg[1]).exists()
    assert not Path(state.auth_file).exists()  # a new secret for every cluster
    assert elastream("cluster", "down", *state_arg).returncode == 2  # said why


if __name__ == "__main__":
    leasing_run(sys.argv[1], sys.argv[2], Path(sys.argv[3]))
