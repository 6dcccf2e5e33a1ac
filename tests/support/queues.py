"""Queue-store test helpers: a store under test, events, one replica's share run by hand."""

from __future__ import annotations

import time

from elastream.model.events import Event, Outcome, OutcomeKind
from elastream.runtime.queues import QueueStore
from elastream.runtime.queues.records import BatchPlan, share_commit


def make_queues(store: QueueStore, bound: int | None = None) -> QueueStore:
    """src → a → b → out: two operator queues (a bounded by `bound`) and a sink."""
    store.create_queue("a", bound)
    store.create_queue("b", None)
    store.create_queue("out", None, sink=True)
    return store


def events(n: int, start: int = 0, ts: float | None = None) -> list[Event]:
    """Source events number start .. start + n - 1 (id and root: their number)."""
    now = time.time() if ts is None else ts
    return [Event(i, f"k{i % 4}", now, {"i": i, "tag": b"\x00x"}) for i in range(start, start + n)]


def forward(events_: list[Event], target: str) -> list[Outcome]:
    """A pass-through operator's outcomes: one output per input, to `target`."""
    return [
        Outcome(
            e.id,
            e.root,
            OutcomeKind.PROCESSED,
            ((target, Event(e.id, e.key, e.ts, e.payload, e.root)),),
        )
        for e in events_
    ]


def run_share(store: QueueStore, plan: BatchPlan, replica: int, target: str) -> bool:
    """Process one share as a replica does and commit it; False if it was committed before."""
    if store.share_done(plan.op, plan.batch, replica):
        return False
    outcomes = forward(store.read_share(plan, replica).events(), target)
    return store.commit_share(share_commit(plan.op, plan.batch, replica, outcomes, (), 0.01))


def alternate(keys: list[str]) -> list[int]:
    return [k % 2 for k in range(len(keys))]
