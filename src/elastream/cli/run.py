"""`elastream run PIPELINE [--engine spark|sim]`: run a pipeline, scaling each operator live, on
Spark or on the simulator (same settings, same outputs)."""

from __future__ import annotations

import argparse
from typing import Any

from elastream.base.settings import read_yaml
from elastream.cli._common import (
    SIM_OPTIONS,
    add_run_options,
    load_run_inputs,
    print_summary,
    sim_flags,
)
from elastream.cli._sodrp import add_sodrp_options, print_sodrp, sodrp_stages
from elastream.config import ConfigError, RunConfig
from elastream.runtime.sim.settings import SimSettingsError


def register(parser: argparse.ArgumentParser) -> None:
    """`run`'s options (`simulate` is the same command with --engine sim)."""
    add_run_options(parser)
    parser.add_argument(
        "--resume",
        action="store_true",
        help="--engine spark: continue a killed or stopped run from its queues and checkpoints "
        "in --out (the events still queued are delivered, nothing twice)",
    )
    add_sodrp_options(parser)
    parser.set_defaults(handler=handle)


def sim_settings_from_args(args: argparse.Namespace) -> Any:
    """SimSettings from --sim-config, then the simulator options; errors name the file or flag."""
    from elastream.runtime.sim.settings import sim_settings_from_dict

    values: Any = {}
    origin = "command line"
    if args.sim_config is not None:
        origin = str(args.sim_config)
        values = read_yaml(args.sim_config, "simulator settings file") or {}
        if not isinstance(values, dict):
            raise SimSettingsError(f"{origin}: expected a mapping of simulator settings")
    return sim_settings_from_dict({**values, **sim_flags(args)}, origin)


def check_engine_options(args: argparse.Namespace, config: RunConfig) -> None:
    """Simulator options need --engine sim; --resume needs --engine spark."""
    if config.engine == "spark":
        given = [SIM_OPTIONS[name] for name in sim_flags(args)]
        given += ["--sim-config"] if args.sim_config is not None else []
        if given:
            raise ConfigError(f"{', '.join(given)}: simulator options, for --engine sim only")
    elif getattr(args, "resume", False):
        raise ConfigError("--resume continues a Spark run: it needs --engine spark")


def with_end(config: RunConfig) -> RunConfig:
    """A Spark run given neither a duration nor a trace lasts until it is stopped."""
    if config.engine == "spark" and config.duration is None and config.trace is None:
        return config.model_copy(update={"until_stopped": True})
    return config


def handle(args: argparse.Namespace) -> int:
    from elastream.runner.session import run_session

    pipeline, config = load_run_inputs(args)
    check_engine_options(args, config)
    config = with_end(config)
    on_spark = config.engine == "spark"
    sim = None if on_spark else sim_settings_from_args(args)
    stages, report = sodrp_stages(args, place=not on_spark)  # Spark cannot pin replicas
    result, paths = run_session(
        pipeline,
        config,
        title=f"{pipeline.name} on Spark" if on_spark else f"{pipeline.name} (simulated)",
        quiet=args.quiet,
        sim=sim,
        resume=args.resume,
        stages=stages,
    )
    print_summary(result.summary, paths)
    print_sodrp(report, config.out)
    return 0
