"""`elastream demo`: the tweet-analysis pipeline on Spark under a generated spiky trace."""

from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path

from elastream.cli._common import add_run_options, config_from_args, print_summary
from elastream.cli.run import check_engine_options, sim_settings_from_args
from elastream.config.files import load_pipeline
from elastream.runner.session import run_session

DEMO_PIPELINE = "tweets.yaml"
DEMO_DURATION_S = 180.0
DEMO_PEAK_RATE = 100.0


def demo_pipeline_path() -> Path:
    return Path(str(resources.files("elastream") / "examples" / DEMO_PIPELINE))


def register(parser: argparse.ArgumentParser) -> None:
    add_run_options(parser, pipeline=False)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    pipeline = load_pipeline(demo_pipeline_path())
    pipeline.check_imports()
    duration = args.duration or DEMO_DURATION_S
    defaults = {"out": Path("runs/demo"), "interval_s": 5.0, "drain_s": 60.0}
    trace = args.trace or f"demo:duration={duration:g},peak={args.peak_rate or DEMO_PEAK_RATE:g}"
    config = config_from_args(
        args,
        trace=trace,
        **{k: v for k, v in defaults.items() if getattr(args, k) is None},
    )
    check_engine_options(args, config)
    sim = sim_settings_from_args(args) if config.engine == "sim" else None
    title = f"elastream demo: tweets on {config.engine}"
    result, paths = run_session(pipeline, config, title=title, quiet=args.quiet, sim=sim)
    print_summary(result.summary, paths)
    return 0
