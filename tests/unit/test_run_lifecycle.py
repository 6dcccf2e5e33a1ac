"""The Spark engine's stop and drain rules, without a Spark session: a requested stop stops the
sources, the drain is bounded from the stop (or the trace's end if earlier), and what is still
queued is counted in the totals."""

from __future__ import annotations

import threading
import time

import numpy as np
from support.sim import filter_split_pipeline

from elastream.config import make_config
from elastream.model.events import Event
from elastream.runtime.spark.runtime import SparkEngine
from elastream.workloads.trace import Trace


class StoppableFeeder:
    """A feeder that runs until stop() (an unbounded run's) or has finished its trace."""

    def __init__(self, done: bool = False) -> None:
        self.done = threading.Event()
        self.error = None
        self.stops = 0
        if done:
            self.done.set()

    def stop(self) -> None:
        self.stops += 1
        self.done.set()


def engine(tmp_path, trace_s: float = 10.0, **values) -> SparkEngine:
    config = make_config(
        out=tmp_path / "run", interval_s=2.0, policy="static", replicas=1, **values
    )
    built = SparkEngine(
        filter_split_pipeline(pool=(1, 2)), config, Trace(np.full(int(trace_s), 1.0))
    )
    built.open_store()
    built.t0 = built.started_at = time.time()
    return built


def queue_events(built: SparkEngine, n: int) -> None:
    now = time.time()
    events = [Event(i, "k", now, {"i": i, "v": i}) for i in range(n)]
    built.store.append("parse", events, "src", 0)


def test_a_stop_stops_the_sources_and_the_queued_events_are_counted(tmp_path):
    built = engine(tmp_path, until_stopped=True, drain_s=0.2)
    built.feeder = StoppableFeeder()
    queue_events(built, 7)
    assert not built.finished()  # no end of its own
    assert not built.finished()
    built.request_stop()
    assert not built.finished()  # stopped the sources, draining
    assert built.feeder.stops == 1
    time.sleep(0.3)
    assert built.finished()  # the drain ran out: the 7 stay queued
    assert built.feeder.stops == 1
    totals = built.totals()
    assert (totals.events_in, totals.queued, totals.completed) == (7, 7, 0)


def test_a_drained_run_ends_at_once_after_the_stop(tmp_path):
    built = engine(tmp_path, until_stopped=True, drain_s=60)
    built.feeder = StoppableFeeder()
    built.request_stop()
    assert built.finished()  # nothing queued
    assert built.totals().queued == 0


def test_a_stop_during_a_bounded_runs_drain_does_not_extend_it(tmp_path):
    built = engine(tmp_path, trace_s=10, drain_s=60, duration=10)
    built.feeder = StoppableFeeder(done=True)
    queue_events(built, 3)
    built.t0 = time.time() - 65  # the trace ended 55 s ago: 5 s of drain left
    built.started_at = built.t0
    assert not built.finished()
    built.request_stop()
    assert not built.finished()  # still the trace's drain deadline, not 60 s from the stop
    built.t0 = built.started_at = time.time() - 71
    assert built.finished()
