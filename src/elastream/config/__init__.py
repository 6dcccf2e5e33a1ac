"""Run settings: the one typed configuration of a run (engine, policy, guards, workload)."""

from elastream.config.run import (
    DEFAULT_DATA_DIR,
    ConfigError,
    RunConfig,
    SparkSettings,
    make_config,
)

__all__ = ["DEFAULT_DATA_DIR", "ConfigError", "RunConfig", "SparkSettings", "make_config"]
