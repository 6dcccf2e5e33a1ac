"""Recording every run's metrics history (per interval, operator and replica) for the models:
the rows are derived from the same Snapshots on either engine (docs/modeling.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from elastream.control.policy import Decision
from elastream.history import HistoryRow, HistoryStore, backpressure
from elastream.model.snapshot import OperatorStats, Snapshot
from elastream.modeling.graph import ANY_STREAM

ALL_STREAMS = ANY_STREAM  # outputs over all streams together, when the engine gives no split


def replica_rows(
    run_id: str, pipeline: str, snap: Snapshot, o: OperatorStats, queue_before: int
) -> list[HistoryRow]:
    """One row per active replica of `o` in interval `snap`: the events offered to the operator
    in the interval (its arrivals, admitted or left queued) and its outputs, each split by the
    replica's share of what was processed, per output stream when the engine counts them; admitted
    rate, busy share, CPU (cores, when the engine measures it), queue, backpressure (the
    admission cap was hit or the queue grew) and the replica's service-time variance. The
    backlog at the start is not offered again: counting it would make a micro-batch runtime
    look saturated whenever an interval ends inside a batch."""
    r = max(o.replicas, 1)
    td = snap.td
    shares = list(o.replica_processed) or [o.processed / r] * r
    total = sum(shares)
    flag = backpressure(o.admission_capped, queue_before, o.queue)
    outputs = dict(o.emitted_streams) or {ALL_STREAMS: o.emitted}
    rows = []
    for j, processed in enumerate(shares[:r]):
        part = processed / total if total else 1.0 / r
        busy = o.utilization[j] if j < len(o.utilization) else o.busy_s / (r * td)
        variance = o.service_time_var[j] if j < len(o.service_time_var) else None
        rows.append(
            HistoryRow(
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
            )
        )
    return rows


FLUSH_ROWS = 20_000  # rows held in memory before they are appended to the history store


@dataclass
class HistoryRecorder:
    """A MAPE-loop observer that keeps the history rows of one run; with a `path` it appends
    them to that history store every FLUSH_ROWS rows, so a long run holds few in memory."""

    run_id: str
    pipeline: str
    path: Path | None = None
    rows: list[HistoryRow] = field(default_factory=list)
    queues: dict[str, int] = field(default_factory=dict)
    saved: int = 0

    def __call__(self, snapshot: Snapshot, decision: Decision) -> None:
        for o in snapshot.operators:
            if o.replicas > 0:
                before = self.queues.get(o.name, 0)
                self.rows += replica_rows(self.run_id, self.pipeline, snapshot, o, before)
            self.queues[o.name] = o.queue
        if self.path is not None and len(self.rows) >= FLUSH_ROWS:
            self.save()

    def save(self, path: Path | None = None) -> int:
        """Append the rows not saved yet to the history database at `path` (default: the
        recorder's; created if absent); returns how many rows this run has saved in all."""
        target = path or self.path
        if target is None:
            raise ValueError("HistoryRecorder.save: no history path given")
        with HistoryStore(target) as store:
            self.saved += store.record(self.rows)
        self.rows = []
        return self.saved
