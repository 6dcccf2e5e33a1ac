"""The ingest path without Spark: appends wait for room instead of dropping (the queue stays
within its bound), a replayed micro-batch appends at its recorded position and adds nothing, rows
become events with the declared key, and the start-up checks fail in one line."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from elastream.model.pipeline import pipeline_from_dict
from elastream.runtime.queues import open_store, read_sink
from elastream.runtime.spark.egress import SinkError, check_sinks
from elastream.runtime.spark.ingest import (
    Admission,
    SourceError,
    Stopped,
    batch_start,
    check_sources,
    row_events,
)


def _rows(first: int, n: int) -> tuple[list[str], list[dict]]:
    return [f"s:f:{i}" for i in range(first, first + n)], [{"u": i % 3} for i in range(n)]


def test_a_full_queue_holds_the_source_back_and_a_replay_adds_nothing(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "q.db"))
    store.create_queue("op", 1000)  # q_size 1000: the runtime's bound is min(q_size, ingest)
    stop = threading.Event()
    admission = Admission(store.address, "s", ("op",), 1000, stop)
    first = batch_start("s", 0, admission)
    admission.append(first, row_events(*_rows(0, 600), key="u"))
    first = batch_start("s", 1, admission)
    assert first == 600
    stop.set()  # the run stops while batch 1 waits for room: it stays uncommitted
    with pytest.raises(Stopped):
        admission.append(first, row_events(*_rows(600, 600), key="u"))
    assert store.pending("op") == 1000  # filled to the bound, not beyond, nothing refused
    assert store.overflow_count("op", 0, 2e9) == 0
    assert batch_start("s", 1, admission) == 600  # the replay appends where it did
    events = [s.event for s in store.read("op", 0, 1000)]
    assert [e.id for e in events] == [f"s:f:{i}" for i in range(1000)]
    assert events[4].key == "1" and events[4].payload == {"u": 1}


def test_the_start_up_checks_name_the_source_or_sink(tmp_path: Path) -> None:
    spec = {
        "sources": [
            {"name": "trips", "kind": "files", "path": str(tmp_path / "no"), "format": "csv"}
        ],
        "operators": [{"name": "op", "function": "elastream.examples.synthetic:passthrough"}],
        "sinks": [{"name": "out", "kind": "files", "path": "/proc/elastream-out"}],
        "streams": [{"from": "trips", "to": "op"}, {"from": "op", "to": "out"}],
    }
    pipeline = pipeline_from_dict(spec)
    with pytest.raises(SourceError, match=r"^source 'trips': the directory .* does not exist$"):
        check_sources(pipeline)
    with pytest.raises(SinkError, match=r"^sink 'out': cannot write to /proc/elastream-out"):
        check_sinks(pipeline, resume=False)


def test_read_sink_returns_a_queue_sinks_events(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "queues.db"))
    store.create_queue("out", None, sink=True)
    store.append("out", row_events(*_rows(0, 3), key=None), "s", 0)
    store.close()
    assert [e.id for e in read_sink(tmp_path, "out")] == ["s:f:0", "s:f:1", "s:f:2"]
