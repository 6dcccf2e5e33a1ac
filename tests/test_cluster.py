"""A Spark standalone cluster started by `elastream cluster up` on this machine: a pipeline runs
on it with replicas changing live and exact conservation, and survives the SIGKILL of an
executor; executors are removed and added through the Executors interface; `cluster down`
stops exactly what was started."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_spark_runtime import assert_conserved, descendants, wait_for_outcomes

from elastream.runtime.queues import SqliteQueueStore
from elastream.runtime.spark.cluster import ClusterState, free_port, running

pytestmark = [pytest.mark.spark, pytest.mark.slow]
PIPELINE = Path(__file__).parent / "pipelines" / "filter3.yaml"
TRACE = "spike:peak=60,magnitude=6,onset=8,ramp=2,hold=15,decay=2,duration=40"


def elastream(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "elastream.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


EXECUTORS_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from pyspark.sql import SparkSession
    from elastream.runtime.spark.executors import Executors

    spark = SparkSession.builder.master(sys.argv[1]).config("spark.ui.enabled", "false") \\
        .getOrCreate()

    def wait_for(n):
        deadline = time.time() + 90
        while len(executors.ids()) != n and time.time() < deadline:
            time.sleep(0.5)
        return len(executors.ids())

    executors = Executors(spark)
    print("start", wait_for(2))
    executors.set_total(1)
    print("accepted", executors.remove(executors.ids()[:1]))
    print("after remove", wait_for(1))
    executors.set_total(2)
    print("after add", wait_for(2))
    print("sum", spark.sparkContext.parallelize(range(100), 4).sum())
    spark.stop()
    """
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


def run_on(master: str, out: Path, trace: str, *extra: str) -> subprocess.Popen:
    cmd = [
        sys.executable, "-m", "elastream.cli", "run", str(PIPELINE), "--master", master,
        "--trace", trace, "--td", "3", "--out", str(out), "--quiet", *extra,
    ]  # fmt: skip
    return subprocess.Popen(
        cmd, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def test_a_pipeline_runs_live_on_a_standalone_cluster_started_by_elastream(cluster, tmp_path):
    state, _ = cluster
    assert [p.role for p in state.processes] == ["master", "worker-0", "worker-1"]
    assert all(running(p) for p in state.processes)

    out = tmp_path / "run"
    run = run_on(state.master_url, out, TRACE, "--t-out", "none")
    output, _ = run.communicate(timeout=600)
    assert run.returncode == 0, output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["reconfigurations"] > 0  # replicas changed live, on the cluster
    assert summary["query_restarts"] == 0
    assert summary["processed_ratio"] == 1.0
    audit = SqliteQueueStore(out / "queues.db").audit()
    assert_conserved(audit, summary["events_in"])


def test_a_run_survives_the_sigkill_of_an_executor_and_loses_nothing(cluster, tmp_path):
    state, _ = cluster
    workers = [p.pid for p in state.processes if p.role.startswith("worker")]
    out = tmp_path / "run"
    # The driver's address as docs/deploy.md sets it for a cluster of several machines.
    driver_port = free_port()
    settings = tmp_path / "settings.yaml"
    conf = {"spark.driver.host": "127.0.0.1", "spark.driver.port": str(driver_port)}
    settings.write_text(json.dumps({"spark": {"conf": conf}}))  # JSON is YAML
    trace = "constant:rate=40,duration=40"
    run = run_on(state.master_url, out, trace, "--t-out", "600", "--config", str(settings))
    wait_for_outcomes(run, out / "queues.db", 150)
    executors = [pid for w in workers for pid in descendants(w, "CoarseGrainedExecutorBackend")]
    assert len(executors) == 2, executors  # one per worker
    driver_url = f"CoarseGrainedScheduler@127.0.0.1:{driver_port}".encode()
    assert all(driver_url in Path(f"/proc/{pid}/cmdline").read_bytes() for pid in executors)
    os.kill(executors[0], signal.SIGKILL)
    output, _ = run.communicate(timeout=600)
    assert run.returncode == 0, output

    audit = SqliteQueueStore(out / "queues.db").audit()
    assert_conserved(audit, 1600)
    assert audit.filtered == 800
    summary = json.loads((out / "summary.json").read_text())
    assert summary["processed_ratio"] == 1.0
    assert "query_restarts" in summary  # counted (Spark usually retries the lost tasks itself)
    replacements = [pid for w in workers for pid in descendants(w, "CoarseGrainedExecutorBackend")]
    assert executors[0] not in replacements


def test_executors_are_removed_and_added_through_the_interface(cluster):
    state, _ = cluster
    moved = subprocess.run(
        [sys.executable, "-c", EXECUTORS_SCRIPT, state.master_url],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert moved.returncode == 0, moved.stderr[-3000:]
    expected = ["start 2", "accepted True", "after remove 1", "after add 2", "sum 4950"]
    assert moved.stdout.splitlines() == expected, moved.stdout


def test_cluster_down_stops_exactly_what_up_started(cluster):
    state, state_arg = cluster
    stopped = elastream("cluster", "down", *state_arg)
    assert stopped.returncode == 0, stopped.stderr
    assert not any(running(p) for p in state.processes)
    assert not Path(state_arg[1]).exists()
    assert elastream("cluster", "down", *state_arg).returncode == 2  # said why
