"""The pipeline model: sources, operators, sinks and the streams between them, with validation."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable, Iterable
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from elastream.base.dag import kahn_order
from elastream.base.settings import Settings, accept_old_names, line_of
from elastream.model.endpoints import SinkSpec, SourceSpec

DEFAULT_STREAM = "out"


class TopologyError(ValueError):
    """An invalid pipeline; the message names the culprit."""


class Grouping(StrEnum):
    """How an operator's input is divided among its active replicas."""

    SHUFFLE = "shuffle"  # random replica per event
    ROUND_ROBIN = "round_robin"  # replicas in turn
    LOAD_BALANCING = "load_balancing"  # PSPS Alg. 1: least-utilised replica first
    KEY_HASH = "key_hash"  # same key, same replica


class ReplicaPool(Settings):
    """The pre-allocated replica pool: `max` replicas exist, between `min` and `max` are active."""

    min: int = Field(1, ge=1, description="fewest active replicas")
    max: int = Field(1, ge=1, description="the pool's size: replicas that exist")
    initial: int | None = Field(None, ge=1, description="active replicas at start (None: min)")

    @model_validator(mode="after")
    def _ordered(self) -> ReplicaPool:
        if self.min > self.max:
            raise ValueError(f"min replicas ({self.min}) > max replicas ({self.max})")
        if self.initial is not None and not self.min <= self.initial <= self.max:
            raise ValueError(f"initial replicas {self.initial} outside [{self.min}, {self.max}]")
        return self

    @property
    def start(self) -> int:
        return self.initial if self.initial is not None else self.min


DEFAULT_KEY_GROUPS = 128  # key groups of a stateful operator when none are declared
MAX_KEY_GROUPS = 1 << 16  # an upper bound that keeps a bad value (1e9 groups) from validating
DEFAULT_ET_S = 0.01  # et_i when nothing is declared or measured, s (one place for every engine)


class EventTimeSpec(Settings):
    """Where event time starts: this operator's outputs carry it, and their order in its input
    (a source's order) has bounded disorder, so it generates the operator-wide watermark
    (docs/state.md, "Event time, windows and the watermark")."""

    field: str = Field(description="the payload field of this operator's outputs: event time, s")
    out_of_orderness_s: float = Field(
        0.0,
        ge=0,
        description="how far an output's event time may lie below the largest one of the "
        "outputs of earlier input (the watermark is that largest time minus this)",
    )


class OperatorSpec(Settings):
    """An operator: `function` (import path of `fn(list[Event]) -> Iterable[Emit]`, or with
    `vectorized` of `fn(EventColumns) -> Iterable[ColumnEmit]`) applied to batches of its input,
    with its grouping and replica pool.

    `service_time_ms` adds a fixed per-event delay inside the replica, emulating an external call
    so that replica counts matter on a small machine."""

    name: str = Field(description="the operator's name")
    function: str = Field(description="import path of fn(list[Event], **params) -> Emits")
    grouping: Grouping = Field(
        Grouping.LOAD_BALANCING, description="how the input is divided among active replicas"
    )
    stateless: bool = Field(
        True,
        description="False: keyed state; the function then gets a `state` keyword argument "
        "(key_hash grouping required, see docs/state.md)",
    )
    key_groups: int = Field(
        DEFAULT_KEY_GROUPS,
        ge=1,
        le=MAX_KEY_GROUPS,
        description="a stateful operator's fixed number of key groups: the unit of state "
        "ownership a replica takes over when r changes (at least replicas.max)",
    )
    replicas: ReplicaPool = Field(default_factory=ReplicaPool, description="the replica pool")
    service_time_ms: float = Field(
        0.0, ge=0, description="emulated per-event delay inside a replica (an external call)"
    )
    et_ms: float | None = Field(
        None, gt=0, description="seed for the mean execution time per event"
    )
    params: dict[str, Any] = Field(default_factory=dict, description="keyword args of function")
    event_time: EventTimeSpec | None = Field(
        None,
        description="set on the operator whose outputs first carry event time (it generates "
        "the watermark, which flows to every operator downstream of it)",
    )
    vectorized: bool = Field(
        False,
        description="True: the function takes the batch column by column (EventColumns) and "
        "returns columns.emit(...) outputs, with no Python object per event (the fast path)",
    )

    @property
    def et_seed_s(self) -> float:
        """The controller's et_i before any measurement (PSPS Eq. 1's start-up benchmark): the
        declared `et_ms`, else the emulated service time, else DEFAULT_ET_S."""
        if self.et_ms:
            return self.et_ms / 1000.0
        return self.service_time_ms / 1000.0 or DEFAULT_ET_S

    def work_s(self, cpu_s: float = 0.0) -> float | None:
        """The real work of one event: emulated service time plus measured CPU time, else the
        declared `et_ms`, else None (unknown)."""
        work = self.service_time_ms / 1000.0 + cpu_s
        if work > 0:
            return work
        return self.et_ms / 1000.0 if self.et_ms else None

    @model_validator(mode="after")
    def _stateful_needs_keys(self) -> OperatorSpec:
        if not self.stateless and self.grouping is not Grouping.KEY_HASH:
            raise ValueError("a stateful operator needs key_hash grouping")
        if not self.stateless and self.key_groups < self.replicas.max:
            raise ValueError(
                f"key_groups ({self.key_groups}) < replicas.max ({self.replicas.max}): "
                f"every replica of a stateful operator must own at least one key group"
            )
        return self


class StreamSpec(Settings):
    """An edge: output stream `name` of node `source` feeds node `target`."""

    source: str = Field(alias="from", description="the node whose output this is")
    target: str = Field(alias="to", description="the node it feeds")
    name: str = Field(DEFAULT_STREAM, description="the output stream's name")


def _unique(names: Iterable[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise TopologyError(f"duplicate node name {name!r}")
        seen.add(name)


class Pipeline(Settings):
    """A validated DAG of sources, operators and sinks."""

    name: str = Field("pipeline", description="the pipeline's name")
    sources: tuple[SourceSpec, ...] = Field(description="inputs")
    operators: tuple[OperatorSpec, ...] = Field(description="operators, any order")
    sinks: tuple[SinkSpec, ...] = Field(description="terminal queues")
    streams: tuple[StreamSpec, ...] = Field(description="edges between the nodes")
    declared_overprovisioning: int | None = Field(
        None,
        alias="overprovisioned_replicas",
        ge=1,
        description="the over-provisioned replica count saved resources compare with (PSPS "
        "V-A.3: r_over); default the sum of the pools. Set it when the pools are larger than "
        "the static over-provisioning, so that a policy may go above it (PSPS Fig. 8)",
    )
    _folder: Path | None = PrivateAttr(None)

    @property
    def folder(self) -> Path | None:
        """The folder of the file the pipeline was read from (None: built in code); its Python
        modules are importable wherever the pipeline runs (config/files.py, `app_folders`)."""
        return self._folder

    def read_from(self, folder: Path | None) -> Pipeline:
        """This pipeline, noting `folder` as the one its file is in; returns it."""
        self._folder = folder
        return self

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return accept_old_names(data, {"r_over": "overprovisioned_replicas"})

    @field_validator("sources", "operators", "sinks", "streams")
    @classmethod
    def _not_empty(cls, value: tuple[Any, ...], info: Any) -> tuple[Any, ...]:
        if not value:
            raise ValueError(f"a pipeline needs at least one of {info.field_name}")
        return value

    @model_validator(mode="after")
    def _check_graph(self) -> Pipeline:
        _unique([*self.source_names, *self.operator_names, *self.sink_names])
        for i, edge in enumerate(self.streams):
            where = f"streams[{i}] ({edge.source} -> {edge.target})"
            if edge.source not in self.source_names and edge.source not in self.operator_names:
                kind = "a sink" if edge.source in self.sink_names else "unknown"
                raise TopologyError(f"{where}: 'from' node {edge.source!r} is {kind}")
            if edge.target not in self.operator_names and edge.target not in self.sink_names:
                kind = "a source" if edge.target in self.source_names else "unknown"
                raise TopologyError(f"{where}: 'to' node {edge.target!r} is {kind}")
        self._check_acyclic()
        self._check_connected()
        self._check_event_time()
        return self

    def _check_event_time(self) -> None:
        for name in self.topological_order:
            if self.operator(name).event_time is not None:
                continue
            inputs = [self.watermarked(p) for p in self.predecessors(name)]
            if any(inputs) and not all(inputs):
                raise TopologyError(
                    f"operator {name!r} has inputs with and without event time: declare "
                    f"event_time on an operator upstream of each of its inputs"
                )

    def watermarked(self, node: str) -> bool:
        """Whether `node` is an operator with an operator-wide watermark: it declares
        `event_time`, or all its inputs are such operators."""
        if node not in self.operator_names:
            return False
        if self.operator(node).event_time is not None:
            return True
        return all(self.watermarked(p) for p in self.predecessors(node))

    def _check_acyclic(self) -> None:
        order = self.topological_order  # raises on a cycle
        assert len(order) == len(self.operators)

    def _check_connected(self) -> None:
        reached = set(self.source_names)
        frontier = list(self.source_names)
        while frontier:
            node = frontier.pop()
            for nxt in self.successors(node):
                if nxt not in reached:
                    reached.add(nxt)
                    frontier.append(nxt)
        for name in self.operator_names + self.sink_names:
            if name not in reached:
                raise TopologyError(f"node {name!r} is unreachable from any source")
        for name in self.source_names + self.operator_names:
            if not self.successors(name):
                raise TopologyError(f"node {name!r} has no outgoing stream")

    @cached_property
    def source_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.sources)

    def source_roots(self, name: str, positions: Any) -> Any:
        """The roots of source `name`'s events at `positions` (the order it offered them):
        `model.batch.position` of the source's number, its rank among the sources' names."""
        from elastream.model.batch import position

        return position(sorted(self.source_names).index(name), positions)

    @cached_property
    def generator_sources(self) -> tuple[SourceSpec, ...]:
        """The sources a generator feeds (the trace drives them)."""
        return tuple(s for s in self.sources if not s.external)

    @cached_property
    def operator_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.operators)

    @cached_property
    def sink_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.sinks)

    def operator(self, name: str) -> OperatorSpec:
        for op in self.operators:
            if op.name == name:
                return op
        raise TopologyError(f"unknown operator {name!r}")

    def successors(self, node: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e.target for e in self.streams if e.source == node))

    def predecessors(self, node: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e.source for e in self.streams if e.target == node))

    def routes(self, node: str) -> dict[str, tuple[str, ...]]:
        """Output stream name -> the nodes it feeds (several: the stream is replicated)."""
        out: dict[str, list[str]] = {}
        for edge in self.streams:
            if edge.source == node:
                out.setdefault(edge.name, []).append(edge.target)
        return {k: tuple(v) for k, v in out.items()}

    @cached_property
    def topological_order(self) -> tuple[str, ...]:
        """Operators in an order where every predecessor comes first (Kahn's algorithm)."""
        links = dict.fromkeys((e.source, e.target) for e in self.streams)  # once per node pair
        order, stuck = kahn_order(self.operator_names, links)
        if stuck:
            raise TopologyError(f"the pipeline has a cycle through {', '.join(stuck)}")
        return tuple(order)

    def require_generators(self, engine: str) -> None:
        """Raise naming the first source that is not a generator (`engine` cannot read it)."""
        for src in self.sources:
            if src.external:
                raise TopologyError(
                    f"source {src.name!r} is of kind {src.kind.value!r}: the {engine} runs "
                    f"generator sources only (a {src.kind.value} source runs on Spark: "
                    f"--engine spark)"
                )

    @property
    def pool_total(self) -> int:
        """The sum of the pools: every pre-allocated replica."""
        return sum(op.replicas.max for op in self.operators)

    @property
    def overprovisioned_replicas(self) -> int:
        """Over-provisioned replica count (PSPS V-A.3): the declared `r_over`, else the sum of
        the pools."""
        return self.declared_overprovisioning or self.pool_total

    def check_imports(self) -> None:
        """Import every operator function and source or sink callable; raise naming the one that
        fails."""
        for src in self.sources:
            if src.import_path is not None:
                load_callable(src.import_path, f"source {src.name!r} {src.kind.value}")
        for sink in self.sinks:
            if sink.function is not None:
                load_callable(sink.function, f"sink {sink.name!r} function")
        for op in self.operators:
            check_state_parameter(op, load_callable(op.function, f"operator {op.name!r} function"))


def load_callable(path: str, what: str = "callable") -> Callable[..., Any]:
    """Import 'package.module:attribute'; raise TopologyError naming `what` if impossible."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise TopologyError(f"{what}: {path!r} is not of the form 'package.module:function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        searched = ""
        if isinstance(exc, ModuleNotFoundError) and f"{module_name}.".startswith(f"{exc.name}."):
            searched = f"; searched: {', '.join(search_path())}"
        raise TopologyError(
            f"{what}: cannot import module {module_name!r} ({exc}){searched}"
        ) from exc
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise TopologyError(f"{what}: module {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise TopologyError(f"{what}: {path!r} is not callable")
    return target


def search_path() -> list[str]:
    """The folders and archives an import looks in now (sys.path's entries that exist)."""
    return [os.path.abspath(p) for p in sys.path if os.path.exists(p or ".")]


def check_state_parameter(spec: OperatorSpec, function: Callable[..., Any]) -> None:
    """A stateful operator's function must accept the `state` keyword argument."""
    if spec.stateless:
        return
    try:
        params = inspect.signature(function).parameters
    except (TypeError, ValueError):  # a builtin without a signature: let the call decide
        return
    if "state" not in params and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        raise TopologyError(
            f"operator {spec.name!r} is stateful (stateless: false) but its function "
            f"{spec.function!r} has no 'state' keyword parameter"
        )


def callable_path(fn: Callable[..., Any]) -> str:
    """The import path of a module-level function (lambdas and closures cannot run on executors)."""
    qualname = getattr(fn, "__qualname__", "")
    if "<" in qualname or not getattr(fn, "__module__", None):
        raise TopologyError(f"{fn!r} is not a module-level function: executors cannot import it")
    return f"{fn.__module__}:{qualname}"


def pipeline_from_dict(data: Any, origin: str = "pipeline") -> Pipeline:
    """Build and validate a pipeline from plain (or line-numbered) data; errors name the file,
    the line where known, and the field."""
    if not isinstance(data, dict):
        raise TopologyError(f"{origin}: expected a mapping at the top level")
    try:
        return Pipeline.model_validate(data)
    except ValidationError as exc:
        problems = [
            (line_of(data, err["loc"]), ".".join(str(p) for p in err["loc"]) or "pipeline", err)
            for err in exc.errors()
        ]
        if all(line is None for line, _, _ in problems):  # plain data: one origin for all
            text = "; ".join(f"{field}: {err['msg']}" for _, field, err in problems)
            raise TopologyError(f"{origin}: {text}") from None
        text = "; ".join(f"{origin}:{line or '?'}: {f}: {err['msg']}" for line, f, err in problems)
        raise TopologyError(text) from None
