"""Vectorized operators (`vectorized: true`): the batch as columns in, `columns.emit(...)` out —
the same ids, fates, routes, error isolation and exactly-once commits as a per-event operator."""

import time

from support.builders import linear_pipeline, queue_store

from elastream.model.events import Event, EventColumns, OutcomeKind, derived_id
from elastream.model.pipeline import pipeline_from_dict
from elastream.runtime.operators import OperatorContext, apply_operator
from elastream.runtime.queues import SqliteQueueStore
from elastream.runtime.spark import task

PASS_EVENTS = "elastream.examples.synthetic:passthrough"
PASS_COLUMNS = "elastream.examples.synthetic:passthrough_columns"


def events(n: int, start: int = 0) -> list[Event]:
    now = time.time()
    return [Event(f"src-{i}", f"k{i % 3}", now, {"i": i}) for i in range(start, start + n)]


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
    per_event, columns = (stores[v] for v in (False, True))
    assert sorted(columns.sink_ids("sink")) == sorted(per_event.sink_ids("sink"))
    assert len(columns.sink_ids("sink")) == 50
    audit = columns.audit()
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


def test_a_vectorized_fan_out_gets_ids_keys_routes_and_fates_like_per_event_emits():
    from support.ops import fan_out_columns

    batch = EventColumns.of(events(6))
    ctx = context(fan_out_columns, {"low": ("a", "b"), "high": ("b",)})
    applied = apply_operator(ctx, batch)
    low = applied.outputs["a"]
    # rows 0 and 2 (i = 0, 2) emit twice to 'low', in emit order; row 4 (i = 4) nothing
    assert low.ids == [derived_id(f"src-{i}", "op1", n) for n in (0,) for i in (0, 2)] + [
        derived_id(f"src-{i}", "op1", 1) for i in (0, 2)
    ]
    assert low.payloads == [0, 2, "again", "again"] and low.keys == ["k0", "k2", "x", "x"]
    assert low.roots == ["src-0", "src-2", "src-0", "src-2"]
    assert applied.parents["a"] == [0, 2, 0, 2]
    both = applied.outputs["b"]  # 'low' copies and 'high' outputs
    assert sorted(both.payloads, key=str) == sorted([0, 2, "again", "again", -1, -3, -5], key=str)
    assert applied.emitted == [2, 1, 2, 1, 0, 1]
    fates = applied.fates(batch)
    assert fates[OutcomeKind.FILTERED] == ["src-4"]
    assert fates[OutcomeKind.PROCESSED] == ["src-0", "src-1", "src-2", "src-3", "src-5"]


def test_a_failing_vectorized_call_sets_aside_only_the_event_that_breaks_it():
    from support.ops import fail_on_three_columns

    batch = EventColumns.of(events(6))
    applied = apply_operator(context(fail_on_three_columns, {"out": ("next",)}), batch)
    assert list(applied.errors) == [3] and "ValueError: three is bad" in applied.errors[3]
    assert applied.outputs["next"].roots == ["src-0", "src-1", "src-2", "src-4", "src-5"]
    assert applied.parents["next"] == [0, 1, 2, 4, 5]
    kinds = [o.kind for o in applied.outcomes(batch)]
    assert kinds.count(OutcomeKind.ERROR) == 1 and kinds.count(OutcomeKind.PROCESSED) == 5


def test_a_vectorized_emit_naming_a_row_outside_the_batch_is_an_error_naming_the_operator():
    from support.ops import rows_out_of_range

    batch = EventColumns.of(events(2))
    applied = apply_operator(context(rows_out_of_range, {"out": ("next",)}), batch)
    assert sorted(applied.errors) == [0, 1]
    assert all("'op1'" in m and "not in the batch" in m for m in applied.errors.values())


def test_per_event_emits_to_mixed_streams_route_each_output_by_its_stream():
    from elastream.examples.synthetic import split_by_value

    batch = EventColumns.of(
        [Event(f"e{i}", "k", 0.0, {"i": i, "v": v}) for i, v in enumerate((5, 900, 10, 800))]
    )
    ctx = context(split_by_value, {"low": ("l",), "high": ("h",)}, vectorized=False)
    applied = apply_operator(ctx, batch)
    assert applied.parents == {"l": [0, 2], "h": [1, 3]}
    assert applied.outputs["h"].ids == [derived_id(f"e{i}", "op1", 0) for i in (1, 3)]
    outcomes = applied.outcomes(batch)
    assert [t for o in outcomes for t, _ in o.outputs] == ["l", "h", "l", "h"]
