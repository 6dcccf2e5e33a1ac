"""Run settings: the one typed configuration of a run (engine, policy, guards, workload)."""

from elastream.config.run import (
    ConfigError,
    RunConfig,
    SparkSettings,
    make_config,
)
from elastream.workloads.resolve import DEFAULT_DATA_DIR

__all__ = ["DEFAULT_DATA_DIR", "ConfigError", "RunConfig", "SparkSettings", "make_config"]
