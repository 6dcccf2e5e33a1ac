"""The contract every queue backend keeps, through the `QueueStore` interface only: every role,
offsets, bounds (q_size), t_out, exactly-once under replay, kill and resume, conservation,
retention, the control table, and keyed state (committed with its share, exactly once).

A backend joins by adding an opener to `BACKENDS`: it gets the test's temp folder and a running
redis-server (started once per session, each test in its own key prefix)."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from support.builders import linear_pipeline
from support.queues import alternate, events, forward, make_queues, run_share
from support.redis_server import LocalRedis, local_redis

from elastream.model.events import Outcome, OutcomeKind
from elastream.model.grouping import key_group, key_groups
from elastream.model.pipeline import pipeline_from_dict
from elastream.model.state import KeyedState, decode_value
from elastream.prediction.service_time import ShareSums, service_time_variance
from elastream.runtime.operators import OperatorContext
from elastream.runtime.queues import (
    AuditTrail,
    Control,
    ControlTable,
    DataPath,
    Metrics,
    QueueError,
    QueueStore,
    RedisQueueStore,
    SqliteQueueStore,
    StateStore,
)
from elastream.runtime.queues.records import BatchPlan, FailedEvent, share_commit
from elastream.runtime.queues.segments import MAX_REPLICAS
from elastream.runtime.spark.task import commit_of, process

Opener = Callable[[], QueueStore]
BACKENDS: dict[str, Callable[[Path, Callable[[], str]], QueueStore]] = {
    "sqlite": lambda folder, _: SqliteQueueStore(folder / "q.db"),
    "redis": lambda folder, server: RedisQueueStore(f"{server()}?prefix=t-{folder.name}"),
}


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    """A redis-server for the session's contract tests, started on first use."""
    started: list[LocalRedis] = []

    def url() -> str:
        if not started:
            server = local_redis(tmp_path_factory.mktemp("redis"))
            server.start()
            started.append(server)
        return started[0].url

    yield url
    for server in started:
        server.stop()


@pytest.fixture(params=sorted(BACKENDS))
def open_store(request, tmp_path, redis_url) -> Opener:
    """Opens the backend's store of this test (again: a process that restarts after a kill)."""
    opened: list[QueueStore] = []
    folder = tmp_path / uuid.uuid4().hex[:8]
    folder.mkdir()

    def opener() -> QueueStore:
        store = BACKENDS[request.param](folder, redis_url)
        opened.append(store)
        return store

    yield opener
    for store in opened:
        store.close()


def test_appends_get_contiguous_integer_offsets(open_store):
    store = make_queues(open_store())
    assert store.append("a", events(3), "src", 0) == (3, 0)
    assert store.append("a", events(4, start=3), "src", 3) == (4, 0)
    assert store.latest("a") == 7
    stored = [e for part in store.read("a", 2, 6) for e in part.batch.events()]
    assert [e.id for e in stored] == [2, 3, 4, 5]  # an event's id is its offset
    assert [e.root for e in stored] == [2, 3, 4, 5]  # the source's own numbering
    assert stored[0].payload == {"i": 2, "tag": b"\x00x"}  # bytes survive the encoding
    assert store.pending("a") == 7


def test_appends_are_idempotent_per_source_and_gaps_are_refused(open_store):
    store = make_queues(open_store())
    store.append("a", events(5), "src", 0)
    assert store.append("a", events(5, start=3), "src", 3) == (3, 0)  # 3, 4 offered before
    assert store.produced("a", "src") == 8
    with pytest.raises(QueueError, match=r"from #10 .* only 8 were offered"):
        store.append("a", events(1, start=10), "src", 10)
    with pytest.raises(QueueError, match="unknown queue 'nope'"):
        store.append("nope", events(1), "src", 0)


def test_a_plan_takes_1_to_255_replicas_and_names_a_count_beyond(open_store):
    """A plan keeps each event's replica in one byte (MAX_REPLICAS)."""
    store = make_queues(open_store())
    store.append("a", events(300), "src", 0)
    plan = store.plan_batch("a", 0, 255, MAX_REPLICAS, lambda keys: list(range(len(keys))))
    assert sorted(plan.owners) == list(range(255))  # one event for each of the 255 replicas
    for replicas in (0, MAX_REPLICAS + 1):
        with pytest.raises(QueueError, match=f"{replicas} replicas, expected 1..255"):
            store.plan_batch("a", 255, 300, replicas, alternate)


def test_bound_refuses_what_does_not_fit_and_counts_it(open_store):
    store = make_queues(open_store(), bound=3)
    t0 = time.time()
    assert store.append("a", events(5), "src", 0) == (3, 2)
    t1 = time.time() + 1
    assert store.overflow_count("a", t0, t1) == 2
    assert store.arrivals("a", t0, t1) == {"src": 5}  # refused ones are arrivals too (λ)
    plan = store.plan_batch("a", 0, 3, 1, alternate)
    run_share(store, plan, 0, "b")
    assert store.append("a", events(4, start=5), "src", 5) == (3, 1)  # room again: 3
    audit = store.audit()
    assert (audit.events_in, audit.overflow, audit.pending) == (9, 3, 6)


def test_every_backend_implements_every_role(open_store):
    store = open_store()
    for role in (DataPath, ControlTable, Metrics, AuditTrail, StateStore):
        members = [name for name in vars(role) if callable(vars(role)[name])]
        members = [name for name in members if not name.startswith("_")]
        assert members, role.__name__
        missing = [name for name in members if not callable(getattr(store, name, None))]
        assert missing == [], f"{type(store).__name__} lacks {role.__name__}: {missing}"


def test_the_control_row_and_the_run_records_round_trip(open_store):
    store = make_queues(open_store())
    with pytest.raises(QueueError, match="no control row for operator 'a'"):
        store.control("a")
    store.set_control("a", 3, 120, 0.02, [0.01, 0.0300004, 0.02])
    store.set_control("b", 1, 50, 0.5, [])
    row = store.control("a")
    assert row == Control(replicas=3, cap=120, et=0.02, replica_et=[0.01, 0.03, 0.02])
    assert (row.replicas, row.cap, store.control("b").et) == (3, 120, 0.5)
    store.set_control("a", 2, 80, 0.04, [0.04, 0.04])  # the driver's next interval
    assert store.control("a") == Control(2, 80, 0.04, [0.04, 0.04])
    store.set_meta("td", 2.5)
    store.set_meta("plan", {"x": [1, 2]})
    assert (store.meta("td"), store.meta("plan")) == (2.5, {"x": [1, 2]})
    assert store.meta("absent", 7) == 7
    assert open_store().control("a").replicas == 2  # durable: another connection reads it


def test_t_out_gives_old_events_the_timeout_fate(open_store):
    store = make_queues(open_store())
    store.append("a", events(3, ts=time.time() - 60) + events(2, start=3), "src", 0)
    spec = pipeline_from_dict(linear_pipeline(2)).operator("op1")
    passthrough = lambda evs: [e.emit(e.payload) for e in evs]  # noqa: E731
    ctx = OperatorContext(spec, passthrough, {}, {"out": ("b",)}, event_timeout_s=5.0)
    plan = store.plan_batch("a", 0, 5, 1, alternate)
    processed, timed_out = process(ctx, store.read_share(plan, 0))
    t0 = time.time()
    assert store.commit_share(commit_of("a", plan.batch, 0, processed, timed_out, 0.0, None, 0.0))
    counts = store.outcome_counts("a", t0, time.time() + 1)
    assert (counts.by_kind, counts.outputs) == ({"processed": 2, "timeout": 3}, 2)
    assert store.latest("b") == 2 and store.audit().timeout == 3


def test_a_replayed_share_adds_nothing(open_store):
    store = make_queues(open_store())
    store.append("a", events(6), "src", 0)
    plan = store.plan_batch("a", 0, 6, 2, alternate)
    assert run_share(store, plan, 0, "b") is True
    commit = share_commit(
        "a", plan.batch, 0, forward(store.read_share(plan, 0).events(), "b"), (), 0.0
    )
    assert store.commit_share(commit) is False  # the same share committed again
    assert (store.latest("b"), store.pending("a")) == (3, 3)
    t0 = time.time() - 60
    assert store.task_stats("a", t0, time.time() + 1) == {
        0: (3, pytest.approx(0.01), 0.0, 1, pytest.approx(0.01**2 / 3))
    }


def test_cpu_seconds_are_those_of_the_shares_committed_in_the_window(open_store):
    store = make_queues(open_store())
    store.append("a", events(6), "src", 0)
    plan = store.plan_batch("a", 0, 6, 2, alternate)
    t0 = time.time()
    for replica, cpu in ((0, 0.25), (1, 0.5)):
        outcomes = forward(store.read_share(plan, replica).events(), "b")
        commit = share_commit("a", plan.batch, replica, outcomes, (), 0.1, cpu_s=cpu)
        assert store.commit_share(commit) is True
    again = share_commit(
        "a", plan.batch, 1, forward(store.read_share(plan, 1).events(), "b"), (), 0.1
    )
    assert store.commit_share(replace(again, cpu_s=9.0)) is False  # a replay adds no CPU
    assert store.task_stats("a", time.time() + 1, time.time() + 2) == {}
    assert store.task_stats("a", t0 - 1, time.time() + 1) == {
        0: (3, pytest.approx(0.1), pytest.approx(0.25), 1, pytest.approx(0.1**2 / 3)),
        1: (3, pytest.approx(0.1), pytest.approx(0.5), 1, pytest.approx(0.1**2 / 3)),
    }


def test_task_stats_keep_the_sums_of_the_service_time_variance(open_store):
    # Replica 0 commits shares of 2 and 4 events in 0.2 s and 0.6 s (a replay adds nothing),
    # replica 1 one share of 2 events in 0.3 s. Eq. V3's sums for replica 0: k = 2,
    # Σ b²/n = 0.04/2 + 0.36/4 = 0.11; Eq. V2: σ² = (0.11 − 0.8²/6) / (2 − 1) = 1/300 s².
    store = make_queues(open_store())
    store.append("a", events(9), "src", 0)
    t0 = time.time()
    for start, end, owners, busy in ((0, 4, [0, 0, 1, 1], 0.2), (4, 9, [0] * 4 + [1], 0.6)):
        plan = store.plan_batch("a", start, end, 2, lambda keys, o=owners: o[: len(keys)])
        share = share_commit(
            "a", plan.batch, 0, forward(store.read_share(plan, 0).events(), "b"), (), busy
        )
        assert store.commit_share(share) and not store.commit_share(share)
    plan = store.plan("a", 0, 4)
    assert store.commit_share(
        share_commit("a", plan.batch, 1, forward(store.read_share(plan, 1).events(), "b"), (), 0.3)
    )
    work = store.task_stats("a", t0 - 1, time.time() + 1)
    assert work[0] == (6, pytest.approx(0.8), 0.0, 2, pytest.approx(0.11))
    assert work[1] == (2, pytest.approx(0.3), 0.0, 1, pytest.approx(0.045))
    sums = {
        r: ShareSums(w.shares, w.events, w.busy_s, w.busy_sq_per_event) for r, w in work.items()
    }
    assert service_time_variance(sums[0]) == pytest.approx(1 / 300)
    assert service_time_variance(sums[1]) is None  # one share: no spread to see


def test_batch_work_gives_each_batch_its_slowest_and_largest_share(open_store):
    store = make_queues(open_store())
    store.append("a", events(7), "src", 0)
    plan = store.plan_batch("a", 0, 7, 3, lambda keys: [0, 0, 0, 0, 1, 1, 2][: len(keys)])
    for replica, busy in ((0, 0.2), (1, 0.5), (2, 0.1)):
        outcomes = forward(store.read_share(plan, replica).events(), "b")
        assert store.commit_share(share_commit("a", plan.batch, replica, outcomes, (), busy))
    (work,) = store.batch_work()
    assert (work.op, work.batch, work.events, work.largest, work.tasks) == ("a", "0-7", 7, 4, 3)
    assert work.busy_s == pytest.approx(0.5)


def test_a_replayed_batch_keeps_its_division_when_r_changed(open_store):
    store = make_queues(open_store())
    store.append("a", events(9), "src", 0)
    first = store.plan_batch("a", 0, 9, 2, alternate)
    replay = store.plan_batch("a", 0, 9, 3, lambda keys: [2] * len(keys))  # r is 3 by now
    assert replay == first and replay.replicas == 2
    assert [e.id for e in store.read_share(replay, 1).events()] == [1, 3, 5, 7]
    with pytest.raises(QueueError, match="planned up to 9, now asked up to 8"):
        store.plan_batch("a", 0, 8, 2, alternate)
    with pytest.raises(QueueError, match="the division of batch 0-9 is invalid"):
        store.plan_batch("b", 0, 0, 2, alternate)  # empty: nothing recorded, nothing to check
        store.append("b", events(9), "src", 0)
        store.plan_batch("b", 0, 9, 2, lambda keys: [5] * len(keys))
    assert store.plan_batch("a", 9, 9, 2, alternate).owners == b""  # an empty batch


def test_a_replayed_range_reuses_every_batch_recorded_in_it(open_store):
    """Asynchronous progress tracking: Spark's offsets lag the batches it ran, so after a
    restart it replays a range spanning several recorded batches, then asks from where the
    last recorded one started."""
    store = make_queues(open_store())
    store.append("a", events(12), "src", 0)
    first = store.plan_batch("a", 0, 4, 2, alternate)
    second = store.plan_batch("a", 4, 7, 2, alternate)
    assert (store.planned_end("a", 0), store.planned_end("a", 4)) == (4, 7)
    assert store.planned_end("a", 7) is None and store.planned_end("a", 1) is None
    replay = store.plan_range("a", 0, 7, 3, lambda keys: [2] * len(keys))  # r is 3 by now
    assert replay == [first, second]
    extended = store.plan_range("a", 4, 12, 3, lambda keys: [2] * len(keys))
    assert extended[0] == second
    assert (extended[1].start, extended[1].end, extended[1].owners) == (7, 12, bytes([2] * 5))
    assert store.plan_range("a", 12, 12, 2, alternate) == []
    with pytest.raises(QueueError, match="the range 0-5 cuts the batch planned from 4 to 7"):
        store.plan_range("a", 0, 5, 2, alternate)


def test_a_failed_commit_writes_nothing(open_store):
    store = make_queues(open_store())
    store.append("a", events(4), "src", 0)
    plan = store.plan_batch("a", 0, 4, 1, alternate)
    broken = forward(store.read_share(plan, 0).events(), "nowhere")
    with pytest.raises(QueueError, match="unknown queue 'nowhere'"):
        store.commit_share(share_commit("a", plan.batch, 0, broken, (), 0.0))
    assert not store.share_done("a", plan.batch, 0)
    assert (store.pending("a"), store.latest("b")) == (4, 0)


def test_kill_and_resume_finishes_exactly_once(open_store):
    store = make_queues(open_store())
    store.append("a", events(10), "src", 0)
    plan = store.plan_batch("a", 0, 10, 2, alternate)
    run_share(store, plan, 0, "b")  # then the process is killed: share 1 never committed
    store.close()

    resumed = open_store()  # a new process: where to go on comes from the store
    assert resumed.produced("a", "src") == 10
    resumed.append("a", events(10), "src", 0)  # a feeder regenerating: nothing twice
    again = resumed.plan_batch("a", 0, 10, 4, alternate)  # Spark replays the batch
    assert [run_share(resumed, again, j, "b") for j in range(again.replicas)] == [False, True]
    b_plan = resumed.plan_batch("b", 0, resumed.latest("b"), 1, alternate)
    run_share(resumed, b_plan, 0, "out")
    audit = resumed.audit()
    assert (audit.events_in, audit.to_sink, audit.pending, audit.sink_events) == (10, 10, 0, 10)
    assert audit.roots_with_two_fates == audit.duplicate_sink_roots == 0


def every_fate(store: QueueStore) -> QueueStore:
    """Ten events through a (bound 8) and b: 3 reach the sink, 2 are filtered, 1 times out, 2
    overflow and 2 fail."""
    store.append("a", events(10), "src", 0)  # 8 accepted, 2 refused
    plan = store.plan_batch("a", 0, 8, 2, alternate)
    for replica in (0, 1):
        shared = store.read_share(plan, replica).events()
        outcomes = forward(shared[:2], "b")
        outcomes += [Outcome(shared[2].id, shared[2].root, OutcomeKind.FILTERED)]
        outcomes += [Outcome(shared[3].id, shared[3].root, OutcomeKind.ERROR)]
        failed = [FailedEvent(shared[3].id, shared[3].root, "boom", b"")]
        store.commit_share(share_commit("a", plan.batch, replica, outcomes, failed, 0.0))
    b_plan = store.plan_batch("b", 0, 4, 1, alternate)
    outcomes = forward(store.read_share(b_plan, 0).events(), "out")
    outcomes[0] = Outcome(outcomes[0].event_id, outcomes[0].root, OutcomeKind.TIMEOUT)
    store.commit_share(share_commit("b", b_plan.batch, 0, outcomes, (), 0.0))
    return store


def test_every_root_has_exactly_one_fate(open_store):
    store = every_fate(make_queues(open_store(), bound=8))
    audit = store.audit()
    fates = audit.to_sink + audit.filtered + audit.timeout + audit.overflow + audit.failed
    assert (audit.to_sink, audit.filtered, audit.timeout, audit.overflow, audit.failed) == (
        3,
        2,
        1,
        2,
        2,
    )
    assert fates == audit.events_in == 10 and audit.pending == 0
    assert audit.roots_with_two_fates == audit.duplicate_sink_roots == 0
    assert sorted(e.root for e in store.sink_events("out")) == [1, 2, 3]


def test_released_events_are_gone_and_counts_stay(open_store):
    store = make_queues(open_store())
    store.append("a", events(4), "src", 0)
    store.append("a", events(4, start=4), "src", 4)
    plan = store.plan_batch("a", 0, 4, 1, alternate)
    run_share(store, plan, 0, "b")
    assert store.drop_consumed("a", 4) == 1
    with pytest.raises(QueueError, match=r"holds 0 of the events \[0, 4\)"):
        store.read("a", 0, 4)
    with pytest.raises(QueueError, match="no recorded plan for the batch 0-4"):
        store.plan("a", 0, 4)
    assert [e.id for p in store.read("a", 4, 8) for e in p.batch.events()] == [4, 5, 6, 7]
    assert (store.latest("a"), store.pending("a"), store.audit().events_in) == (8, 4, 8)


def test_expiry_forgets_old_records_and_the_audit_still_adds_up(open_store):
    store = every_fate(make_queues(open_store(), bound=8))
    audit = store.audit()
    store.drop_consumed("a", 8)  # b's batch is not released: its share must stay done
    expired = store.expire(time.time() + 1)
    assert expired.records > 0 and len(expired.sink_latencies_ms) == audit.sink_events == 3
    assert store.share_done("b", "0-4", 0) and not store.share_done("a", "0-8", 0)
    assert store.sink_events("out") == [] and store.task_stats("a", 0.0, time.time() + 1) == {}
    assert store.audit() == audit
    store.drop_consumed("b", 4)
    store.expire(time.time() + 1)
    assert store.expire(time.time() + 1) == (0, [])  # nothing left to forget or count twice
    assert store.audit() == audit and not store.share_done("b", "0-4", 0)


def test_expiry_keeps_what_is_newer(open_store):
    store = make_queues(open_store())
    store.append("a", events(4), "src", 0)
    run_share(store, store.plan_batch("a", 0, 4, 1, alternate), 0, "out")
    store.drop_consumed("a", 4)
    assert store.expire(time.time() - 60) == (0, [])
    assert len(store.sink_events("out")) == 4 and store.task_stats("a", 0.0, time.time() + 1)


# -- keyed state ------------------------------------------------------------------------------
GROUPS = 8


def by_group(keys: list[str], replicas: int) -> list[int]:
    """A stateful operator's division: each event to the owner of its key's group."""
    return key_groups(keys, replicas, GROUPS)


def count_share(store: QueueStore, plan: BatchPlan, replica: int, target: str = "b") -> bool:
    """A keyed count's share: read its keys' committed counts, add its events, commit outputs
    and state together; False if the share was committed before."""
    if store.share_done(plan.op, plan.batch, replica):
        return False
    shared = store.read_share(plan, replica).events()
    keys = sorted({e.key for e in shared})
    committed = store.read_state(plan.op, [(key_group(k, GROUPS), k) for k in keys])
    state = KeyedState(plan.op, GROUPS, keys, committed)
    for e in shared:
        state.put(e.key, state.get(e.key, 0) + 1)
    outcomes = forward(shared, target)
    commit = share_commit(plan.op, plan.batch, replica, outcomes, (), 0.0, state.writes())
    return store.commit_share(commit)


def counts(store: QueueStore, op: str = "a") -> dict[str, int]:
    return {key: decode_value(value) for _, key, value in store.state_items(op)}


def sent(n: int, start: int = 0) -> dict[str, int]:
    return dict(Counter(e.key for e in events(n, start)))


def test_a_replayed_share_writes_its_state_once(open_store):
    store = make_queues(open_store())
    store.append("a", events(12), "src", 0)
    plan = store.plan_batch("a", 0, 12, 2, lambda keys: by_group(keys, 2))
    assert count_share(store, plan, 0) is True
    after_first = counts(store)
    shared = store.read_share(plan, 0).events()
    again = KeyedState("a", GROUPS, [e.key for e in shared], {})
    for e in shared:
        again.put(e.key, 1000)  # a replay that would overwrite: refused with the whole share
    replay = share_commit("a", plan.batch, 0, forward(shared, "b"), (), 0.0, again.writes())
    assert store.commit_share(replay) is False
    assert counts(store) == after_first and after_first
    assert count_share(store, plan, 1) is True
    assert counts(store) == sent(12)


def test_state_committed_by_one_batch_is_read_by_the_next_whatever_r(open_store):
    store = make_queues(open_store())
    store.append("a", events(10), "src", 0)
    store.append("a", events(10, start=10), "src", 10)
    for start, end, r in ((0, 10, 1), (10, 20, 3)):  # r changes between the batches
        plan = store.plan_batch("a", start, end, r, lambda keys, r=r: by_group(keys, r))
        assert all(count_share(store, plan, j) for j in range(r) if j in plan.owners)
    assert counts(store) == sent(20)  # k0..k3, five each
    groups = [g for g, _, _ in store.state_items("a")]
    assert groups == sorted(groups)
    assert {k for g, k, _ in store.state_items("a", range(0, 4))} == {
        k for k in sent(20) if key_group(k, GROUPS) < 4
    }


def test_state_deletes_commit_with_the_share_and_a_failed_commit_writes_no_state(open_store):
    store = make_queues(open_store())
    store.append("a", events(8), "src", 0)
    plan = store.plan_batch("a", 0, 4, 1, lambda keys: by_group(keys, 1))
    count_share(store, plan, 0)
    state = KeyedState(
        "a", GROUPS, ["k0", "k1"], store.read_state("a", [(key_group("k0", 8), "k0")])
    )
    state.delete("k0")
    state.put("k1", {"seen": [1, 2]})
    later = store.plan_batch("a", 4, 8, 1, lambda keys: by_group(keys, 1))
    broken = forward(store.read_share(later, 0).events(), "nowhere")
    with pytest.raises(QueueError, match="unknown queue 'nowhere'"):
        store.commit_share(share_commit("a", later.batch, 0, broken, (), 0.0, state.writes()))
    assert counts(store) == sent(4)  # nothing of the failed share's state
    good = forward(store.read_share(later, 0).events(), "b")
    assert store.commit_share(share_commit("a", later.batch, 0, good, (), 0.0, state.writes()))
    assert counts(store) == {"k1": {"seen": [1, 2]}, "k2": 1, "k3": 1}


def test_kill_and_resume_counts_every_event_once(open_store):
    store = make_queues(open_store())
    store.append("a", events(16), "src", 0)
    plan = store.plan_batch("a", 0, 16, 2, lambda keys: by_group(keys, 2))
    owners = [j for j in range(2) if j in plan.owners]
    count_share(store, plan, owners[0])  # then the process is killed
    store.close()

    resumed = open_store()
    again = resumed.plan_batch("a", 0, 16, 4, lambda keys: by_group(keys, 4))  # r is 4 by now
    assert again == plan  # the recorded division: key groups stay with their batch's owners
    assert [count_share(resumed, again, j) for j in owners] == [False] + [True] * (len(owners) - 1)
    resumed.append("a", events(8, start=16), "src", 16)
    after = resumed.plan_batch("a", 16, 24, 4, lambda keys: by_group(keys, 4))
    for j in range(4):
        count_share(resumed, after, j)
    assert counts(resumed) == sent(24)
    assert resumed.pending("a") == 0


def test_outputs_beyond_a_bounded_successor_are_refused_and_counted(open_store):
    store = open_store()
    store.create_queue("a", None)
    store.create_queue("b", 2)
    store.create_queue("out", None, sink=True)
    store.append("a", events(5), "src", 0)
    plan = store.plan_batch("a", 0, 5, 1, alternate)
    t0 = time.time()
    assert run_share(store, plan, 0, "b") is True
    assert (store.latest("b"), store.overflow_count("b", t0, time.time() + 1)) == (2, 3)
    assert store.arrivals("b", t0, time.time() + 1) == {"a": 5}
    audit = store.audit()
    assert (audit.events_in, audit.overflow, audit.pending) == (5, 3, 2)


def test_sink_latencies_of_an_interval_are_those_that_arrived_in_it(open_store):
    store = every_fate(make_queues(open_store(), bound=8))
    now = time.time()
    every = store.sink_latencies_ms()
    assert len(every) == 3
    assert sorted(store.sink_latencies_ms_between(0.0, now + 1)) == sorted(every)
    assert store.sink_latencies_ms_between(now + 1, now + 2) == []


def test_sink_latencies_of_an_interval_leave_out_earlier_and_later_segments(open_store):
    store = open_store()
    store.create_queue("out", None, sink=True)
    t0 = time.time()
    store.append("out", events(3, ts=t0 - 100.0), "src", 0)  # latency about 100 s
    time.sleep(0.02)
    t_mid = time.time()
    store.append("out", events(2, start=3, ts=t0 - 200.0), "src", 3)  # about 200 s
    t1 = time.time()
    early = store.sink_latencies_ms_between(0.0, t_mid)
    late = store.sink_latencies_ms_between(t_mid, t1 + 1)
    assert len(early) == 3 and all(100_000 <= ms <= (t_mid - t0 + 100) * 1000 for ms in early)
    assert len(late) == 2 and all(200_000 <= ms <= (t1 - t0 + 200) * 1000 for ms in late)
    assert store.sink_latencies_ms_between(t1 + 1, t1 + 2) == []
    assert sorted(store.sink_latencies_ms()) == sorted(early + late)


def test_a_store_written_in_an_earlier_format_is_refused_naming_it(open_store):
    store = make_queues(open_store())
    store.append("a", events(3), "src", 0)
    store.set_meta("store_format", "msgpack-0")  # what an earlier elastream's store says
    with pytest.raises(QueueError, match=r"written in another format \(msgpack-0; .*arrow-2"):
        type(store)(store.address)
    store.set_meta("store_format", None)  # the earliest stores did not say at all
    with pytest.raises(QueueError, match="an earlier msgpack format"):
        type(store)(store.address)


def test_a_division_naming_a_replica_beyond_r_is_refused(open_store):
    """Each owner must be below r: one owner at r or beyond among valid ones is enough."""
    store = make_queues(open_store())
    store.append("a", events(4), "src", 0)
    for owners in ([0, 1, 2, 0], [0, 1, 0, 5]):  # r = 2: replica 2, then 5, named once
        with pytest.raises(QueueError, match="the division of batch 0-4 is invalid"):
            store.plan_batch("a", 0, 4, 2, lambda keys, o=owners: o)
    assert store.plan_batch("a", 0, 4, 2, lambda keys: [0, 1, 1, 0]).owners == bytes([0, 1, 1, 0])


def test_of_two_drivers_planning_one_batch_the_first_recorded_plan_wins(open_store):
    """A race: two processes saw no plan for the batch and divide it differently; the second
    to record gets the first one's division, so no event is processed twice."""
    first, second = make_queues(open_store()), open_store()
    first.append("a", events(6), "src", 0)
    won = first.plan_batch("a", 0, 6, 2, alternate)
    lost = second._record_new_plan("a", 0, 6, 3, lambda keys: [2] * len(keys))
    assert lost == won and (lost.replicas, lost.owners) == (2, bytes([0, 1, 0, 1, 0, 1]))


def test_a_partly_full_bounded_queue_takes_only_its_room(open_store):
    """q_size counts what is queued and not done: 2 queued of 3 leave room for 1."""
    store = make_queues(open_store(), bound=3)
    assert store.append("a", events(2), "src", 0) == (2, 0)
    assert store.append("a", events(2, start=2), "src", 2) == (1, 1)


def test_a_share_of_a_batch_inside_later_segments_reads_its_own_offsets(open_store):
    """Batches that start inside a segment appended at a later offset, with one replica and
    with two: each replica reads exactly its offsets (expected by hand)."""
    store = make_queues(open_store())
    store.append("a", events(4), "src", 0)  # segment [0, 4)
    store.append("a", events(8, start=4), "src", 4)  # segment [4, 12)
    store.plan_batch("a", 0, 6, 1, alternate)  # offsets 0-5 done first
    one = store.plan_batch("a", 6, 9, 1, alternate)
    assert [e.id for e in store.read_share(one, 0).events()] == [6, 7, 8]
    assert store.read_share(one, 1).events() == []  # r = 1: replica 1 has nothing
    two = store.plan_batch("a", 9, 12, 2, lambda keys: [1, 0, 1])
    assert [e.id for e in store.read_share(two, 0).events()] == [10]
    assert [e.id for e in store.read_share(two, 1).events()] == [9, 11]


def test_a_sink_append_records_each_events_latency(open_store):
    """The sink latency of an append: now − the event's source time, per event (ms)."""
    store = make_queues(open_store())
    t = time.time()
    store.append("out", events(2, ts=t - 2.0), "b", 0)
    store.append("out", events(2, start=2, ts=t - 4.0), "b", 2)
    n, mean_ms = store.sink_latency(t - 60)
    assert n == 4 and mean_ms == pytest.approx(3000, abs=500)  # (2 + 2 + 4 + 4) s / 4


def test_a_share_of_a_batch_across_two_segments_reads_its_own_offsets(open_store):
    """A batch from offset 2 to 7 spans the segments [0, 4) and [4, 12): with two replicas
    each reads its offsets from both (expected by hand)."""
    store = make_queues(open_store())
    store.append("a", events(4), "src", 0)
    store.append("a", events(8, start=4), "src", 4)
    store.plan_batch("a", 0, 2, 1, alternate)
    plan = store.plan_batch("a", 2, 7, 2, lambda keys: [0, 1, 0, 1, 1])
    assert [e.id for e in store.read_share(plan, 0).events()] == [2, 4]
    assert [e.id for e in store.read_share(plan, 1).events()] == [3, 5, 6]
