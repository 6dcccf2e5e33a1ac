"""The simulator's own settings (time step, queue and reconfiguration models, noise, overrides)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

QUEUE_MODELS = ("per_replica", "micro_batch")
RECONFIGURATIONS = ("pool", "restart", "delayed")


class SimSettingsError(ValueError):
    """A bad simulator setting; the message names the setting (and the operator, if any)."""


def _positive(name: str, value: float, *, allow_zero: bool = False) -> None:
    ok = isinstance(value, int | float) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise SimSettingsError(
            f"sim setting {name}: must be a finite number {bound}, got {value!r}"
        )


def _ratio_map(name: str, value: Any) -> dict[str, dict[str, float]]:
    if not isinstance(value, Mapping):
        raise SimSettingsError(f"sim setting {name}: expected operator -> {{stream: ratio}}")
    out: dict[str, dict[str, float]] = {}
    for op, streams in value.items():
        if not isinstance(streams, Mapping) or not streams:
            raise SimSettingsError(f"sim setting {name}.{op}: expected a non-empty stream -> ratio")
        for stream, ratio in streams.items():
            _positive(f"{name}.{op}.{stream}", ratio, allow_zero=True)
        out[str(op)] = {str(s): float(r) for s, r in streams.items()}
    return out


def _speed_map(name: str, value: Any) -> dict[str, tuple[float, ...]]:
    if not isinstance(value, Mapping):
        raise SimSettingsError(f"sim setting {name}: expected operator -> [speed factor, ...]")
    out: dict[str, tuple[float, ...]] = {}
    for op, speeds in value.items():
        if isinstance(speeds, str) or not isinstance(speeds, Sequence) or not speeds:
            raise SimSettingsError(f"sim setting {name}.{op}: expected a non-empty list of factors")
        for j, factor in enumerate(speeds):
            _positive(f"{name}.{op}[{j}]", factor)
        out[str(op)] = tuple(float(f) for f in speeds)
    return out


def _et_map(name: str, value: Any) -> dict[str, float]:
    if not isinstance(value, Mapping):
        raise SimSettingsError(f"sim setting {name}: expected operator -> milliseconds")
    for op, ms in value.items():
        _positive(f"{name}.{op}", ms)
    return {str(op): float(ms) for op, ms in value.items()}


@dataclass(frozen=True)
class SimSettings:
    """How the simulator models the runtime (docs/simulator.md explains each setting).

    - `step_s`: simulated time step; the MAPE interval td is rounded to a whole number of steps.
    - `queue_model`: `per_replica` (a queue per replica fed by the grouping, as Storm and PSPS) or
      `micro_batch` (one queue per operator, drained in micro-batches split among the replicas by
      the grouping, as the Spark runtime).
    - `reconfiguration`: `pool` (instant activation, PSPS), `restart` (the whole topology stops
      for `restart_downtime_s` and loses its queued events, as a Storm rebalance or DABS-Storm) or
      `delayed` (a new replica serves only `start_delay_s` after it is requested).
    - `batch_overhead_s`, `batch_work_s`: fixed cost of one micro-batch and the work admitted per
      replica per batch (None: the run config's `spark.batch_s`); `micro_batch` model only.
    - `et_noise`: coefficient of variation of a per-replica, per-step service-time factor.
    - `replica_speed`: operator -> speed factor of replica 0, 1, ... (missing: 1.0).
    - `et_ms`: operator -> per-event execution time (ms), replacing service_time_ms + CPU time.
    - `batch_overhead_ms`: operator -> its own fixed cost per micro-batch (ms), replacing
      `batch_overhead_s` for that operator (calibrated per query from a Spark run).
    - `selectivity`: operator -> {stream: outputs per input}, replacing the sampled ratios.
    - `sample_events`, `measure_cpu`: the profiling pass over real events (section "Profile").
    - `seed`: random seed (None: the run config's seed).
    """

    step_s: float = 0.1
    queue_model: str = "per_replica"
    reconfiguration: str = "pool"
    restart_downtime_s: float = 10.0
    start_delay_s: float = 4.0
    batch_overhead_s: float = 0.0
    batch_work_s: float | None = None
    et_noise: float = 0.0
    replica_speed: Mapping[str, Sequence[float]] = field(default_factory=dict)
    et_ms: Mapping[str, float] = field(default_factory=dict)
    batch_overhead_ms: Mapping[str, float] = field(default_factory=dict)
    selectivity: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    sample_events: int = 2000
    measure_cpu: bool = True
    seed: int | None = None

    def __post_init__(self) -> None:
        _positive("step_s", self.step_s)
        if self.queue_model not in QUEUE_MODELS:
            raise SimSettingsError(
                f"sim setting queue_model: {self.queue_model!r} is not one of {QUEUE_MODELS}"
            )
        if self.reconfiguration not in RECONFIGURATIONS:
            raise SimSettingsError(
                f"sim setting reconfiguration: {self.reconfiguration!r} is not one of "
                f"{RECONFIGURATIONS}"
            )
        for name in ("restart_downtime_s", "start_delay_s", "batch_overhead_s", "et_noise"):
            _positive(name, getattr(self, name), allow_zero=True)
        if self.batch_work_s is not None:
            _positive("batch_work_s", self.batch_work_s)
        if not isinstance(self.sample_events, int) or self.sample_events < 1:
            raise SimSettingsError(
                f"sim setting sample_events: must be an integer >= 1, got {self.sample_events!r}"
            )
        if self.seed is not None and not isinstance(self.seed, int):
            raise SimSettingsError(f"sim setting seed: must be an integer, got {self.seed!r}")
        object.__setattr__(self, "replica_speed", _speed_map("replica_speed", self.replica_speed))
        object.__setattr__(self, "et_ms", _et_map("et_ms", self.et_ms))
        overheads = _et_map("batch_overhead_ms", self.batch_overhead_ms)
        object.__setattr__(self, "batch_overhead_ms", overheads)
        object.__setattr__(self, "selectivity", _ratio_map("selectivity", self.selectivity))

    def check_operators(self, operators: Sequence[str]) -> None:
        """Raise if a per-operator setting names an operator the pipeline does not have."""
        for name in ("replica_speed", "et_ms", "selectivity", "batch_overhead_ms"):
            for op in getattr(self, name):
                if op not in operators:
                    raise SimSettingsError(
                        f"sim setting {name}: unknown operator {op!r} "
                        f"(operators: {', '.join(operators)})"
                    )


def sim_settings_from_dict(data: Mapping[str, Any], origin: str = "sim settings") -> SimSettings:
    """Build SimSettings from plain data; a bad key or value is named, with `origin`."""
    known = sorted(f.name for f in fields(SimSettings))
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise SimSettingsError(
            f"{origin}: unknown sim setting(s) {', '.join(unknown)} (known: {', '.join(known)})"
        )
    try:
        return SimSettings(**data)
    except (SimSettingsError, TypeError) as exc:
        raise SimSettingsError(f"{origin}: {exc}") from None
