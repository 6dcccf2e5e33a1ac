"""A Spark standalone cluster started by `elastream cluster up` on this machine: a pipeline runs
on it, on Redis Streams queues (the backend for executors on other machines), with replicas
changing live and exact conservation; executors are removed and added through the Executors
interface; `cluster down` stops exactly what was started."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from redis_server import local_redis

from elastream.config import make_config
from elastream.runtime.queues import RedisQueueStore
from elastream.runtime.spark.cluster import ClusterState, running
from elastream.runtime.spark.runtime import store_address

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


def test_a_pipeline_runs_live_on_a_standalone_cluster_started_by_elastream(tmp_path):
    state_path = tmp_path / "cluster.json"
    state_arg = ("--state", str(state_path))
    redis = local_redis(tmp_path / "redis")
    redis.start()
    started = elastream("cluster", "up", "--workers", "2", "--cores", "2", *state_arg)
    assert started.returncode == 0, started.stderr
    state = ClusterState.load(state_path)
    try:
        assert state.master_url in started.stdout
        assert [p.role for p in state.processes] == ["master", "worker-0", "worker-1"]
        assert all(running(p) for p in state.processes)

        out = tmp_path / "run"
        run = elastream(
            "run", str(PIPELINE), "--master", state.master_url, "--trace", TRACE, "--td", "3",
            "--t-out", "none", "--out", str(out), "--quiet", "--queues", redis.url,
        )  # fmt: skip
        assert run.returncode == 0, run.stdout + run.stderr
        summary = json.loads((out / "summary.json").read_text())
        assert summary["reconfigurations"] > 0  # replicas changed live, on the cluster
        assert summary["query_restarts"] == 0, run.stderr[-6000:]
        assert summary["processed_ratio"] == 1.0
        assert not (out / "queues.db").exists()
        store = RedisQueueStore(store_address(make_config(out=out, queues=redis.url)))
        audit = store.audit()
        fates = audit.to_sink + audit.filtered + audit.timeout + audit.overflow + audit.failed
        assert audit.pending == 0 and fates == audit.events_in == summary["events_in"]
        assert audit.duplicate_sink_roots == 0 and audit.roots_with_two_fates == 0

        moved = subprocess.run(
            [sys.executable, "-c", EXECUTORS_SCRIPT, state.master_url],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert moved.returncode == 0, moved.stderr[-3000:]
        expected = ["start 2", "accepted True", "after remove 1", "after add 2", "sum 4950"]
        assert moved.stdout.splitlines() == expected, moved.stdout
    finally:
        stopped = elastream("cluster", "down", *state_arg)
        redis.stop()
    assert stopped.returncode == 0, stopped.stderr
    assert not any(running(p) for p in state.processes)
    assert not state_path.exists()
    assert elastream("cluster", "down", *state_arg).returncode == 2  # said why
