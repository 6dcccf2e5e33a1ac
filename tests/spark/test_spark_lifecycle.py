"""A run that lasts until it is stopped: SIGTERM stops it gracefully (exit 0, outputs written,
every ingested event accounted for), and `--resume` delivers what was still queued, once."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.spark_runs import PIPELINE, wait_for_outcomes

import elastream
from elastream.examples.synthetic import drop_odd, generate, passthrough
from elastream.runtime.queues import SqliteQueueStore

pytestmark = pytest.mark.spark


def run_until_stopped(out: Path, *extra: str) -> subprocess.Popen:
    """`elastream run` with neither --duration nor --trace: the sources' rates, for ever."""
    cmd = [sys.executable, "-m", "elastream.cli", "run", str(PIPELINE), "--interval-s", "3"]
    cmd += ["--out", str(out), "--quiet", *extra]
    return subprocess.Popen(
        cmd, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


FLOW_S = 15  # seconds of flow before the SIGTERM (was 40: the stop tests no length of flow)


@pytest.mark.slow  # two runs, two Spark start-ups
def test_sigterm_stops_an_unbounded_run_gracefully_and_resume_delivers_the_rest(tmp_path):
    out = tmp_path / "run"
    db = out / "queues.db"
    # no drain: the stop leaves events queued (enrich needs 40 ms each), for --resume to deliver
    run = run_until_stopped(out, "--drain-s", "0")
    wait_for_outcomes(run, db, 40)  # Spark is up and events flow
    time.sleep(FLOW_S)
    assert run.poll() is None  # no end of its own
    run.send_signal(signal.SIGTERM)  # the driver only, as `kill PID` does
    output, _ = run.communicate(timeout=120)
    assert run.returncode == 0, output
    assert "SIGTERM received" in output
    summary = json.loads((out / "summary.json").read_text())
    assert (out / "timeseries.csv").exists() and (out / "report.html").exists()
    stopped = SqliteQueueStore(db).audit()
    assert stopped.events_in >= 40 * FLOW_S  # the source's declared 40 events/s, all along
    assert stopped.pending > 0  # what was in flight at the stop
    assert stopped.timeout == stopped.overflow == 0  # the defaults drop nothing
    delivered = stopped.to_sink + stopped.filtered + stopped.failed
    assert stopped.events_in == delivered + stopped.pending  # conservation, exact
    assert summary["events_in"] == stopped.events_in
    assert summary["events_queued"] == stopped.pending
    assert summary["events_out"] + summary["events_filtered"] == delivered

    again = run_until_stopped(out, "--resume", "--duration", "5", "--drain-s", "120")
    output, _ = again.communicate(timeout=300)
    assert again.returncode == 0, output
    store = SqliteQueueStore(db)
    audit = store.audit()
    assert audit.events_in == stopped.events_in  # the duration had passed: nothing new read
    assert audit.pending == 0
    assert audit.to_sink + audit.filtered + audit.failed == audit.events_in
    assert audit.roots_with_two_fates == audit.duplicate_sink_roots == 0
    sink_roots = store.sink_roots("out")
    assert len(sink_roots) == len(set(sink_roots)) == audit.to_sink > stopped.to_sink
    assert json.loads((out / "summary.json").read_text())["events_queued"] == 0


def test_the_python_api_runs_in_the_callers_session_and_leaves_it_running(spark, tmp_path):
    """The caller's session: a new session object on the tests' shared SparkContext (conftest:
    FAIR pools and worker reuse, as docs/python.md asks of a caller's), one elastream has never
    adopted; it is still running afterwards, with none of elastream's queries left."""
    callers = spark.newSession()
    b = elastream.PipelineBuilder("filter2")
    b.source("src", generate, rate=20)
    b.operator("ingest", passthrough, inputs="src")
    b.operator("enrich", drop_odd, inputs="ingest", replicas=(1, 2))
    b.sink("out", inputs="enrich")
    finished = elastream.run(b, spark=callers, duration=6, interval_s=2, out=tmp_path / "run")
    totals = finished.totals
    assert totals.events_in == 20 * 6
    assert totals.events_out + totals.filtered == totals.events_in  # drained, all of it
    assert totals.queued == totals.duplicates == 0
    assert finished.outputs["summary"].exists()
    assert callers.range(3).count() == 3  # still the caller's, still running
    assert not callers.streams.active  # elastream's queries are gone
