"""Vectorized operators (`vectorized: true`): a pyarrow.Table of the payload columns in, a table
or `emit(...)` outputs out — the same roots, keys, fates, routes, error isolation and
exactly-once commits as a per-event operator."""

import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from support.builders import linear_pipeline, queue_store

from elastream.model.batch import EventBatch
from elastream.model.events import Event, OutcomeKind
from elastream.model.pipeline import TopologyError, pipeline_from_dict
from elastream.runtime.operators import (
    OperatorContext,
    apply_operator,
    events_batch,
    load_operator,
)
from elastream.runtime.queues import SqliteQueueStore
from elastream.runtime.spark import task

PASS_EVENTS = "elastream.examples.synthetic:passthrough"
PASS_COLUMNS = "elastream.examples.synthetic:passthrough_columns"


def events(n: int, start: int = 0) -> list[Event]:
    now = time.time()
    return [Event(i, f"k{i % 3}", now, {"i": i}) for i in range(start, start + n)]


def store_with(tmp_path, function: str, vectorized: bool) -> SqliteQueueStore:
    data = linear_pipeline(3)
    for op in data["operators"]:
        op.update(function=function, vectorized=vectorized)
    return queue_store(tmp_path / f"{vectorized}.db", pipeline_from_dict(data))


def run_through(store: SqliteQueueStore, replicas: int = 2) -> None:
    """Every queued event through op1..op3, `replicas` shares per batch, then a replay of each."""
    for op in ("op1", "op2", "op3"):
        end = store.latest(op)
        store.plan_batch(
            op, 0, end, replicas, lambda keys: [k % replicas for k in range(len(keys))]
        )
        for replica in range(replicas):
            assert task.run_share(str(store.path), op, 0, end, replica).fresh > 0
            assert task.run_share(str(store.path), op, 0, end, replica).fresh == 0


def test_vectorized_and_per_event_pass_through_deliver_the_same_events(tmp_path):
    stores = {v: store_with(tmp_path, PASS_COLUMNS if v else PASS_EVENTS, v) for v in (False, True)}
    sent = events(50)
    for store in stores.values():
        store.append("op1", sent, "src", 0)
        run_through(store)
    per_event, columns = (
        sorted((e.root, e.key, e.payload["i"]) for e in stores[v].sink_events("sink"))
        for v in (False, True)
    )
    assert columns == per_event == sorted((e.root, e.key, e.payload["i"]) for e in sent)
    audit = stores[True].audit()
    assert (audit.events_in, audit.to_sink, audit.pending, audit.duplicate_sink_roots) == (
        50,
        50,
        0,
        0,
    )


def context(function, routes, vectorized=True) -> OperatorContext:
    data = linear_pipeline(1)
    data["operators"][0].update(vectorized=vectorized)
    spec = pipeline_from_dict(data).operator("op1")
    return OperatorContext(spec, function, {}, routes, None)


def test_a_vectorized_fan_out_gets_roots_keys_routes_and_fates_like_per_event_emits():
    from support.ops import fan_out_columns

    batch = events_batch(events(6))
    ctx = context(fan_out_columns, {"low": ("a", "b"), "high": ("b",)})
    applied = apply_operator(ctx, batch)
    low = applied.outputs["a"]
    # rows 0 and 2 (i = 0, 2) emit twice to 'low', in emit order; row 4 (i = 4) nothing
    assert [p["v"] for p in low.payloads()] == [0, 2, "again", "again"]
    assert low.keys == ["k0", "k2", "x", "x"]
    assert low.roots.tolist() == [0, 2, 0, 2]
    assert applied.parents["a"].tolist() == [0, 2, 0, 2]
    both = applied.outputs["b"]  # 'low' copies and 'high' outputs
    values = sorted((p["v"] for p in both.payloads()), key=str)
    assert values == sorted([0, 2, "again", "again", -1, -3, -5], key=str)
    assert applied.emitted.tolist() == [2, 1, 2, 1, 0, 1]
    fates = applied.fates(batch)
    assert fates[OutcomeKind.FILTERED].tolist() == [4]
    assert fates[OutcomeKind.PROCESSED].tolist() == [0, 1, 2, 3, 5]


def test_a_failing_vectorized_call_sets_aside_only_the_event_that_breaks_it():
    from support.ops import fail_on_three_columns

    batch = events_batch(events(6))
    applied = apply_operator(context(fail_on_three_columns, {"out": ("next",)}), batch)
    assert list(applied.errors) == [3] and "ValueError: three is bad" in applied.errors[3]
    assert applied.outputs["next"].roots.tolist() == [0, 1, 2, 4, 5]
    assert applied.parents["next"].tolist() == [0, 1, 2, 4, 5]
    kinds = [o.kind for o in applied.outcomes(batch)]
    assert kinds.count(OutcomeKind.ERROR) == 1 and kinds.count(OutcomeKind.PROCESSED) == 5


def test_a_vectorized_emit_naming_a_row_outside_the_batch_is_an_error_naming_the_operator():
    from support.ops import rows_out_of_range

    batch = events_batch(events(2))
    applied = apply_operator(context(rows_out_of_range, {"out": ("next",)}), batch)
    assert sorted(applied.errors) == [0, 1]
    assert all("'op1'" in m and "not in the batch" in m for m in applied.errors.values())


def test_a_table_of_another_length_without_parents_is_an_error_saying_what_to_do():
    def half(table: pa.Table) -> pa.Table:
        return table.slice(0, 1)

    applied = apply_operator(context(half, {"out": ("next",)}), events_batch(events(2)))
    assert all("parents=" in m for m in applied.errors.values())


@pytest.mark.parametrize("kind", ["table", "record_batch", "pandas"])
def test_a_vectorized_operator_may_return_a_table_a_record_batch_or_a_pandas_frame(kind):
    def doubled(table: pa.Table):
        out = table.append_column("twice", pa.compute.multiply(table.column("i"), 2))
        if kind == "record_batch":
            return out.combine_chunks().to_batches()[0]
        return out.to_pandas() if kind == "pandas" else out

    applied = apply_operator(context(doubled, {"out": ("next",)}), events_batch(events(4)))
    got = applied.outputs["next"].data.to_pydict()
    assert got == {"i": [0, 1, 2, 3], "twice": [0, 2, 4, 6]}
    assert applied.outputs["next"].keys == ["k0", "k1", "k2", "k0"]  # the parents' keys


def test_a_vectorized_map_keeps_its_parents_columns_without_copying_them():
    batch = events_batch(events(1000))
    applied = apply_operator(context(lambda t: t, {"out": ("next",)}), batch)
    out = applied.outputs["next"].table
    for name in batch.table.column_names:
        assert out.column(name).chunks[0].buffers()[1].address == (
            batch.table.column(name).chunks[0].buffers()[1].address
        )


def test_an_operator_written_for_the_old_column_contract_fails_at_load_saying_what_to_change():
    data = linear_pipeline(1)
    data["operators"][0].update(vectorized=True, function="support.old_contract:old_vectorized")
    spec = pipeline_from_dict(data).operator("op1")
    with pytest.raises(TopologyError, match="pyarrow.Table of the payload columns"):
        load_operator(spec)
    with pytest.raises(ImportError, match="EventColumns is gone: .*pyarrow.Table"):
        from elastream.model.events import EventColumns  # noqa: F401


def test_per_event_emits_to_mixed_streams_route_each_output_by_its_stream():
    from elastream.examples.synthetic import split_by_value

    batch = events_batch(
        [Event(i, "k", 0.0, {"i": i, "v": v}) for i, v in enumerate((5, 900, 10, 800))]
    )
    ctx = context(split_by_value, {"low": ("l",), "high": ("h",)}, vectorized=False)
    applied = apply_operator(ctx, batch)
    assert {t: p.tolist() for t, p in applied.parents.items()} == {"l": [0, 2], "h": [1, 3]}
    assert applied.outputs["h"].roots.tolist() == [1, 3]
    outcomes = applied.outcomes(batch)
    assert [t for o in outcomes for t, _ in o.outputs] == ["l", "h", "l", "h"]


def test_a_per_event_and_a_vectorized_operator_in_one_pipeline(tmp_path):
    data = linear_pipeline(2)
    data["operators"][0].update(function=PASS_EVENTS)
    data["operators"][1].update(function=PASS_COLUMNS, vectorized=True)
    store = queue_store(tmp_path / "mixed.db", pipeline_from_dict(data))
    sent = events(20)
    store.append("op1", sent, "src", 0)
    for op in ("op1", "op2"):
        end = store.latest(op)
        store.plan_batch(op, 0, end, 1, lambda keys: [0] * len(keys))
        assert task.run_share(str(store.path), op, 0, end, 0).fresh == 20
    got = sorted((e.root, e.payload["i"]) for e in store.sink_events("sink"))
    assert got == [(e.root, e.payload["i"]) for e in sent]


def test_nested_and_null_values_round_trip_through_a_batch():
    payloads = [
        {"a": 1, "tags": ["x", "y"], "who": {"name": "ann", "age": None}},
        {"a": None, "tags": [], "who": {"name": "bo", "age": 7}},
    ]
    batch = EventBatch.of(np.arange(2), ["k", "k"], 1.0, payloads)
    assert batch.payloads() == payloads
    assert pd.DataFrame(batch.data.to_pylist()).shape == (2, 3)
