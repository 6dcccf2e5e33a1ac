"""The simulator's own settings (time step, queue and reconfiguration models, noise, overrides)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from elastream.base.settings import Settings, line_of, requirement
from elastream.control.policies import POLICIES

QueueModel = Literal["per_replica", "micro_batch", "pipeline"]
CpuModel = Literal["calls", "clock"]
# Eq. C1's constant: CPU ns per interpreter call, fitted on this project's 2-core machine by
# benchmarks/cpu_model.py (docs/simulator-model.md, "CPU time").
CPU_NS_PER_CALL = 525.0
Reconfiguration = Literal["pool", "restart", "delayed"]


class SimSettingsError(ValueError):
    """A bad simulator setting; the message names the setting (and the operator, if any)."""


def _where(loc: tuple[Any, ...]) -> str:
    """('replica_speed', 'op', 1) -> 'replica_speed.op[1]'."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class SimSettings(Settings):
    """How the simulator models the runtime (docs/simulator.md explains each setting)."""

    step_s: Positive = Field(
        0.1,
        description="simulated time step, s; interval_s is rounded to a whole number of steps",
    )
    queue_model: QueueModel = Field(
        "per_replica",
        description="per_replica: a queue per replica fed by the grouping (Storm, PSPS); "
        "micro_batch: one queue per operator drained in micro-batches of its own query (the "
        "Spark runtime's `operator` layout); pipeline: one queue per operator, every operator's "
        "share in the micro-batches of one query (the Spark runtime's `pipeline` layout, its "
        "default)",
    )
    reconfiguration: Reconfiguration = Field(
        "pool",
        description="pool: instant activation (PSPS); restart: the topology stops for "
        "restart_downtime_s and loses its queues (Storm rebalance, DABS); delayed: a new "
        "replica serves start_delay_s after it is requested",
    )
    restart_downtime_s: NonNegative = Field(10.0, description="restart model: downtime, s")
    start_delay_s: NonNegative = Field(4.0, description="delayed model: start delay, s")
    stateful_rescale_pause_s: NonNegative = Field(
        0.0,
        description="a stateful operator serves nothing for this long after its replica count "
        "changes, s (measured on Spark: no pause beyond a stateless rescale's, docs/state.md)",
    )
    batch_overhead_s: NonNegative = Field(
        0.0,
        description="micro-batch models: fixed cost of one micro-batch, s (Eq. O1's a; the "
        "pipeline query's a in Eq. P1)",
    )
    batch_overhead_per_replica_ms: NonNegative = Field(
        0.0,
        description="micro-batch models: added to a batch's fixed cost for each task beyond "
        "the first, ms (Eq. O1's b; in the pipeline model per task of all operators, Eq. P1)",
    )
    batch_overhead_per_busy_query_ms: NonNegative = Field(
        0.0,
        description="micro_batch model: added to a batch's fixed cost for each other operator "
        "with a batch running when it starts, ms (Eq. O1 of docs/simulator.md)",
    )
    batch_overhead_cv: NonNegative = Field(
        0.0,
        description="micro_batch model: coefficient of variation of a log-normal factor of "
        "mean 1 on each batch's fixed cost (Eq. O2 of docs/simulator.md)",
    )
    batch_commit_share: float = Field(
        0.0,
        ge=0,
        le=1,
        description="micro_batch model: share of a batch's fixed cost spent after its outputs "
        "have left (Spark's offset commit); the next batch waits for it (docs/simulator.md)",
    )
    batch_work_s: Positive | None = Field(
        None, description="work admitted per replica per batch, s (None: the run's spark.batch_s)"
    )
    lb_refresh_s: Positive | None = Field(
        None,
        description="load_balancing grouping: restart Alg. 1 from each replica's measured "
        "utilization every lb_refresh_s seconds (None: once per td, Eq. 5 at the interval's "
        "end, the paper's literal reading; docs/simulator.md)",
    )
    source_hold: int | None = Field(
        None,
        ge=1,
        description="spout backpressure (Storm max.spout.pending): the sources admit events only "
        "while fewer than this many are in flight in the pipeline; the rest wait at the "
        "source, outside the latency clock and t_out, and count as input when they arrive "
        "(None: every event enters at once; docs/simulator.md)",
    )
    et_noise: NonNegative = Field(
        0.0, description="coefficient of variation of a per-replica, per-step service-time factor"
    )
    replica_speed: dict[str, tuple[Positive, ...]] = Field(
        default_factory=dict, description="operator -> speed factor of replica 0, 1, ... (1.0)"
    )
    et_ms: dict[str, Positive] = Field(
        default_factory=dict,
        description="operator -> per-event time, ms, replacing service_time_ms + CPU time",
    )
    batch_overhead_ms: dict[str, Positive] = Field(
        default_factory=dict,
        description="operator -> its own fixed cost per micro-batch, ms (calibrated per query)",
    )
    warmup_ms: dict[str, NonNegative] = Field(
        default_factory=dict,
        description="micro-batch models: operator -> the extra work of each replica's first "
        "share, ms (on Spark a Python worker's first task of the operator: its imports and "
        "set-up; calibrated from Spark runs, docs/simulator.md)",
    )
    selectivity: dict[str, dict[str, NonNegative]] = Field(
        default_factory=dict,
        description="operator -> {stream: outputs per input}, replacing the sampled ratios",
    )
    sample_events: int = Field(
        2000, ge=1, description="events per source in the profiling pass over real events"
    )
    measure_cpu: bool = Field(
        True,
        description="add the operator functions' CPU time per event, from the profiling pass, "
        "to et_i (how: cpu_model)",
    )
    cpu_model: CpuModel = Field(
        "calls",
        description="calls: CPU time = interpreter calls per event x cpu_ns_per_call, counted in "
        "the profiling pass (Eq. C1): the same on every run; clock: the thread CPU time "
        "measured there, which differs a little from run to run",
    )
    cpu_ns_per_call: Positive = Field(
        CPU_NS_PER_CALL,
        description="cpu_model calls: CPU time of one interpreter call, ns (Eq. C1; fitted on "
        "the project's machine by benchmarks/cpu_model.py)",
    )
    seed: int | None = Field(None, description="random seed (None: the run config's seed)")
    fast_forward: bool | None = Field(
        None,
        description="skip steady stretches in one go: while the input rate is constant, every "
        "event passes without waiting and the policy changes nothing, the coming intervals up "
        "to the next rate change are reported as one snapshot (per_replica model, et_noise 0, "
        "no source_hold). None (default): on wherever that is exact, i.e. for the policies "
        "that declare it (`Policy.fast_forward_exact`: psps, static, threshold, ds2); true/false "
        "force it (docs/simulator.md)",
    )

    @model_validator(mode="after")
    def _one_query(self) -> SimSettings:
        """The pipeline model has one query: per-query costs and contention do not apply."""
        if self.queue_model == "pipeline":
            for name in ("batch_overhead_ms", "batch_overhead_per_busy_query_ms"):
                if getattr(self, name):
                    raise ValueError(
                        f"sim setting {name}: a cost of the operator layout's queries "
                        "(queue_model micro_batch); the pipeline model's one query takes "
                        "batch_overhead_s and batch_overhead_per_replica_ms (Eq. P1)"
                    )
        if self.warmup_ms and self.queue_model == "per_replica":
            raise ValueError(
                "sim setting warmup_ms: a cost of the micro-batch models' shares (queue_model "
                "micro_batch or pipeline), not of the per_replica model"
            )
        return self

    def fast_forward_for(self, policy: str) -> bool:
        """Whether fast-forward is on for a run of `policy`: the setting if given; by default
        only where skipping gives the Summary of full stepping (the model and the policy)."""
        if self.fast_forward is not None:
            return self.fast_forward
        exact_model = self.queue_model == "per_replica" and not self.et_noise
        exact_policy = POLICIES.get(policy).fast_forward_exact
        return exact_model and not self.source_hold and exact_policy

    @field_validator("replica_speed", "selectivity")
    @classmethod
    def _not_empty(cls, value: dict[str, Any], info: Any) -> dict[str, Any]:
        for op, entries in value.items():
            if not entries:
                raise ValueError(f"sim setting {info.field_name}.{op}: must not be empty")
        return value

    def check_operators(self, operators: Sequence[str]) -> None:
        """Raise if a per-operator setting names an operator the pipeline does not have."""
        for name in ("replica_speed", "et_ms", "selectivity", "batch_overhead_ms", "warmup_ms"):
            for op in getattr(self, name):
                if op not in operators:
                    raise SimSettingsError(
                        f"sim setting {name}: unknown operator {op!r} "
                        f"(operators: {', '.join(operators)})"
                    )


def _problem(err: Any) -> str:
    if err["type"] == "extra_forbidden":
        known = ", ".join(SimSettings.model_fields)
        return f"unknown sim setting {err['loc'][-1]} (known: {known})"
    if err["type"] == "value_error":
        return str(err["ctx"]["error"])
    where = _where(err["loc"])
    if err["type"] == "literal_error":
        return f"sim setting {where}: {err['input']!r} is not one of {err['ctx']['expected']}"
    return f"sim setting {where}: {requirement(err)}"


def sim_settings_from_dict(data: Any, origin: str = "sim settings") -> SimSettings:
    """Build SimSettings from plain (or line-numbered) data; each bad key or value is named,
    with `origin` and, for a settings file, the line."""
    try:
        return SimSettings.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            line = line_of(data, err["loc"])
            problems.append(f"{origin}: {_problem(err)}" + (f" (line {line})" if line else ""))
        raise SimSettingsError("; ".join(problems)) from None
