"""Integration tests of the Spark runtime on Redis Streams queues (a real redis-server, AOF on,
`appendfsync always`): SIGKILL of the run + `--resume` exactly-once; live replica changes under a
spike with no query restarted, through a redis-server SIGKILLed and restarted mid-run, exact
conservation (the 2-worker cluster test in test_cluster.py also runs on Redis queues)."""

import json
import signal
import time
from pathlib import Path

import pytest
from support.redis_server import local_redis
from support.spark_runs import (
    assert_conserved,
    events_sent,
    kill_run,
    run_cli,
    wait_until_counted,
)

from elastream.config import make_config
from elastream.runtime.queues import RedisQueueStore
from elastream.runtime.spark.runtime import store_address
from elastream.workloads.resolve import generate

pytestmark = [pytest.mark.spark, pytest.mark.slow]
SPIKE = "spike:peak=60,magnitude=6,onset=8,ramp=2,hold=15,decay=2,duration=40"


@pytest.fixture
def server(tmp_path):
    server = local_redis(tmp_path / "redis")
    server.start()
    yield server
    server.stop()


def run_store(out: Path, url: str) -> RedisQueueStore:
    """The Redis store a run in `out` with `--queues url` uses."""
    return RedisQueueStore(store_address(make_config(out=out, queues=url)))


def emitted(store: RedisQueueStore) -> int:
    """Outcomes the run's last operator has committed so far."""
    return sum(w.events for w in store.task_stats("emit", 0, float("inf")).values())


def assert_exactly_once(out: Path, store: RedisQueueStore) -> None:
    """1,600 events (40 ev/s for 40 s), half filtered, every other one at the sink once."""
    audit = store.audit()
    assert_conserved(audit, 1600)
    assert audit.timeout == audit.overflow == audit.failed == 0
    assert audit.filtered == 800
    sink_roots = store.sink_roots("out")
    assert (len(sink_roots), len(set(sink_roots))) == (800, 800)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["processed_ratio"] == 1.0


def test_a_killed_run_on_redis_resumes_exactly_once(tmp_path, server):
    """With Spark's synchronous progress logs (the other kill tests run asynchronously)."""
    settings = tmp_path / "run.yaml"
    settings.write_text("spark:\n  async_progress: false\n")
    out = tmp_path / "run"
    store = run_store(out, server.url)
    first = run_cli(out, "--queues", server.url, "--config", str(settings))
    wait_until_counted(first, lambda: emitted(store), 150)
    kill_run(first)  # the driver, its JVM and Python workers at once
    first.wait(timeout=30)
    killed_at = emitted(store)
    assert 0 < killed_at < 800

    second = run_cli(out, "--queues", server.url, "--resume", "--config", str(settings))
    output, _ = second.communicate(timeout=600)
    assert second.returncode == 0, output
    assert_exactly_once(out, store)


def test_replicas_change_live_and_a_redis_restart_mid_run_loses_nothing(tmp_path, server):
    out = tmp_path / "run"
    store = run_store(out, server.url)
    run = run_cli(out, "--queues", server.url, trace=SPIKE)
    wait_until_counted(run, lambda: emitted(store), 150)  # in the spike
    before = emitted(store)
    # SIGKILL: with appendfsync always every acknowledged write is in the AOF already.
    server.kill(signal.SIGKILL)
    assert run.poll() is None  # mid-run
    time.sleep(2.0)  # the driver, the feeder and the executors see refused connections
    server.start()  # same port, same folder: the AOF is replayed
    assert emitted(store) >= before  # nothing acknowledged was lost
    output, _ = run.communicate(timeout=600)
    assert run.returncode == 0, output

    summary = json.loads((out / "summary.json").read_text())
    assert summary["reconfigurations"] > 0  # replicas changed live on Redis queues
    assert summary["query_restarts"] == 0  # one runId per query: the client rode out the restart
    assert summary["processed_ratio"] == 1.0
    audit = store.audit()
    trace = generate(SPIKE)  # every event the trace sent (one source) has one fate
    assert_conserved(audit, events_sent(trace))
    assert audit.filtered == audit.events_in // 2  # drop_odd filters the odd indexes
    sink_roots = store.sink_roots("out")
    assert len(sink_roots) == len(set(sink_roots)) == audit.events_in - audit.filtered
