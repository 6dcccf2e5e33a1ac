"""Build a pipeline in Python code: the same model the YAML describes, node by node."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from elastream.base.settings import warn_renamed
from elastream.model.pipeline import (
    DEFAULT_STREAM,
    Pipeline,
    TopologyError,
    callable_path,
    pipeline_from_dict,
)

Inputs = str | Sequence[str]
Replicas = int | tuple[int, int] | dict[str, int] | None


def _path(value: Any) -> Any:
    """A module-level function as its import path (what executors import); anything else as is."""
    if callable(value) and not isinstance(value, type):
        return callable_path(value)
    return value


def _options(options: dict[str, Any]) -> dict[str, Any]:
    """Keyword options of a node as the spec's fields: functions become import paths, None is
    left out (the spec's default). Unknown options go through for the spec to accept or name."""
    return {key: _path(value) for key, value in options.items() if value is not None}


def _pool(replicas: Replicas) -> dict[str, int] | None:
    """`replicas` as a pool: n (fixed), (min, max), or the pool's fields."""
    if replicas is None or isinstance(replicas, dict):
        return replicas
    if isinstance(replicas, int):
        return {"min": replicas, "max": replicas}
    low, high = replicas
    return {"min": low, "max": high}


class PipelineBuilder:
    """Sources, operators and sinks added one by one, each wired to the nodes it reads from
    (`inputs`); `build()` validates the whole as `pipeline_from_dict` does for a YAML file.

    Every keyword option goes to the node's spec unchanged (a function becomes its import path),
    so any field the YAML accepts is accepted here: `rate`, `grouping`, `stateless`, `params`,
    a source's `kind` and its options..."""

    def __init__(
        self,
        name: str = "pipeline",
        *,
        overprovisioned_replicas: int | None = None,
        r_over: int | None = None,
    ) -> None:
        """`r_over` is the old name of `overprovisioned_replicas` (accepted for one release)."""
        self.name = name
        if r_over is not None:
            warn_renamed("r_over", "overprovisioned_replicas")
        self.overprovisioned_replicas = overprovisioned_replicas or r_over
        self.sources: list[dict[str, Any]] = []
        self.operators: list[dict[str, Any]] = []
        self.sinks: list[dict[str, Any]] = []
        self.streams: list[dict[str, str]] = []

    def source(
        self, name: str, generator: Callable[..., Any] | str | None = None, **options: Any
    ) -> str:
        """An input; `generator` is `fn(index, rng) -> (key, payload)` (or its import path)."""
        self.sources.append({"name": name, **_options({"generator": generator, **options})})
        return name

    def operator(
        self,
        name: str,
        function: Callable[..., Any] | str,
        inputs: Inputs = (),
        *,
        replicas: Replicas = None,
        **options: Any,
    ) -> str:
        """An operator applying `function` (`fn(list[Event], **params) -> emits`) to what
        `inputs` (node names) emit on their default stream."""
        spec = _options({"function": function, "replicas": _pool(replicas), **options})
        self.operators.append({"name": name, **spec})
        self._wire(inputs, name)
        return name

    def sink(self, name: str, inputs: Inputs = (), **options: Any) -> str:
        """A sink fed by `inputs` (their default stream)."""
        self.sinks.append({"name": name, **_options(options)})
        self._wire(inputs, name)
        return name

    def stream(self, source: str, target: str, name: str = DEFAULT_STREAM) -> PipelineBuilder:
        """An edge: output stream `name` of `source` feeds `target`."""
        self.streams.append({"from": source, "to": target, "name": name})
        return self

    def _wire(self, inputs: Inputs, target: str) -> None:
        for source in [inputs] if isinstance(inputs, str) else inputs:
            self.stream(source, target)

    def as_dict(self) -> dict[str, Any]:
        """The pipeline as plain data: what its YAML file would hold."""
        data: dict[str, Any] = {
            "name": self.name,
            "sources": self.sources,
            "operators": self.operators,
            "sinks": self.sinks,
            "streams": self.streams,
        }
        if self.overprovisioned_replicas is not None:
            data["overprovisioned_replicas"] = self.overprovisioned_replicas
        return data

    def build(self, check_imports: bool = True) -> Pipeline:
        """The validated pipeline; with `check_imports` every function and generator is imported
        too (what `elastream run` does before Spark starts). Errors name the node and field."""
        pipeline = pipeline_from_dict(self.as_dict(), f"pipeline {self.name!r}")
        if check_imports:
            pipeline.check_imports()
        return pipeline


__all__ = ["PipelineBuilder", "TopologyError"]
