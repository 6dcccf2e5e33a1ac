"""The networked queue store: durable batch queues of a run in Redis Streams, for executors on
other machines.

One stream per queue; an entry per appended segment (its id is the segment's end offset, so
integer offsets stay exact and retention is one XTRIM MINID). Every write that must be atomic —
an append with its producer's count, or a replica's share with its outputs, fates, failures and
"share done" mark — is one request to one Lua script (`APPLY`), which checks its guards first and
writes only when all pass. Key layout and persistence settings: docs/runtime.md.
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

import msgpack
import numpy as np

from elastream.base.arrays import distinct
from elastream.model.batch import EventBatch
from elastream.model.events import Event, OutcomeKind
from elastream.runtime.queues.records import (
    SHARE_KINDS,
    Appended,
    Audit,
    BatchPlan,
    BatchWork,
    Control,
    ExpiredCounts,
    Expiry,
    OutcomeCounts,
    QueueError,
    ReplicaWork,
    Segment,
    ShareCommit,
    SinkLatency,
    StateItem,
    Stored,
    batch_of,
    build_audit,
)
from elastream.runtime.queues.redis_client import RedisAddress, connect
from elastream.runtime.queues.redis_requests import APPLY, DROP_CONSUMED, Append, Request
from elastream.runtime.queues.segments import (
    SegmentedQueues,
    check_format,
    pack_roots,
    unpack_roots,
)

log = logging.getLogger(__name__)
RANGE_CHUNK = 256  # stream entries per XRANGE round trip
MAX_ROOM_RETRIES = 100  # a bounded queue's room changed between two tries of one append
BUSY, CPU = -2, -1  # positions of the busy and CPU seconds in a share record


class RedisQueueStore(SegmentedQueues):
    """The `QueueStore` of one Redis database and key prefix (see the module docstring)."""

    def __init__(self, address: str) -> None:
        self.where = RedisAddress.parse(address)
        self.address = self.where.url()
        self.p = f"{self.where.prefix}:"
        self.r = connect(self.where)
        self._apply = self.r.register_script(APPLY)
        self._drop_consumed = self.r.register_script(DROP_CONSUMED)
        self._sinks: dict[str, bool] = {}
        check_format(self, self.where.redacted(), fresh=not self.r.exists(self._k("meta")))

    def close(self) -> None:
        self.r.close()

    def exists(self) -> bool:
        """Whether a run has been set up under this prefix (its pipeline is recorded)."""
        return bool(self.r.hexists(self._k("meta"), "pipeline"))

    def clear(self) -> int:
        """Delete every key of this prefix (a fresh run over an old one); how many."""
        removed = 0
        batch: list[bytes] = []
        for key in self.r.scan_iter(match=f"{_glob_escape(self.p)}*", count=1000):
            batch.append(key)
            if len(batch) >= 500:
                removed += self.r.unlink(*batch)
                batch = []
        if batch:
            removed += self.r.unlink(*batch)
        self._sinks.clear()
        return removed

    def _k(self, *parts: str) -> str:
        return self.p + ":".join(parts)

    # -- set-up and control ----------------------------------------------------------------
    def create_queue(self, name: str, bound: int | None, sink: bool = False) -> None:
        key = self._k("q", name)
        fields = {"next": 0, "done": 0, "bound": "" if bound is None else bound, "sink": int(sink)}
        with self.r.pipeline(transaction=True) as tx:  # a queue that exists stays as it is
            for name_, value in fields.items():
                tx.hsetnx(key, name_, value)
            tx.sadd(self._k("queues"), name)
            tx.execute()

    def set_meta(self, key: str, value: Any) -> None:
        self.r.hset(self._k("meta"), key, json.dumps(value))

    def meta(self, key: str, default: Any = None) -> Any:
        value = self.r.hget(self._k("meta"), key)
        return default if value is None else json.loads(value)

    def set_control(
        self, op: str, replicas: int, cap: int, et: float, replica_et: Sequence[float]
    ) -> None:
        row = [replicas, cap, et, [round(e, 6) for e in replica_et]]
        self.r.hset(self._k("control"), op, json.dumps(row))

    def control(self, op: str) -> Control:
        value = self.r.hget(self._k("control"), op)
        if value is None:
            raise QueueError(f"no control row for operator {op!r}")
        return Control(*json.loads(value))

    # -- the atomic step ----------------------------------------------------------------------
    def _run(self, request: Request) -> list[Any]:
        """Apply `request` atomically; if a bounded queue had less room than assumed, cut the
        refused events off and try again. Returns the script's final answer."""
        for _ in range(MAX_ROOM_RETRIES):
            answer = self._apply(args=[self.p, request.wire(time.time())])
            reason = answer[0].decode()
            if reason == "unknown":
                raise QueueError(f"unknown queue {answer[1].decode()!r}")
            if reason != "room":
                return [reason, *answer[1:]]
            for append, room in zip(request.appends, answer[1:], strict=True):
                append.accepted = min(int(room), len(append.events))
        raise QueueError(f"the room of queues {[a.q for a in request.appends]} kept changing")

    # -- producing ----------------------------------------------------------------------------
    def append(
        self, q: str, events: Sequence[Event] | EventBatch, producer: str, first: int
    ) -> Appended:
        """A source offers its events number `first`, `first + 1`, … to `q`, idempotently."""
        batch = batch_of(events)
        expect = first  # what the source's count usually is; the script says if not
        while True:
            if first > expect:
                raise QueueError(
                    f"source {producer!r} appends events from #{first} to queue {q!r}, "
                    f"but only {expect} were offered before: events would be missing"
                )
            fresh = batch.slice(expect - first, len(batch))
            after = max(expect, first + len(batch))
            count = {"q": q, "name": producer, "expect": expect, "after": after}
            request = Request(producer=count)
            if len(fresh):
                request.appends.append(Append(q, producer, fresh, self._is_sink(q)))
            answer = self._run(request)
            if answer[0] == "offered":
                expect = int(answer[1])
                continue
            if not len(fresh):
                return Appended(0, 0)
            accepted = request.appends[0].accepted
            accepted = len(fresh) if accepted < 0 else accepted
            return Appended(accepted, len(fresh) - accepted)

    def produced(self, q: str, producer: str) -> int:
        return int(self.r.hget(self._k("prod", q), producer) or 0)

    def _is_sink(self, q: str) -> bool:
        if q not in self._sinks:
            value = self.r.hget(self._k("q", q), "sink")
            if value is None:
                raise QueueError(f"unknown queue {q!r}")
            self._sinks[q] = value == b"1"
        return self._sinks[q]

    # -- consuming ----------------------------------------------------------------------------
    def latest(self, q: str) -> int:
        value = self.r.hget(self._k("q", q), "next")
        if value is None:
            raise QueueError(f"unknown queue {q!r}")
        return int(value)

    def _segments(self, q: str, start: int, end: int) -> Iterator[Segment]:
        """The segments overlapping [start, end), in offset order (an entry's id is its
        segment's end offset)."""
        low = f"{start + 1}-0"
        key = self._k("s", q)
        while True:
            entries = self.r.xrange(key, min=low, max="+", count=RANGE_CHUNK)
            for _, values in entries:
                first = int(values[b"first"])
                if first >= end:
                    return
                yield Segment(first, float(values[b"enq"]), values[b"keys"], values[b"body"])
            if len(entries) < RANGE_CHUNK:
                return
            low = "(" + entries[-1][0].decode()

    def _record_plan(self, plan: BatchPlan) -> None:
        record = msgpack.packb([plan.end, plan.replicas, plan.owners], use_bin_type=True)
        with self.r.pipeline(transaction=True) as tx:  # recorded once: the first plan wins
            tx.hsetnx(self._k("plan", plan.op), str(plan.start), record)
            tx.zadd(self._k("planend", plan.op), {str(plan.start): plan.end}, nx=True)
            tx.execute()

    def _plans(self, op: str) -> list[BatchPlan]:
        plans = []
        for start, value in self.r.hgetall(self._k("plan", op)).items():
            end, replicas, owners = msgpack.unpackb(value, raw=False)
            plans.append(BatchPlan(op, int(start), end, replicas, bytes(owners)))
        return plans

    def _plan(self, op: str, start: int) -> BatchPlan | None:
        value = self.r.hget(self._k("plan", op), str(start))
        if value is None:
            return None
        end, replicas, owners = msgpack.unpackb(value, raw=False)
        return BatchPlan(op, start, end, replicas, bytes(owners))

    def share_done(self, op: str, batch: str, replica: int) -> bool:
        return bool(self.r.hexists(self._k("done", op), f"{batch}|{replica}"))

    def commit_share(self, commit: ShareCommit) -> bool:
        counts = "|".join(str(commit.count(kind)) for kind in SHARE_KINDS)
        record = (
            f"{commit.batch}|{commit.replica}|{commit.events}|{counts}|{commit.n_out}|"
            f"{commit.busy_s!r}|{commit.cpu_s!r}"
        )
        request = Request(
            mark={
                "op": commit.op,
                "field": f"{commit.batch}|{commit.replica}",
                "record": record,
                "events": commit.events,
            },
            appends=[
                Append(target, commit.op, events, self._is_sink(target))
                for target, events in commit.outputs.items()
            ],
            roots=[
                (kind.value, pack_roots(commit.fates[kind]))
                for kind in (OutcomeKind.FILTERED, OutcomeKind.TIMEOUT)
                if commit.fates.get(kind) is not None and len(commit.fates[kind])
            ],
            failures=[
                (
                    commit.op,
                    str(f.id),
                    msgpack.packb([f.root, f.message, f.payload], use_bin_type=True),
                )
                for f in commit.failures
            ],
            puts=[
                (commit.op, w.group, w.key, w.value) for w in commit.state if w.value is not None
            ],
            dels=[(commit.op, w.group, w.key) for w in commit.state if w.value is None],
        )
        return self._run(request)[0] == "ok"

    # -- keyed state: one hash per (operator, key group), a sorted set of the groups used --------
    def read_state(self, op: str, keys: Sequence[tuple[int, str]]) -> dict[str, bytes]:
        ordered = list(keys)
        with self.r.pipeline(transaction=False) as pipe:
            for group, key in ordered:
                pipe.hget(self._k("st", op, str(group)), key)
            values = pipe.execute()
        return {key: v for (_, key), v in zip(ordered, values, strict=True) if v is not None}

    def state_items(self, op: str, groups: range | None = None) -> Iterator[StateItem]:
        lo, hi = (groups.start, groups.stop - 1) if groups is not None else ("-inf", "+inf")
        for member in self.r.zrangebyscore(self._k("stg", op), lo, hi):
            group = int(member)
            entries = self.r.hgetall(self._k("st", op, str(group)))
            for key in sorted(entries):
                yield StateItem(group, key.decode(), entries[key])

    def drop_consumed(self, op: str, end: int) -> int:
        return int(self._drop_consumed(args=[self.p, op, end]))

    # -- monitoring ---------------------------------------------------------------------------
    def pending(self, q: str) -> int:
        nxt, done = self.r.hmget(self._k("q", q), ["next", "done"])
        if nxt is None:
            raise QueueError(f"unknown queue {q!r}")
        return int(nxt) - int(done)

    def _appends(self, q: str, t0: float, t1: float) -> Iterator[tuple[int, int, float, str]]:
        """(accepted, refused, latency sum, producer) of the appends to `q` in [t0, t1)."""
        for member in self.r.zrangebyscore(self._k("ap", q), t0, f"({t1!r}"):
            _, acc, ref, lat, producer = member.decode().split("|", 4)
            yield int(acc), int(ref), float(lat), producer

    def _shares(self, op: str, t0: float, t1: float) -> Iterator[list[str]]:
        """The share records of `op` committed in [t0, t1): batch, replica, events, the counts of
        SHARE_KINDS, outputs, busy seconds (BUSY), CPU seconds (CPU)."""
        for member in self.r.zrangebyscore(self._k("sh", op), t0, f"({t1!r}"):
            yield member.decode().split("|")

    def arrivals(self, q: str, t0: float, t1: float) -> dict[str, int]:
        """Events offered to `q` in [t0, t1) per producer, refused ones included (λ^p_i)."""
        out: dict[str, int] = defaultdict(int)
        for acc, ref, _, producer in self._appends(q, t0, t1):
            out[producer] += acc + ref
        return dict(out)

    def overflow_count(self, q: str, t0: float, t1: float) -> int:
        return sum(ref for _, ref, _, _ in self._appends(q, t0, t1))

    def outcome_counts(self, op: str, t0: float, t1: float) -> OutcomeCounts:
        totals = [0] * (len(SHARE_KINDS) + 1)
        for rec in self._shares(op, t0, t1):
            for k in range(len(totals)):
                totals[k] += int(rec[3 + k])
        counts = {kind: n for kind, n in zip(SHARE_KINDS, totals, strict=False) if n}
        return OutcomeCounts(counts, totals[-1])

    def task_stats(self, op: str, t0: float, t1: float) -> dict[int, ReplicaWork]:
        out: dict[int, ReplicaWork] = {}
        for rec in self._shares(op, t0, t1):
            n, busy, cpu, k, sq = out.get(int(rec[1]), ReplicaWork(0, 0.0))
            events, share_busy = int(rec[2]), float(rec[BUSY])
            if events > 0:
                k, sq = k + 1, sq + share_busy * share_busy / events
            out[int(rec[1])] = ReplicaWork(
                n + events, busy + share_busy, cpu + float(rec[CPU]), k, sq
            )
        return out

    def _queues(self) -> list[tuple[str, bool]]:
        """(name, is a sink) of every queue."""
        names = sorted(n.decode() for n in self.r.smembers(self._k("queues")))
        return [(name, self._is_sink(name)) for name in names]

    def batch_work(self) -> list[BatchWork]:
        work: dict[tuple[str, str], BatchWork] = {}
        for op, sink in self._queues():
            if sink:
                continue
            for rec in self._shares(op, float("-inf"), float("inf")):
                key = (op, rec[0])
                old = work.get(key, BatchWork(op, rec[0], 0.0, 0, 0, 0))
                n = int(rec[2])
                work[key] = old._replace(
                    busy_s=max(old.busy_s, float(rec[BUSY])),
                    events=old.events + n,
                    largest=max(old.largest, n),
                    tasks=old.tasks + 1,
                )
        return list(work.values())

    def sink_latency(self, t0: float, t1: float | None = None) -> SinkLatency:
        t1 = float("inf") if t1 is None else t1
        n, total = 0, 0.0
        for q, sink in self._queues():
            if sink:
                for acc, _, lat, _ in self._appends(q, t0, t1):
                    n += acc
                    total += lat
        return SinkLatency(n, total * 1000 / n if n else None)

    def _sink_queues(self) -> list[str]:
        return [q for q, sink in self._queues() if sink]

    def audit(self) -> Audit:
        """Account for every source event by its fate (see `Audit`), as the SQLite store does."""
        fates = {
            "filtered": self._roots(OutcomeKind.FILTERED.value),
            "timeout": self._roots(OutcomeKind.TIMEOUT.value),
            "overflow": self._roots("overflow"),
            "failed": self._failed_roots(),
        }
        pending = sum(self.pending(q) for q, sink in self._queues() if not sink)
        return build_audit(self._events_in(), pending, self._sink_roots(), fates, self._expired())

    def _events_in(self) -> int:
        """Source events offered (a tick producer, `~…`, is not input)."""
        offered: dict[str, int] = defaultdict(int)
        for q, _ in self._queues():
            for producer, n in self.r.hgetall(self._k("prod", q)).items():
                if not producer.startswith(b"~"):
                    offered[producer.decode()] = max(offered[producer.decode()], int(n))
        return sum(offered.values())

    def _failed_roots(self) -> np.ndarray:
        failed = [
            msgpack.unpackb(value, raw=False)[0]
            for q, sink in self._queues()
            if not sink
            for value in self.r.hvals(self._k("err", q))
        ]
        return np.asarray(failed, np.int64)

    def _lost_roots(self) -> tuple[np.ndarray, int]:
        kept = np.concatenate(
            [self._roots("timeout"), self._roots("overflow"), self._failed_roots()]
        )
        expired = self._expired()
        return distinct(kept), expired.timeout + expired.overflow

    def _roots(self, fate: str) -> np.ndarray:
        members = self.r.zrange(self._k("roots", fate), 0, -1)
        return np.concatenate([np.empty(0, np.int64), *map(_member_roots, members)])

    def expire(self, before: float) -> Expiry:
        """As the SQLite store's `expire`: sink entries, appends, fate roots and the shares (with
        their done marks) of released batches, recorded before `before`; fates kept as counts."""
        sunk, n = self._expire_sinks(before), 0
        roots = np.concatenate([np.empty(0, np.int64)] + [s.batch.roots for s in sunk])
        counts = {"to_sink": len(distinct(roots)), "sink_events": len(roots)}
        for fate in ("filtered", "timeout", "overflow"):
            members = self.r.zrangebyscore(self._k("roots", fate), "-inf", f"({before!r}")
            counts[fate] = sum(len(_member_roots(m)) for m in members)
            n += self.r.zrem(self._k("roots", fate), *members) if members else 0
        with self.r.pipeline(transaction=True) as tx:
            for name, value in counts.items():
                tx.hincrby(self._k("expired"), name, value)
            tx.execute()
        for q, sink in self._queues():
            n += self.r.zremrangebyscore(self._k("ap", q), "-inf", f"({before!r}")
            if not sink:
                n += self._expire_shares(q, before)
        latencies = [ms for s in sunk for ms in ((s.enq - s.batch.ts) * 1000).tolist()]
        return Expiry(n + len(sunk), latencies)

    def _expire_sinks(self, before: float) -> list[Stored]:
        """Delete the sink entries `_sink_segments(before)` yields; each of them."""
        sunk: list[Stored] = []
        ends: dict[str, int] = {}
        for q, stored in self._sink_segments(before):
            sunk.append(stored)
            ends[q] = stored.first + len(stored.batch)
        for q, end in ends.items():
            # exact: an approximate trim keeps whole stream nodes, whose entries (counted as
            # expired here) the next expiry and the audit would count again
            self.r.xtrim(self._k("s", q), minid=f"{end + 1}-0", approximate=False)
        return sunk

    def _expire_shares(self, op: str, before: float) -> int:
        """Delete the share records and done marks of `op`'s released batches before `before`."""
        key = self._k("sh", op)
        gone = [
            m
            for m in self.r.zrangebyscore(key, "-inf", f"({before!r}")
            if not self.r.hexists(self._k("plan", op), m.split(b"|", 1)[0].split(b"-")[0])
        ]
        if gone:
            marks = [b"|".join(m.split(b"|", 2)[:2]) for m in gone]
            with self.r.pipeline(transaction=True) as tx:
                tx.zrem(key, *gone)
                tx.hdel(self._k("done", op), *marks)
                tx.execute()
        return len(gone)

    def _expired(self) -> ExpiredCounts:
        stored = self.r.hgetall(self._k("expired"))
        return ExpiredCounts(**{k.decode(): int(v) for k, v in stored.items()})


def _member_roots(member: bytes) -> np.ndarray:
    """The roots of one fate-roots member (`SEQ|packed roots`)."""
    return unpack_roots(member.split(b"|", 1)[1])


def _glob_escape(text: str) -> str:
    """`text` as a literal in a Redis glob pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)
