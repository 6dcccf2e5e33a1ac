"""elastream: keep each operator of a streaming pipeline at the right number of replicas, live.

`import elastream` is light (nothing heavy, no PySpark, is imported until used):
`elastream.PipelineBuilder` builds a pipeline in code, `elastream.load_pipeline` reads a YAML one,
`elastream.run` runs it on Spark, `elastream.simulate` on the simulator, `elastream.settings`
makes run settings; `elastream.testing` runs operators in memory for unit tests (docs/python.md)."""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"  # the package's version (pyproject.toml reads it from here)

_EXPORTS = {
    "PipelineBuilder": "elastream.model.builder",
    "Pipeline": "elastream.model.pipeline",
    "TopologyError": "elastream.model.pipeline",
    "Event": "elastream.model.events",
    "emit": "elastream.model.events",
    "ConfigError": "elastream.config",
    "RunConfig": "elastream.config",
    "load_pipeline": "elastream.config.files",
    "settings": "elastream.api",
    "run": "elastream.api",
    "simulate": "elastream.api",
    "Finished": "elastream.api",
}

__all__ = sorted([*_EXPORTS, "testing"])


def __getattr__(name: str) -> Any:
    """Import an exported name's module on first use."""
    if name == "testing":
        return import_module("elastream.testing")
    if name not in _EXPORTS:
        raise AttributeError(f"module 'elastream' has no attribute {name!r}")
    value = getattr(import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
