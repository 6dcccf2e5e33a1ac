"""Benchmark scenario files: YAML with line numbers, validation, and expansion into a run matrix.

Format (docs/policies.md and benchmarks/psps_twitter.yaml show full examples):

    data_dir: ../shared/data            # optional: where trace files are looked up by name
    scenarios:
      - name: twitter
        pipeline: src/elastream/examples/tweets.yaml
        trace: twitter_sample_per_second_3days.txt   # file or generator spec
        slice: "20400:28800"            # trace seconds START:END, before any rescaling
        peak_rate: 300                  # events/s at the slice's maximum
        time_scale: 1                   # > 1 plays the trace faster
        slo_ms: 40                      # processing-time SLO (default: slowest path)
        run: {interval_s: 30, event_timeout_s: 30, queue_capacity: 100000}  # RunConfig
        guards: {}                      # GuardSettings for every policy of the scenario
        sim: {}                         # SimSettings
        grid: {}                        # key -> list of values, crossed with each policy's grid
        policies:
          - psps                        # a name, or a mapping:
          - {policy: static, label: storm, grid: {replicas: [1, 4, 8]}}

Grid keys: `grouping` (every operator's grouping), `peak_rate`, `time_scale`, `slice`, `slo_ms`,
any RunConfig field (`interval_s`, `event_timeout_s`, `queue_capacity`, `replicas`, ...), or a
dotted `options.X` (policy option), `guards.X`, `sim.X`, `run.X`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import (
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from elastream.base.settings import Settings, SettingsError, line_of, load_yaml
from elastream.config import RunConfig
from elastream.model.metric_catalog import METRICS
from elastream.model.pipeline import Grouping


class BenchError(ValueError):
    """A broken scenario file; the message names the file, the line and the setting."""


# ---------------------------------------------------------------------------- the schema


Grid = dict[str, list[Any]]


def _check_grid(grid: Grid) -> Grid:
    for key, values in grid.items():
        if not values:
            raise ValueError(f"grid {key!r} has no values")
    return grid


SCENARIO_KEYS = ("peak_rate", "time_scale", "slice", "slo_ms")
NAMESPACES = ("options", "guards", "sim", "run")
# Where a key that is not a run setting of a scenario belongs instead.
ELSEWHERE = {
    **{k: "at the scenario level (scenarios[].KEY)" for k in (*SCENARIO_KEYS, "trace", "data_dir")},
    "policy": "in a policies[] entry (policy: NAME)",
    "policy_options": "in a policies[] entry (options: {...})",
    "guards": "at the scenario level or in a policies[] entry (guards: {...})",
    "engine": "nowhere: bench always runs the simulator",
    "out": "nowhere: bench writes every run under --out",
    "recommend_only": "nowhere: a benchmark run always enacts",
    "spark": "nowhere: bench runs the simulator",
}


def _check_run(run: dict[str, Any]) -> dict[str, Any]:
    """`run:` holds RunConfig settings that take effect per run; a key that would do nothing
    there is an error that says where it belongs."""
    for key in run:
        if key in ELSEWHERE:
            place = ELSEWHERE[key].replace("KEY", key)
            raise ValueError(f"{key!r} does nothing under run: it belongs {place}")
        if key not in RunConfig.model_fields:
            known = ", ".join(sorted(set(RunConfig.model_fields) - set(ELSEWHERE)))
            raise ValueError(f"unknown run setting {key!r} (known: {known})")
    return run


class PolicyEntry(Settings):
    """One policy of a scenario: registry name, label in the results, settings and grid."""

    policy: str = Field(description="registered policy name")
    label: str | None = Field(None, description="name in the results (default: the policy)")
    options: dict[str, Any] = Field(default_factory=dict, description="policy options")
    guards: dict[str, Any] = Field(default_factory=dict, description="guard settings")
    run: dict[str, Any] = Field(default_factory=dict, description="run settings (RunConfig)")
    sim: dict[str, Any] = Field(default_factory=dict, description="simulator settings")
    grid: Grid = Field(default_factory=dict, description="key -> values, crossed")

    _grid = field_validator("grid")(_check_grid)
    _run = field_validator("run")(_check_run)

    @property
    def name(self) -> str:
        return self.label or self.policy


class Scenario(Settings):
    name: str = Field(min_length=1, description="the scenario's name")
    pipeline: str = Field(description="pipeline file, as given or beside the scenario file")
    trace: str = Field(description="trace file or generator spec")
    slice: str | None = Field(None, description="trace seconds START:END, before rescaling")
    peak_rate: float | None = Field(None, gt=0, description="rescale the slice's peak, events/s")
    time_scale: float | None = Field(None, gt=0, description="play the trace this many × faster")
    slo_ms: float | None = Field(None, gt=0, description="processing-time SLO, ms")
    run: dict[str, Any] = Field(default_factory=dict, description="run settings (RunConfig)")
    guards: dict[str, Any] = Field(default_factory=dict, description="guards of every policy")
    sim: dict[str, Any] = Field(default_factory=dict, description="simulator settings")
    grid: Grid = Field(default_factory=dict, description="key -> values, crossed")
    policies: list[PolicyEntry] = Field(min_length=1, description="the policies to compare")
    timeseries: bool = Field(True, description="keep per-interval series for the plots")

    _grid = field_validator("grid")(_check_grid)
    _run = field_validator("run")(_check_run)

    @field_validator("policies", mode="before")
    @classmethod
    def _names_to_entries(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"policy": v} if isinstance(v, str) else v for v in value]
        return value


class TableRow(Settings):
    """A row of a paper table: which run it is (`select`: results column -> value) and the
    paper's four figures (saved resources, throughput degradation, processed, latency ms)."""

    label: str = Field(description="the row's label")
    select: dict[str, Any] = Field(min_length=1, description="results column -> value")
    paper: tuple[float, float, float, float] | None = Field(
        None, description="the paper's four figures"
    )


class PaperTable(Settings):
    """A table of a paper reproduced from one scenario's results (docs/reproduction/*.md)."""

    id: str = Field(min_length=1, description="the block id in the markdown file")
    title: str = Field(description="the table's title")
    scenario: str = Field(description="the scenario whose results fill it")
    rows: list[TableRow] = Field(min_length=1, description="the rows")
    extra_columns: list[str] = Field(
        default_factory=list,
        description="more metrics after the usual columns, e.g. [messages] (metric_catalog.py)",
    )

    @field_validator("extra_columns")
    @classmethod
    def _known_metrics(cls, names: list[str]) -> list[str]:
        unknown = [n for n in names if n not in METRICS]
        if unknown:
            raise ValueError(
                f"unknown metric(s) {', '.join(unknown)} (known: {', '.join(sorted(METRICS))})"
            )
        return names


class BenchFile(Settings):
    data_dir: str | None = Field(None, description="where trace files are looked up by name")
    scenarios: list[Scenario] = Field(min_length=1, description="the scenarios")
    tables: list[PaperTable] = Field(default_factory=list, description="paper tables")

    @model_validator(mode="after")
    def _tables_name_scenarios(self) -> BenchFile:
        names = {s.name for s in self.scenarios}
        for table in self.tables:
            if table.scenario not in names:
                raise ValueError(
                    f"table {table.id!r} names unknown scenario {table.scenario!r} "
                    f"(known: {', '.join(sorted(names))})"
                )
        return self


# ---------------------------------------------------------------------------- the run matrix

# Run-config fields a grid may vary; the trace and its scaling are scenario keys, and the rest
# belong to the harness (engine, output, the policy and its guards in their own namespaces).
RUN_FIELDS = frozenset(RunConfig.model_fields) - set(ELSEWHERE)


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One cell of the matrix, with everything a worker process needs to run it."""

    scenario: str
    label: str
    policy: str
    params: tuple[tuple[str, Any], ...]  # the grid point, in grid order
    pipeline: str
    grouping: str | None
    trace: str
    slice: str | None
    peak_rate: float | None
    time_scale: float | None
    slo_ms: float | None
    data_dir: str | None
    run: tuple[tuple[str, Any], ...]  # RunConfig settings (policy, options and guards included)
    sim: tuple[tuple[str, Any], ...]
    timeseries: bool
    where: str  # file:line of the policy entry, for error messages

    @property
    def run_id(self) -> str:
        point = ",".join(f"{k}={v}" for k, v in self.params)
        return f"{self.scenario}/{self.label}" + (f"[{point}]" if point else "")

    def config_values(self) -> dict[str, Any]:
        return dict(self.run)

    def workload_values(self) -> dict[str, Any]:
        """The scenario's trace preparation as run settings (None: left at the default)."""
        values = {"trace": self.trace, "data_dir": self.data_dir, "slice": self.slice}
        values |= {"peak_rate": self.peak_rate, "time_scale": self.time_scale}
        return {k: v for k, v in values.items() if v is not None}


def _split_key(key: str, where: str) -> tuple[str, str]:
    """A grid key -> (namespace, name): `grouping`/scenario keys, RunConfig fields, `ns.name`."""
    if key == "grouping" or key in SCENARIO_KEYS:
        return "scenario", key
    namespace, dot, name = key.partition(".")
    if dot and namespace == "run" and name in ELSEWHERE:
        raise BenchError(
            f"{where}: grid key {key!r} does nothing: {name!r} belongs "
            f"{ELSEWHERE[name].replace('KEY', name)}"
        )
    if dot and namespace in NAMESPACES and name:
        return namespace, name
    if not dot and key in RUN_FIELDS:
        return "run", key
    known = ", ".join(["grouping", *SCENARIO_KEYS, *sorted(RUN_FIELDS)])
    raise BenchError(
        f"{where}: unknown grid key {key!r} (known: {known}, or options.X, guards.X, sim.X, run.X)"
    )


def _point_values(point: Mapping[str, Any], where: str) -> dict[str, dict[str, Any]]:
    split: dict[str, dict[str, Any]] = {ns: {} for ns in ("scenario", *NAMESPACES)}
    for key, value in point.items():
        namespace, name = _split_key(key, where)
        split[namespace][name] = value
    return split


def _grouping(value: Any, where: str) -> str | None:
    if value is None:
        return None
    try:
        return Grouping(value).value
    except ValueError:
        known = ", ".join(g.value for g in Grouping)
        raise BenchError(f"{where}: unknown grouping {value!r} (known: {known})") from None


def grid_points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """The cartesian product of a grid, as one mapping per point (one empty point if no grid)."""
    keys = list(grid)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*grid.values())]


def resolve_pipeline(path: str, base_dir: Path, where: str) -> str:
    """A pipeline path as given (relative to the working directory) or next to the scenario
    file; the error names both places."""
    for candidate in (Path(path).expanduser(), base_dir / path):
        if candidate.is_file():
            return str(candidate)
    raise BenchError(f"{where}: pipeline file {path!r} not found (nor under {base_dir})")


def expand_entry(
    scenario: Scenario, entry: PolicyEntry, data_dir: str | None, where: str, pipeline: str
) -> list[RunSpec]:
    """Every run of one policy entry of a scenario: base settings, then the entry's, then the
    grid point's (the entry's grid overrides the scenario's on a shared key)."""
    specs = []
    for point in grid_points({**scenario.grid, **entry.grid}):
        split = _point_values(point, where)
        fixed = {k: split["scenario"].get(k, getattr(scenario, k)) for k in SCENARIO_KEYS} | {
            "grouping": _grouping(split["scenario"].get("grouping"), where)
        }
        run = {
            **scenario.run,
            **entry.run,
            **split["run"],
            "policy": entry.policy,
            "policy_options": {**entry.options, **split["options"]},
            "guards": {**scenario.guards, **entry.guards, **split["guards"]},
        }
        specs.append(
            RunSpec(
                scenario=scenario.name,
                label=entry.name,
                policy=entry.policy,
                params=tuple(point.items()),
                pipeline=pipeline,
                grouping=fixed["grouping"],
                trace=scenario.trace,
                slice=fixed["slice"],
                peak_rate=fixed["peak_rate"],
                time_scale=fixed["time_scale"],
                slo_ms=fixed["slo_ms"],
                data_dir=data_dir,
                run=tuple(run.items()),
                sim=tuple({**scenario.sim, **entry.sim, **split["sim"]}.items()),
                timeseries=scenario.timeseries,
                where=where,
            )
        )
    return specs


def parse_bench(data: Any, origin: str) -> BenchFile:
    """Validate plain YAML data; errors name the file, line and field."""
    if not isinstance(data, dict):
        raise BenchError(f"{origin}: expected a mapping with a 'scenarios' list at the top level")
    try:
        return BenchFile.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = err["loc"]
            line = line_of(data, loc)
            path = ".".join(str(p) for p in loc) or "file"
            problems.append(f"{origin}:{line or '?'}: {path}: {err['msg']}")
        raise BenchError("\n".join(problems)) from None


def _entry_line(data: Any, i: int, j: int) -> int | None:
    return line_of(data, ("scenarios", i, "policies", j))


def expand(bench: BenchFile, data: Any, origin: str, data_dir: str | None = None) -> list[RunSpec]:
    """The whole matrix, scenario by scenario; duplicate scenario names or run ids are errors.
    Relative pipeline paths are tried from the working directory, then beside `origin`."""
    names = [s.name for s in bench.scenarios]
    for name in names:
        if names.count(name) > 1:
            raise BenchError(f"{origin}: scenario name {name!r} is used twice")
    specs: list[RunSpec] = []
    for i, scenario in enumerate(bench.scenarios):
        line = line_of(data, ("scenarios", i, "pipeline"))
        pipeline = resolve_pipeline(
            scenario.pipeline, Path(origin).parent, f"{origin}:{line or '?'}"
        )
        for j, entry in enumerate(scenario.policies):
            where = f"{origin}:{_entry_line(data, i, j) or '?'}: scenario {scenario.name!r}"
            specs.extend(expand_entry(scenario, entry, data_dir or bench.data_dir, where, pipeline))
    seen: set[str] = set()
    for spec in specs:
        if spec.run_id in seen:
            raise BenchError(f"{spec.where}: run {spec.run_id!r} appears twice (give a label)")
        seen.add(spec.run_id)
    return specs


def load_bench(path: str | Path, data_dir: str | None = None) -> tuple[BenchFile, list[RunSpec]]:
    """Read, validate and expand a scenario file."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise BenchError(f"scenario file {path} does not exist") from None
    try:
        data = load_yaml(text, str(path))
    except SettingsError as exc:
        raise BenchError(str(exc)) from None
    bench = parse_bench(data, str(path))
    return bench, expand(bench, data, str(path), data_dir)
