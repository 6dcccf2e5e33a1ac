"""The one typed, validated run configuration shared by the CLI, the engines and the benchmarks."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from elastream.base.secrets import redact_text
from elastream.base.settings import Settings, requirement
from elastream.config.ops import MetricsSettings
from elastream.control.controller import Controller
from elastream.control.guards import GuardConfig
from elastream.control.hosting import ReleaseRule
from elastream.control.policies import POLICIES
from elastream.model.objective import Objective
from elastream.model.pipeline import Pipeline, pipeline_from_dict

REDIS_SCHEMES = ("redis://", "rediss://")  # rediss: TLS


# `dry_run` ran the whole pipeline without enacting a decision, which its name did not say.
DRY_RUN_GONE = (
    "{old} is now {new}: the whole pipeline runs and its replica decisions are reported, never "
    "enacted; to check a pipeline without running it: elastream check PIPELINE"
)


class ConfigError(ValueError):
    """A broken configuration; the message names the setting."""


class LeasingSettings(Settings):
    """Executors of a standalone cluster leased as hosts billed per BTU (docs/leasing.md)."""

    slots: int = Field(2, ge=1, description="replicas one executor runs at once (its cores)")
    btu_s: float = Field(3600.0, gt=0, description="billing time unit of a host, s")
    price: float = Field(1.0, gt=0, description="price of one billing time unit of one host")
    min_hosts: int = Field(1, ge=1, description="hosts kept leased at all times")
    max_hosts: int = Field(4, ge=1, description="most hosts leased at once")
    release_window: float = Field(
        0.05,
        gt=0,
        le=1,
        description="a host is released only in this last fraction of its BTU (VISP Fig. 5)",
    )
    release_rule: ReleaseRule = Field(
        "lulls",
        description="when a surplus host in its release window goes: `lulls` (the default), "
        "when every lull seen over the last ten BTUs (a stretch in which the need stayed at or "
        "below the hosts that stay) that lasted as long as the current one has lasted at least "
        "its age plus the window's rest and the next BTU, or the current one has lasted a BTU; "
        "`now` (VISP's rule), when the hosts that stay hold this interval's decision: a host let "
        "go in a short lull is leased again at the next burst; `last_btu`, when they would have "
        "held every interval's decision over the BTU before (none released before one BTU of "
        "decisions): each host kept up to a BTU longer after the load falls (docs/leasing.md)",
    )

    @model_validator(mode="after")
    def _ordered(self) -> LeasingSettings:
        if self.min_hosts > self.max_hosts:
            raise ValueError(f"min_hosts ({self.min_hosts}) > max_hosts ({self.max_hosts})")
        return self


class SparkSettings(Settings):
    """How the Spark runtime runs the pipeline's queries."""

    master: str | None = Field(
        None, description="Spark master URL; default local[n] sized to the replica pools"
    )
    batch_s: float = Field(
        1.0, gt=0, description="work admitted per micro-batch, in replica-seconds"
    )
    trigger_s: float = Field(
        0.05,
        ge=0,
        description="processing-time trigger, s: the shortest time between micro-batch starts, "
        "so a floor of the hop at low load, and how often an idle query polls its source (0: "
        "back to back; docs/results.md, Where a hop's time goes)",
    )
    layout: Literal["operator", "pipeline"] = Field(
        "pipeline",
        description="how the operators map to Structured Streaming queries: `pipeline` (the "
        "default), one query for the whole pipeline whose partitions are the active replicas of "
        "all operators (a hop costs one micro-batch); `operator`, one query per operator "
        "(docs/runtime.md, Layouts)",
    )
    async_progress: bool = Field(
        True,
        description="write each query's offset and commit logs in the background (Spark's "
        "asynchronous progress tracking) instead of on every micro-batch's path; exactly-once "
        "holds because the queue store's recorded plans, not the offset log, fix each replayed "
        "batch's range (docs/runtime.md); false: Spark's synchronous logs",
    )
    progress_interval_s: float = Field(
        1.0,
        ge=0,
        description="with async_progress: how often a query's offsets are made durable, s (a "
        "restart replays at most this much, from the recorded plans)",
    )
    max_restarts: int = Field(
        5,
        ge=0,
        description="restarts of a failed operator query in a row (no batch completed between "
        "them) before the run stops with the query's error",
    )
    restart_backoff_s: float = Field(
        1.0,
        ge=0,
        description="wait before restarting a failed query, s; doubles with each failure in a row",
    )
    leasing: LeasingSettings | None = Field(
        None,
        description="lease the standalone cluster's executors as hosts billed per billing time "
        "unit (needs `master` spark://...); None: use the executors the cluster gives",
    )
    retention_s: float | None = Field(
        600.0,
        gt=0,
        description="how long the queue store keeps its audit records (sink events, appends, "
        "the shares of released batches), s; older ones are folded into counts so a long "
        "run's store stays flat (None: keep them for the whole run)",
    )
    checkpoints: Path | None = Field(
        None,
        description="folder of the operator queries' checkpoints (None: checkpoints/ in the "
        "output directory); a tmpfs such as /dev/shm/NAME makes each micro-batch's offset "
        "and commit files cheaper, and --resume then works while that folder survives "
        "(a killed process: yes; a reboot: no, docs/runtime.md)",
    )
    conf: dict[str, str] = Field(
        default_factory=dict,
        description="extra Spark configuration for the session (e.g. spark.driver.host and "
        "spark.driver.port on a multi-machine cluster, docs/deploy.md); applied last",
    )
    # operations (issue 27): RPC authentication and the Spark UI
    auth_file: Path | None = Field(
        None,
        description="Spark properties file holding the cluster's shared secret "
        "(spark.authenticate.secret), as `elastream cluster up` writes it (mode 0600); the "
        "driver authenticates with it. None: the secret of the cluster `cluster up` started "
        "with the default state file, when `master` is that cluster's; else no authentication",
    )
    ui: bool = Field(
        True,
        description="serve Spark's web UI, with its PrometheusServlet at /metrics/prometheus "
        "and /metrics/executors/prometheus (docs/operations.md)",
    )
    ui_host: str = Field(
        "127.0.0.1",
        description="address the Spark UI binds (SPARK_LOCAL_IP of the driver JVM, unless "
        "already set); the UI has no authentication of its own, keep it on loopback",
    )
    ui_port: int = Field(
        4040, ge=0, le=65535, description="Spark UI port (taken: Spark tries the next ones)"
    )
    class_cache: bool = Field(
        True,
        description="start the driver JVM with a class-data-sharing archive of Spark's classes "
        "(made by the first run, kept in ~/.cache/elastream/jvm, about 150 MB): the session "
        "starts in about half the time; false: without",
    )

    @property
    def standalone(self) -> bool:
        """A standalone cluster's master (spark://HOST:PORT)."""
        return (self.master or "").startswith("spark://")

    @property
    def local(self) -> bool:
        """Local mode (the default local[n] or a local[...] master): every process of the run
        descends from the driver."""
        return self.master is None or self.master.startswith("local")


class RunConfig(Settings):
    """Everything `elastream run`, `simulate`, `demo` and `bench` take besides the pipeline."""

    renamed: ClassVar[Mapping[str, str]] = {
        "td": "interval_s",
        "t_out": "event_timeout_s",
        "q_size": "queue_capacity",
    }

    policy: str = Field("psps", description="scaling policy (see `elastream config --policies`)")
    policy_options: dict[str, Any] = Field(
        default_factory=dict, description="options of the policy (its own settings)"
    )
    replicas: int | None = Field(
        None, ge=1, description="replicas of every operator, for the static policy"
    )
    objective: Objective | None = Field(
        None,
        description="latency objective, e.g. {latency_p99_s: 2} or {latency_mean_s: 1}, optionally "
        "with per-operator bounds {operators: {NAME: {latency_p99_s: ...}}}: every interval is "
        "marked met or missed, and the `objective` policy plans for it (None: no objective)",
    )
    interval_s: float = Field(
        5.0, gt=0, description="control interval, s: how often the policy measures and decides"
    )
    event_timeout_s: float | None = Field(
        None,
        gt=0,
        description="event timeout, s: an event waiting longer is dropped (None: never, the "
        "default, so nothing is dropped unless asked)",
    )
    queue_capacity: int | None = Field(
        None,
        ge=1,
        description="queue bound, events: a full queue refuses (drops) what is offered (None: "
        "unbounded, the default, so nothing is dropped unless asked)",
    )
    ingest_bound: int = Field(
        100_000,
        ge=1,
        description="events pending in a first operator's queue at which an external source "
        "(files, redis, spark) waits instead of reading more (queue_capacity when tighter): "
        "backpressure, nothing dropped (docs/sources-sinks.md)",
    )
    duration: float | None = Field(
        None, gt=0, description="run length, s (default: the prepared trace's length)"
    )
    trace: str | None = Field(
        None, description="trace file or generator spec (docs/workloads.md); None: sources' rates"
    )
    until_stopped: bool = Field(
        False,
        description="run until SIGINT or SIGTERM (then stop the sources, drain the queues within "
        "drain_s and write the outputs): generator sources at their declared rates for ever; "
        "`elastream run` without --duration and --trace sets it. A `duration` still ends the run "
        "(a simulation needs one); a trace cannot be combined with it",
    )
    data_dir: Path | None = Field(None, description="folder of real traces (../shared/data)")
    slice: str | None = Field(
        None, description="trace seconds START:END kept before rescaling (None: all)"
    )
    peak_rate: float | None = Field(
        None, gt=0, description="rescale the trace so that its peak is this, events/s"
    )
    time_scale: float = Field(1.0, gt=0, description="play the trace this many times faster")
    drain_s: float = Field(
        60.0, ge=0, description="time allowed to empty the queues after the load, s"
    )
    out: Path = Field(Path("runs/latest"), description="output directory")
    queues: str | None = Field(
        None,
        description="queue store of the Spark runtime: a SQLite file path, or "
        "redis://HOST:PORT/DB[?prefix=NAME] for Redis Streams (the prefix defaults to one per "
        "output directory); None: the embedded SQLite file queues.db in the output directory",
    )
    history: Path | None = Field(
        None,
        description="metrics history database the run is added to, for the models "
        "(None: history.sqlite beside the output directory)",
    )
    history_retention_days: float | None = Field(
        7.0,
        gt=0,
        description="days the metrics history keeps a row (any run's): each save forgets older "
        "ones, so a run lasting days keeps history.sqlite bounded (about 10 MB a day for three "
        "operators at interval_s = 5); None: keep everything",
    )
    recommend_only: bool = Field(
        False,
        description="decide and report the replicas every interval, never enact them: the "
        "pipeline runs in full at its starting replicas (Flink's autoscaler calls this scaling "
        "disabled); to check a pipeline without running it: elastream check",
    )
    keep_snapshots: int | None = Field(
        50_000,
        ge=0,
        description="snapshots a run keeps in memory for its caller (tests, comparisons); a "
        "longer run keeps none (run, simulate and demo write their series to disk as they go "
        "and keep none at all; None: keep all)",
    )
    series_resolution_s: float | None = Field(
        None,
        gt=0,
        description="time series (timeseries.csv, intervals.csv, report plots) aggregated to "
        "rows of this many seconds, e.g. 3600 for a run of months (None: one row per interval)",
    )
    series_recent_s: float | None = Field(
        86_400.0,
        gt=0,
        description="how long rows of timeseries.csv and intervals.csv stay at full resolution "
        "(a row per interval, or per series_resolution_s): older ones are merged into rows of "
        "series_archive_s, so that a run of days keeps both files bounded (docs/outputs.md); "
        "None: every row kept at full resolution",
    )
    series_archive_s: float = Field(
        3_600.0,
        gt=0,
        description="the length of an archive row of the series files, s (past 2,000 of them, "
        "neighbours merge in pairs and the length doubles)",
    )
    seed: int = Field(0, description="random seed (generators, simulator)")
    engine: Literal["spark", "sim"] = Field("spark", description="where the pipeline runs")
    guards: GuardConfig = Field(
        default_factory=GuardConfig, description="the guard layer around every policy"
    )
    spark: SparkSettings = Field(
        default_factory=SparkSettings, description="Spark runtime settings"
    )
    metrics: MetricsSettings = Field(
        default_factory=MetricsSettings, description="the run's Prometheus endpoint (ops)"
    )

    @model_validator(mode="before")
    @classmethod
    def _no_dry_run(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "dry_run" in data:
            raise ValueError(DRY_RUN_GONE.format(old="dry_run", new="recommend_only"))
        return data

    @field_validator("queues")
    @classmethod
    def _queue_address(cls, value: str | None) -> str | None:
        if value is not None and "://" in value and not value.startswith(REDIS_SCHEMES):
            raise ValueError(
                f"{redact_text(value)!r}: expected a file path, redis://HOST:PORT/DB or rediss://…"
            )
        return value

    @model_validator(mode="after")
    def _unbounded_without_trace(self) -> RunConfig:
        if self.until_stopped and self.trace is not None:
            raise ValueError(
                f"until_stopped runs the sources at their declared rates for ever; the trace "
                f"{self.trace!r} has an end (give one or the other)"
            )
        return self

    @property
    def unbounded(self) -> bool:
        """The run has no end of its own: it lasts until it is stopped (SIGINT, SIGTERM)."""
        return self.until_stopped and self.duration is None

    @model_validator(mode="after")
    def _known_policy(self) -> RunConfig:
        if self.policy not in POLICIES:
            raise ValueError(
                f"unknown policy {self.policy!r} (known: {', '.join(POLICIES.names())})"
            )
        POLICIES.get(self.policy).make_config(self.effective_policy_options())
        return self

    def controller(self) -> Controller:
        """The guarded policy of this run: what every engine's MAPE loop calls."""
        return Controller.build(self.policy, self.effective_policy_options(), self.guards)

    def starting_pipeline(self, pipeline: Pipeline) -> Pipeline:
        """The pipeline as this run starts it: Storm with r replicas runs r from the start, so a
        `static` run's pools start at its r (clamped to each pool), not at the pool minimum."""
        if self.policy != "static":
            return pipeline
        r = self.effective_policy_options().get("replicas", 1)
        data = pipeline.model_dump(by_alias=True)
        for op in data["operators"]:
            pool = op["replicas"]
            pool["initial"] = max(pool["min"], min(pool["max"], r))
        starting = pipeline_from_dict(data, f"{pipeline.name} starting at {r} replicas")
        return starting.read_from(pipeline.folder)

    @property
    def history_retention_s(self) -> float | None:
        """history_retention_days in seconds (None: keep everything)."""
        days = self.history_retention_days
        return None if days is None else days * 86_400.0

    def history_path(self) -> Path:
        """Where this run's metrics history is recorded."""
        return self.history or self.out.parent / "history.sqlite"

    def effective_policy_options(self) -> dict[str, Any]:
        options = dict(self.policy_options)
        if self.replicas is not None and self.policy == "static":
            options.setdefault("replicas", self.replicas)
        takes_objective = "objective" in POLICIES.get(self.policy).config_type.model_fields
        if takes_objective and self.objective is not None:
            options.setdefault("objective", self.objective)
        return options

    def check_objective(self, pipeline: Pipeline) -> None:
        """Every operator the objective bounds must be one of the pipeline's."""
        if self.objective is None:
            return
        unknown = sorted(set(self.objective.operators) - set(pipeline.operator_names))
        if unknown:
            raise ConfigError(
                f"objective.operators: {', '.join(unknown)} not in pipeline {pipeline.name!r} "
                f"(operators: {', '.join(pipeline.operator_names)})"
            )


def make_config(**values: Any) -> RunConfig:
    """Validate settings; errors name each bad setting. An explicit None switches an optional
    setting off (event_timeout_s, queue_capacity); leave a setting out to get its default."""
    try:
        return RunConfig(**values)
    except ValidationError as exc:
        problems = "; ".join(
            requirement(err)
            if err["type"] == "value_error" and not err["loc"]
            else f"{'.'.join(str(p) for p in err['loc']) or 'config'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ConfigError(f"invalid configuration: {problems}") from None
