"""Realizing a plan's replica counts on Spark: each operator's r_i, batch cap and measured
service times published in the queue store, where the replicas' plan-time code reads them."""

from __future__ import annotations

from dataclasses import dataclass, field

from elastream.control.policy import Decision
from elastream.model.pipeline import Pipeline
from elastream.model.snapshot import OperatorStats
from elastream.prediction.batching import admission_cap  # Eq. B1, docs/modeling.md
from elastream.runtime.queues import QueueStore, ReplicaWork
from elastream.runtime.queues.records import per_event_s


@dataclass
class OperatorState:
    """What the driver remembers of one operator between intervals."""

    replicas: int
    service_time_s: float
    replica_et: list[float] = field(default_factory=list)
    measured: bool = False  # service_time_s is an interval's measurement, not the seed


class Replicas:
    """Each operator's active replicas and latest service times, as the store publishes them."""

    def __init__(self, pipeline: Pipeline, store: QueueStore, batch_s: float) -> None:
        self.pipeline = pipeline
        self.store = store
        self.batch_s = batch_s
        self.ops: dict[str, OperatorState] = {}

    def load(self, resume: bool) -> None:
        """Each operator at its pool's start (a resumed run: where the run left it)."""
        for op in self.pipeline.operators:
            replicas = self.store.control(op.name).replicas if resume else op.replicas.start
            self.ops[op.name] = OperatorState(replicas, op.et_seed_s)
            self.publish(op.name)

    def __getitem__(self, name: str) -> OperatorState:
        return self.ops[name]

    def enact(self, decision: Decision) -> None:
        """Execute: each operator's new replica count, live (no query restarts)."""
        for name, replicas in decision.replicas:
            self.ops[name].replicas = replicas
            self.publish(name)

    def remember(self, stats: OperatorStats, tasks: dict[int, ReplicaWork]) -> None:
        """Keep the latest measured et_i and et_ij for the next plans (unchanged if idle)."""
        st = self.ops[stats.name]
        if stats.service_time_s is not None:
            st.service_time_s = stats.service_time_s
            st.measured = True
        known = dict(enumerate(st.replica_et))
        known.update({j: w.busy_s / w.events for j, w in tasks.items() if w.events > 0})
        st.replica_et = [known.get(j, st.service_time_s) for j in range(stats.max_replicas)]
        self.publish(stats.name)

    def measure_early(self, since: float, now: float) -> None:
        """Before an operator's first interval ends: its et_i from the shares it committed since
        `since`, published at once. Its batch cap (Eq. B1) otherwise stays at the seed's until
        that interval ends: 100 events a replica for an operator that declares no time (10 ms
        an event), so a vectorized operator's backlog went through in batches of a few hundred
        events for its whole first interval (results.md, 30 Nov)."""
        for name, st in self.ops.items():
            if st.measured:
                continue
            et = per_event_s(self.store.task_stats(name, since, now).values())
            if et is not None:
                st.service_time_s = et
                self.publish(name)

    def publish(self, name: str) -> None:
        """Publish r_i, the batch cap, et_i and et_ij where plan-time code reads them."""
        st = self.ops[name]
        cap = admission_cap(st.replicas, st.service_time_s, self.batch_s)
        self.store.set_control(name, st.replicas, cap, st.service_time_s, st.replica_et)
