"""DEBS 2015 Query 1: the top-10 updates the pipeline's operators emit for the first 10,004 trips
equal, update by update, those of a straightforward batch computation in pandas (here by calling
the operator functions in pipeline order over batches, with keyed state carried between them;
on Spark in tests/spark/test_spark_debs.py)."""

from __future__ import annotations

import random
from pathlib import Path

from support.debs import DEBS_PIPELINE as PIPELINE
from support.debs import TRIPS, debs_pipeline, needs_trips
from support.task_driver import drive, sink_payloads

from elastream.config.files import load_pipeline
from elastream.examples import debs
from elastream.examples.debs_batch import batch_top10
from elastream.model.events import Event
from elastream.model.state import decode_value


def trip_events(rows: int) -> list[Event]:
    """The source's first `rows` trips as events (ts: when they were ingested, 1 s apart)."""
    out = []
    for i in range(rows):
        key, payload = debs.generate(i, None)
        out.append(Event(i, key, 1000.0 + i, payload))
    return out


def pipeline_top10(
    tmp: Path, rows: int, seed: int = 0, max_batch: int = 150, **pools: int
) -> tuple[list[tuple[int, list]], dict]:
    """The top-10 updates of debs.yaml run through the task code (`task_driver`), operators'
    replica counts drawn at random from 1..pool between batches; and the queries' records."""
    pipeline = debs_pipeline(**pools)
    rescale = {op: range(1, n + 1) for op, n in pools.items()}
    store, queries = drive(pipeline, trip_events(rows), tmp / "q.db", seed, max_batch, rescale)
    audit = store.audit()
    assert audit.events_in == rows and audit.pending == 0, audit
    fates = audit.to_sink + audit.filtered + audit.timeout + audit.overflow + audit.failed
    assert fates == rows and audit.roots_with_two_fates == 0, audit  # each trip one fate
    routes = [v for _, k, v in store.state_items("route_count") if not k.startswith("\0")]
    late = [decode_value(v)["late"] for v in routes]
    assert sum(late) == 0  # nothing is late: the watermark waits for every share
    updates = sink_payloads(store, "top10")
    return [(p["i"], p["top"]) for p in updates], queries


def test_the_synthetic_stream_gives_the_batch_computations_updates(tmp_path, monkeypatch):
    path = tmp_path / "synthetic.csv"
    path.write_text("\n".join(debs.synthetic_row(i) for i in range(3000)) + "\n")
    monkeypatch.setenv(debs.TRIPS_ENV, str(tmp_path / "absent.csv"))  # the generator's own rows
    expected = batch_top10(path)
    got, queries = pipeline_top10(tmp_path, 3000, seed=3, parse=2, route_count=3)
    assert queries["route_count"].replica_counts == {1, 2, 3}
    assert len(expected) > 20
    assert got == expected


def test_rows_are_cleaned_and_mapped_to_the_grid():
    assert debs.cell(debs.LAT0, debs.LON0) == (1, 1)
    assert debs.cell(debs.LAT0 - debs.DLAT, debs.LON0 + debs.DLON) == (2, 2)
    assert debs.cell(debs.LAT0 + debs.DLAT, debs.LON0) is None
    row = debs.synthetic_row(5).split(",")
    assert debs.clean(",".join(row))[0] == "ok"
    assert debs.clean(",".join(row[:16]))[0] == "malformed"
    assert debs.clean(",".join([*row[:2], "yesterday", *row[3:]]))[0] == "malformed"
    assert debs.clean(",".join([*row[:6], "0.000000", *row[7:]]))[0] == "zero_coordinates"
    assert debs.clean(",".join([*row[:6], "-80.0", *row[7:]]))[0] == "outside_grid"


@needs_trips
def test_with_replicas_changing_the_updates_are_the_batch_computations(monkeypatch, tmp_path):
    """parse, route_count (and partial_top10) at replica counts drawn anew for every batch, the
    shares of a batch committed in random order, the operators' batches interleaved at random
    (a later operator plans between two shares of an earlier one): every update equals the
    batch computation's, counts included, because each operator takes the trips in drop-off
    order once the operator-wide watermark has passed them (docs/debs.md)."""
    monkeypatch.setenv(debs.TRIPS_ENV, str(TRIPS))
    expected = batch_top10(TRIPS)
    pools = {"parse": 3, "route_count": 4, "partial_top10": 2}
    got, queries = pipeline_top10(tmp_path, 10_004, seed=1, **pools)
    assert len(expected) > 100  # the top-10 changes often: the comparison has teeth
    for op, n in pools.items():  # the replica counts did change, to every value of the pool
        assert queries[op].replica_counts == set(range(1, n + 1)), (op, queries[op])
    assert got == expected


def test_a_files_sources_columns_parse_as_the_row_does():
    row = debs.synthetic_row(7)
    columns = dict(zip(debs.COLUMNS, row.split(","), strict=True))
    by_row = debs.parse([Event(0, "k", 0.0, {"i": 7, "row": row})])
    by_columns = debs.parse([Event(1, "k", 0.0, {"i": 7, **columns})])
    assert [e.payload for e in by_row] == [e.payload for e in by_columns]
    assert by_row[0].stream is None  # kept: the comparison is of a parsed trip
    missing = debs.parse([Event(2, "k", 0.0, {"i": 8, **columns, "dropoff_datetime": None})])
    assert missing[0].payload == {"i": 8, "reason": "malformed"}
    update = Event(
        3,
        "all",
        0.0,
        {
            "i": 3,
            "pickup": 1.0,
            "dropoff": 2.0,
            "delay_s": 0.5,
            "top": [["1.1-2.2", 4], ["3.3-4.4", 2]],
        },
    )
    (record,) = debs.as_record([update])
    assert record.payload["routes"] == ["1.1-2.2", "3.3-4.4"] and record.payload["counts"] == [4, 2]


@needs_trips
def test_the_files_example_gives_the_batch_computations_updates_from_shuffled_batches(tmp_path):
    """examples/debs_files.yaml through the task code, its input as the files source makes it
    (each row a dict of the schema's columns), the rows shuffled within runs of 10 (less than
    the declared 60 s of disorder): the records for the Parquet sink are still the batch
    computation's updates, update by update."""
    rows, rng = 3000, random.Random(5)
    lines = TRIPS.read_text().splitlines()[:rows]
    events = []
    for start in range(0, rows, 10):
        batch = list(range(start, min(rows, start + 10)))
        rng.shuffle(batch)
        for i in batch:
            columns = dict(zip(debs.COLUMNS, lines[i].split(","), strict=True))
            events.append(Event(i, f"k{i}", 0.0, {"i": i, **columns}))
    pipeline = load_pipeline(PIPELINE.with_name("debs_files.yaml"))
    ops = [op.model_copy(update={"service_time_ms": 0.0}) for op in pipeline.operators]
    pipeline = pipeline.model_copy(update={"operators": tuple(ops)})
    pools = {"parse": range(1, 5), "route_count": range(1, 5), "partial_top10": range(1, 3)}
    store, queries = drive(pipeline, events, tmp_path / "q.db", 5, 150, pools)
    assert queries["route_count"].replica_counts == {1, 2, 3, 4}
    got = [
        (p["i"], [list(rc) for rc in zip(p["routes"], p["counts"], strict=True)])
        for p in sink_payloads(store, "top10")
    ]
    assert got == batch_top10(TRIPS, rows)
