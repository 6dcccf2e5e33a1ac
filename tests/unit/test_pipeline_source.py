"""The `pipeline` layout's source without Spark: per-operator offsets and admission, partitions
only for replicas with events, a replayed batch divided as recorded, per-operator dropping of
what was consumed."""

import time

from support.builders import linear_pipeline, queue_store

from elastream.model.events import Event
from elastream.model.pipeline import pipeline_from_dict
from elastream.runtime.spark.pipeline_source import (
    PipelineStreamReader,
    Share,
    SharesPartition,
    pack,
)


def keyed_store(tmp_path, n: int = 12):
    """op1 holds `n` events over 3 keys, key-hash grouped at 4 replicas (so at least one replica
    gets no event); op2 and op3 one replica each; caps of 100 events."""
    data = linear_pipeline(3, (1, 4))
    data["operators"][0]["grouping"] = "key_hash"
    store = queue_store(tmp_path / "q.db", pipeline_from_dict(data))
    now = time.time()
    store.append("op1", [Event(i, f"k{i % 3}", now, {"i": i}) for i in range(n)], "src", 0)
    store.set_control("op1", 4, 100, 0.01, [])
    for op in ("op2", "op3"):
        store.set_control(op, 1, 100, 0.01, [])
    return store


def run_batch(reader: PipelineStreamReader, start: dict) -> tuple[dict, list[Share]]:
    """One micro-batch as Spark runs it: admit, plan, read every partition; the batch's end and
    its shares."""
    end = reader.latestOffset(start, None)
    parts = list(reader.partitions(start, end))
    for part in parts:
        list(reader.read(part))
    return end, [share for part in parts for share in part.shares]


def test_one_batch_moves_each_operator_one_hop_and_idle_ones_get_no_task(tmp_path):
    store = keyed_store(tmp_path)
    reader = PipelineStreamReader(str(store.path))
    start = reader.initialOffset()
    assert start == {"op1": 0, "op2": 0, "op3": 0}

    end, parts = run_batch(reader, start)
    assert end == {"op1": 12, "op2": 0, "op3": 0}  # op1's outputs wait for the next batch
    owners = set(store.plan("op1", 0, 12).owners)
    assert {p.op for p in parts} == {"op1"}  # idle operators: no partition
    assert sorted(p.replica for p in parts) == sorted(owners) and len(owners) < 4
    assert store.latest("op2") == 12

    end2, parts2 = run_batch(reader, end)
    assert end2 == {"op1": 12, "op2": 12, "op3": 0}
    assert [(p.op, p.replica, p.start, p.end) for p in parts2] == [("op2", 0, 0, 12)]
    assert parts2[0].work_s == 0.12  # 12 events at op2's et of 0.01 s
    end3, _ = run_batch(reader, end2)
    assert end3 == {"op1": 12, "op2": 12, "op3": 12}
    assert len(store.sink_roots("sink")) == 12
    # a replay of the first batch is divided as recorded and commits nothing twice
    store.set_control("op1", 2, 100, 0.01, [])
    replayed = reader.partitions(start, end)
    assert [share for part in replayed for share in part.shares] == parts
    batches = [batch for p in replayed for batch in reader.read(p)]
    assert sum(sum(batch.column("fresh").to_pylist()) for batch in batches) == 0  # none fresh
    assert sum(sum(batch.column("events").to_pylist()) for batch in batches) == 12


def test_small_shares_share_a_task_and_large_ones_run_alone():
    small = [Share("a", j, 0, 10, 0.004) for j in range(3)]  # 0.012 s in all
    large = [Share("b", j, 0, 900, 0.05) for j in range(2)]
    tail = [Share("c", 0, 0, 10, 0.015), Share("d", 0, 0, 1, 0.001)]
    tasks = pack([*small, *large, *tail], pack_s=0.02)
    assert tasks == [
        SharesPartition(tuple(small)),
        SharesPartition((large[0],)),
        SharesPartition((large[1],)),
        SharesPartition(tuple(tail)),  # 0.016 s together
    ]
    assert pack([], 0.02) == []


def test_admission_is_per_operator_and_dropping_the_consumed_per_operator(tmp_path):
    store = keyed_store(tmp_path, n=30)
    store.set_control("op1", 1, 10, 0.1, [])  # op1 admits 10 events a batch
    reader = PipelineStreamReader(str(store.path))
    end, _ = run_batch(reader, reader.initialOffset())
    assert end["op1"] == 10
    end, _ = run_batch(reader, end)
    assert (end["op1"], end["op2"]) == (20, 10)
    assert (store.pending("op1"), store.pending("op2")) == (10, 10)
    planned = [(op, s) for op, s in (("op1", 0), ("op1", 10), ("op2", 0))]
    assert all(store.planned_end(op, s) is not None for op, s in planned)
    reader.dropped_at = -1e9  # drop now (normally at most every DROP_EVERY_S)
    reader.commit(end)
    assert all(store.planned_end(op, s) is None for op, s in planned)  # each below its own end
    assert store.read("op1", 20, 30) and store.read("op2", 10, 20)  # the rest is kept


def test_a_batch_that_opens_with_a_share_of_no_work_packs_without_error():
    """A watermarked operator commits its empty shares too: a batch may start with a share of no
    estimated work, which opens the first task (it failed planPartitions with an IndexError)."""
    empty, busy = Share("a", 0, 5, 5, 0.0), Share("b", 1, 0, 9, 0.5)
    assert [p.shares for p in pack([empty, busy])] == [(empty,), (busy,)]
    assert [p.shares for p in pack([empty])] == [(empty,)]
