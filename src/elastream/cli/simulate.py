"""`elastream simulate PIPELINE`: the same run as `elastream run`, on the fast simulator."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from elastream.base.settings import read_yaml
from elastream.cli._common import (
    add_run_options,
    load_run_inputs,
    print_summary,
)
from elastream.cli._sodrp import add_sodrp_options, print_sodrp, sodrp_runner
from elastream.runtime.sim.settings import QUEUE_MODELS, RECONFIGURATIONS, SimSettingsError

# flag -> SimSettings field; a flag given on the command line wins over --sim-config
SIM_FLAGS = {
    "sim_step": "step_s",
    "queue_model": "queue_model",
    "reconfiguration": "reconfiguration",
    "restart_downtime": "restart_downtime_s",
    "start_delay": "start_delay_s",
    "batch_overhead": "batch_overhead_s",
    "et_noise": "et_noise",
    "sample_events": "sample_events",
    "fast_forward": "fast_forward",
}


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "simulate", help="simulate a run (same options and outputs as `run`, no Spark)"
    )
    add_run_options(parser)
    sim = parser.add_argument_group("simulator (docs/simulator.md)")
    sim.add_argument("--sim-config", type=Path, help="YAML mapping of simulator settings")
    sim.add_argument("--sim-step", type=float, help="simulated time step, seconds (0.1)")
    sim.add_argument("--queue-model", choices=QUEUE_MODELS, help="per_replica or micro_batch")
    sim.add_argument("--reconfiguration", choices=RECONFIGURATIONS, help="pool, restart, delayed")
    sim.add_argument("--restart-downtime", type=float, help="restart model: downtime, seconds")
    sim.add_argument("--start-delay", type=float, help="delayed model: start delay, seconds")
    sim.add_argument("--batch-overhead", type=float, help="micro_batch model: cost per batch, s")
    sim.add_argument("--et-noise", type=float, help="coefficient of variation of service times")
    sim.add_argument("--sample-events", type=int, help="events per source in the profiling pass")
    sim.add_argument(
        "--fast-forward",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="skip steady stretches in one go (default: on where that is exact: per_replica "
        "model, no et_noise or source_hold, policy psps, static, threshold or ds2; "
        "docs/simulator.md)",
    )
    add_sodrp_options(parser)
    parser.set_defaults(handler=handle)


def sim_settings_from_args(args: argparse.Namespace) -> Any:
    """SimSettings from --sim-config, then the simulator flags; errors name the file or flag."""
    from elastream.runtime.sim.settings import sim_settings_from_dict

    values: Any = {}
    origin = "command line"
    if args.sim_config is not None:
        origin = str(args.sim_config)
        values = read_yaml(args.sim_config, "simulator settings file") or {}
        if not isinstance(values, dict):
            raise SimSettingsError(f"{origin}: expected a mapping of simulator settings")
    for flag, field in SIM_FLAGS.items():
        value = getattr(args, flag, None)
        if value is not None:
            values[field] = value
    return sim_settings_from_dict(values, origin)


def handle(args: argparse.Namespace) -> int:
    from elastream.experiments.session import run_session

    settings = sim_settings_from_args(args)
    pipeline, config = load_run_inputs(args, engine="sim")
    runner, report = sodrp_runner(args, place=True)
    result, paths = run_session(
        pipeline,
        config,
        title=f"{pipeline.name} (simulated)",
        quiet=args.quiet,
        sim=settings,
        runner=runner,
    )
    print_summary(result.summary, paths)
    print_sodrp(report, config.out)
    return 0
