"""Recording every run's metrics history (per interval, operator and replica) for the models:
the rows are derived from the same Snapshots on either engine (docs/modeling.md)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from elastream.control.policy import Decision
from elastream.history import HistoryRow, HistoryStore, RunCpuRow, backpressure
from elastream.model.snapshot import OperatorStats, Snapshot
from elastream.prediction.graph import ANY_STREAM
from elastream.runner.process_cpu import tree_cpu_seconds

ALL_STREAMS = ANY_STREAM  # outputs over all streams together, when the engine gives no split


def replica_rows(
    run_id: str, pipeline: str, snap: Snapshot, o: OperatorStats, queue_before: int
) -> list[HistoryRow]:
    """One row per active replica of `o` in interval `snap`: the events offered to the operator
    in the interval (its arrivals, admitted or left queued) and its outputs, each split by the
    replica's share of what was processed, per output stream when the engine counts them; admitted
    rate, busy share, CPU (cores, when the engine measures it), queue, backpressure (the
    admission cap was hit or the queue grew), the replica's service-time variance and its
    micro-batches with events (when the engine counts them), the external backlog of the
    sources feeding it (files not yet read, Redis lag: `Snapshot.source_backlog`). The
    backlog at the start is not offered again: counting it would make a micro-batch runtime
    look saturated whenever an interval ends inside a batch."""
    r = max(o.replicas, 1)
    td = snap.interval_s
    shares = list(o.replica_processed) or [o.processed / r] * r
    total = sum(shares)
    flag = backpressure(o.admission_capped, queue_before, o.queue)
    held = operator_backlog(snap, o)
    outputs = dict(o.emitted_streams) or {ALL_STREAMS: o.emitted}
    rows = []
    for j, processed in enumerate(shares[:r]):
        part = processed / total if total else 1.0 / r
        busy = o.utilization[j] if j < len(o.utilization) else o.busy_s / (r * td)
        variance = o.service_time_var[j] if j < len(o.service_time_var) else None
        batches = o.replica_batches[j] if j < len(o.replica_batches) else None
        rows.append(
            HistoryRow.of(
                run_id=run_id,
                pipeline=pipeline,
                operator=o.name,
                replica=j,
                parallelism=o.replicas,
                t=snap.t - td,
                interval_s=td,
                source_rate=o.received * part / td,
                input_rate=processed / td,
                output_rates={k: n * part / td for k, n in outputs.items()},
                busy=busy,
                cpu=None if o.cpu_s is None else o.cpu_s * part / td,
                queue_length=o.queue / r,
                backpressure=flag,
                service_time_var=variance,
                batches=batches,
                source_backlog=None if held is None else held / r,
            )
        )
    return rows


def operator_backlog(snap: Snapshot, o: OperatorStats) -> int | None:
    """The external backlog of the sources feeding `o` directly (None: none of them tells)."""
    backlog = dict(snap.source_backlog)
    held = [backlog[p] for p, _ in o.received_from if p in backlog]
    return sum(held) if held else None


FLUSH_ROWS = 20_000  # rows held in memory before they are appended to the history store


@dataclass
class HistoryRecorder:
    """A MAPE-loop observer that keeps the history rows of one run; with a `path` it appends
    them to that history store every FLUSH_ROWS rows, so a long run holds few in memory. With
    `process_cpu` (a run in real time whose processes all descend from this one: Spark in local
    mode) it also records the CPU of this process and its descendants per interval, from the
    second interval on (the first one's start is not sampled). With `retention_s` every save
    also forgets the rows recorded longer ago than that (any run's): the store stays bounded
    over days."""

    run_id: str
    pipeline: str
    path: Path | None = None
    process_cpu: bool = False
    retention_s: float | None = None
    rows: list[HistoryRow] = field(default_factory=list)
    cpu_rows: list[RunCpuRow] = field(default_factory=list)
    queues: dict[str, int] = field(default_factory=dict)
    saved: int = 0
    _cpu_sample: tuple[float, float] | None = None  # (wall s, CPU s) at the last interval's end

    def __call__(self, snapshot: Snapshot, decision: Decision) -> None:
        for o in snapshot.operators:
            if o.replicas > 0:
                before = self.queues.get(o.name, 0)
                self.rows += replica_rows(self.run_id, self.pipeline, snapshot, o, before)
            self.queues[o.name] = o.queue
        if self.process_cpu:
            self._sample_cpu(snapshot)
        if self.path is not None and len(self.rows) >= FLUSH_ROWS:
            self.save()

    def _sample_cpu(self, snapshot: Snapshot) -> None:
        """The run's own CPU since the last interval's end, in cores over the wall time."""
        cpu, wall = tree_cpu_seconds(), time.monotonic()
        if cpu is None:
            return  # no /proc here: the run's own CPU is not recorded (docs/modeling.md)
        last, self._cpu_sample = self._cpu_sample, (wall, cpu)
        if last is not None and wall > last[0]:
            cores = max(0.0, cpu - last[1]) / (wall - last[0])
            t = snapshot.t - snapshot.interval_s
            self.cpu_rows.append(
                RunCpuRow(self.run_id, self.pipeline, t, snapshot.interval_s, cores)
            )

    def save(self, path: Path | None = None) -> int:
        """Append the rows not saved yet to the history database at `path` (default: the
        recorder's; created if absent); returns how many rows this run has saved in all."""
        target = path or self.path
        if target is None:
            raise ValueError("HistoryRecorder.save: no history path given")
        with HistoryStore(target) as store:
            self.saved += store.record(self.rows)
            store.record_run_cpu(self.cpu_rows)
            if self.retention_s is not None:
                store.forget(self.retention_s)
        self.rows, self.cpu_rows = [], []
        return self.saved
