"""One history row per interval, operator and replica; conversion to the models' inputs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields

import numpy as np

from elastream.prediction.graph import MeasuredPoint, ModelError
from elastream.prediction.series import Series


class HistoryError(ValueError):
    """A bad history row or query: the message names the run, operator and field."""


def backpressure(admission_cap_hit: bool, queue_before: float, queue_after: float) -> bool:
    """Our runtime's backpressure flag: the admission cap was hit, or the queue grew."""
    return admission_cap_hit or queue_after > queue_before


@dataclass(frozen=True)
class HistoryRow:
    """Measured over [t, t + interval_s) for one replica; rates in events/s, cpu in cores.

    source_rate: offered to the replica (admitted or left queued); input_rate: admitted;
    output_rates: per output stream; busy: busy seconds per second; queue_length at the end;
    batches: micro-batches in which the replica processed events (None: not counted);
    source_backlog: events the external sources feeding the operator hold, not yet ingested,
    at the end (files not yet read, Redis lag), this replica's share (None: none can tell).
    """

    run_id: str
    pipeline: str
    operator: str
    replica: int
    parallelism: int
    t: float
    interval_s: float
    source_rate: float
    input_rate: float
    output_rates: Mapping[str, float] = field(default_factory=dict)
    busy: float | None = None
    cpu: float | None = None
    queue_length: float = 0.0
    backpressure: bool = False
    service_time_var: float | None = None
    batches: int | None = None
    source_backlog: float | None = None

    def __post_init__(self) -> None:
        if self._plainly_valid():
            return  # the common case, checked without building the messages
        where = f"history row (run {self.run_id!r}, operator {self.operator!r}, t={self.t})"
        for name in ("run_id", "pipeline", "operator"):
            if not getattr(self, name):
                raise HistoryError(f"{where}: {name} must not be empty")
        if self.interval_s <= 0:
            raise HistoryError(f"{where}: interval_s must be > 0, got {self.interval_s}")
        if self.batches is not None and self.batches < 0:
            raise HistoryError(f"{where}: batches must be ≥ 0, got {self.batches}")
        try:
            self.point()
        except ModelError as exc:
            raise HistoryError(f"{where}: {exc}") from None
        if not self.queue_length >= 0:
            raise HistoryError(f"{where}: queue_length must be ≥ 0, got {self.queue_length}")

    @classmethod
    def of(cls, **values: object) -> HistoryRow:
        """A row from every one of its fields, validated as the constructor does, built
        without the frozen dataclass's per-field __setattr__ (the recorder makes a row per
        replica and interval)."""
        if values.keys() != _ROW_FIELDS:
            missing, extra = _ROW_FIELDS - values.keys(), values.keys() - _ROW_FIELDS
            raise TypeError(f"HistoryRow.of: missing {sorted(missing)}, unknown {sorted(extra)}")
        row = object.__new__(cls)
        row.__dict__.update(values)
        row.__post_init__()
        return row

    def _plainly_valid(self) -> bool:
        """Every check of __post_init__ (and of MeasuredPoint's) passes: named fields, a
        positive interval, a replica within the parallelism, no negative (or NaN) figure."""
        cpu, busy, variance, batches = self.cpu, self.busy, self.service_time_var, self.batches
        return bool(
            self.run_id
            and self.pipeline
            and self.operator
            and self.interval_s > 0
            and 0 <= self.replica < self.parallelism
            and self.source_rate >= 0
            and self.input_rate >= 0
            and self.queue_length >= 0
            and (cpu is None or cpu >= 0)
            and (busy is None or busy >= 0)
            and (variance is None or variance >= 0)
            and (batches is None or batches >= 0)
            and all(v >= 0 for v in self.output_rates.values())
        )

    def point(self) -> MeasuredPoint:
        return MeasuredPoint(
            parallelism=self.parallelism,
            source_rate=self.source_rate,
            input_rate=self.input_rate,
            output_rates=dict(self.output_rates),
            replica=self.replica,
            backpressure=self.backpressure,
            cpu=self.cpu,
            busy=self.busy,
            service_time_var=self.service_time_var,
            batch_rate=None if self.batches is None else self.batches / self.interval_s,
        )


_ROW_FIELDS = frozenset(f.name for f in fields(HistoryRow))


@dataclass(frozen=True)
class RunCpuRow:
    """CPU used by a run's own processes over [t, t + interval_s), in cores: the driver and all
    its descendants (in local mode Spark's JVM and its Python workers). What the operators'
    rows do not count of it is the platform's share (prediction/cpu.py, Eq. C2)."""

    run_id: str
    pipeline: str
    t: float
    interval_s: float
    cores: float

    def __post_init__(self) -> None:
        where = f"run CPU row (run {self.run_id!r}, t={self.t})"
        if not self.run_id or not self.pipeline:
            raise HistoryError(f"{where}: run_id and pipeline must not be empty")
        if not self.interval_s > 0:
            raise HistoryError(f"{where}: interval_s must be > 0, got {self.interval_s}")
        if not self.cores >= 0:
            raise HistoryError(f"{where}: cores must be ≥ 0, got {self.cores}")


def points_by_operator(rows: Iterable[HistoryRow]) -> dict[str, list[MeasuredPoint]]:
    """The models' per-replica points, grouped by operator, from any number of runs."""
    grouped: dict[str, list[MeasuredPoint]] = defaultdict(list)
    for row in rows:
        grouped[row.operator].append(row.point())
    return dict(grouped)


def source_series(rows: Sequence[HistoryRow], operators: Sequence[str]) -> Series:
    """Source rate offered to `operators` (summed over replicas) per interval, runs in order."""
    totals: dict[tuple[str, float], float] = defaultdict(float)
    first_seen: dict[str, float] = {}
    steps = []
    for row in rows:
        if row.operator in operators:
            totals[(row.run_id, row.t)] += row.source_rate
            first_seen.setdefault(row.run_id, row.t)
            steps.append(row.interval_s)
    if len(totals) < 2:
        raise HistoryError(
            f"history holds fewer than 2 intervals for source operator(s) {', '.join(operators)}"
        )
    keys = sorted(totals, key=lambda k: (first_seen[k[0]], k[0], k[1]))
    return Series(np.array([totals[k] for k in keys]), float(np.median(steps)))
