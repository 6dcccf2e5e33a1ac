"""Options and steps shared by `elastream run`, `simulate` and `demo`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from elastream.base.settings import SettingsError, read_settings, warn_renamed
from elastream.config import ConfigError, RunConfig, make_config
from elastream.config.files import load_pipeline
from elastream.control.policies import POLICIES
from elastream.model.metrics import PAPER_METRICS, Summary
from elastream.model.pipeline import Pipeline

HEADLINE = (
    *PAPER_METRICS,
    "latency_ms_p99",
    "events_in",
    "events_out",
    "replicas_mean",
    "reconfigurations",
)


def add_run_options(parser: argparse.ArgumentParser, *, pipeline: bool = True) -> None:
    if pipeline:
        parser.add_argument("pipeline", type=Path, help="pipeline YAML file")
    parser.add_argument("--config", type=Path, help="YAML file of run settings (CLI flags win)")
    parser.add_argument("--policy", help=f"scaling policy: {', '.join(POLICIES.names())}")
    parser.add_argument("--replicas", type=int, help="r for --policy static")
    parser.add_argument("--trace", help="trace file, or generator spec such as spike:peak=100")
    parser.add_argument("--data-dir", type=Path, help="folder of real traces (../shared/data)")
    parser.add_argument("--peak-rate", type=float, help="rescale the trace to this peak, events/s")
    parser.add_argument("--time-scale", type=float, help="compress trace time by this factor")
    parser.add_argument("--slice", help="trace seconds START:END kept before rescaling")
    parser.add_argument(
        "--duration",
        type=float,
        help="run length in seconds (without it and --trace: run until SIGINT/SIGTERM; "
        "simulate: 60)",
    )
    parser.add_argument(
        "--interval", type=float, dest="interval_s", help="control (MAPE) interval in seconds"
    )
    parser.add_argument(
        "--event-timeout",
        type=optional(float),
        dest="event_timeout_s",
        help="event timeout, seconds, or none",
    )
    parser.add_argument(
        "--queue-capacity", type=optional(int), help="queue bound in events, or none"
    )
    add_old_options(parser)
    parser.add_argument(
        "--drain",
        type=float,
        dest="drain_s",
        help="seconds allowed to empty the queues after the load or a stop (default 60)",
    )
    parser.add_argument("--seed", type=int, help="random seed")
    parser.add_argument("--out", type=Path, help="output directory")
    parser.add_argument(
        "--history", type=Path, help="metrics history database (default: beside --out)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", default=None, help="decide and report, never enact"
    )
    parser.add_argument(
        "--series-resolution",
        type=float,
        dest="series_resolution_s",
        help="seconds per row of timeseries.csv and intervals.csv (default: one per interval)",
    )
    parser.add_argument("--quiet", action="store_true", help="no live table")
    add_metrics_options(parser)


OLD_OPTIONS = {  # old spelling -> (new spelling, setting); accepted for one release
    "--td": ("--interval", "interval_s"),
    "--t-out": ("--event-timeout", "event_timeout_s"),
    "--q-size": ("--queue-capacity", "queue_capacity"),
}


class _OldOption(argparse.Action):
    """An option's old spelling: stores the value and prints the renamed notice."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        warn_renamed(str(option), OLD_OPTIONS[str(option)][0], "option")
        setattr(namespace, self.dest, values)


def add_old_options(parser: argparse.ArgumentParser) -> None:
    """The old spellings of renamed options, hidden from --help."""
    kinds = {
        "interval_s": float,
        "event_timeout_s": optional(float),
        "queue_capacity": optional(int),
    }
    for old, (_, dest) in OLD_OPTIONS.items():
        parser.add_argument(
            old, dest=dest, type=kinds[dest], action=_OldOption, help=argparse.SUPPRESS
        )


def add_metrics_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--metrics-port",
        type=int,
        help="port of the run's /metrics endpoint and live view (default 9464, or a free one "
        "if taken; 0: none)",
    )
    parser.add_argument("--metrics-host", help="address of the /metrics endpoint (127.0.0.1)")
    parser.add_argument(
        "--no-metrics", action="store_true", help="serve no /metrics endpoint (as --metrics-port 0)"
    )


def metrics_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The metrics settings given on the command line."""
    given = {
        "port": getattr(args, "metrics_port", None),
        "host": getattr(args, "metrics_host", None),
    }
    if getattr(args, "no_metrics", False):
        given["port"] = 0
    return {k: v for k, v in given.items() if v is not None}


def default_history() -> Path:
    """Where `run`, `simulate` and `demo` record their history by default: the one default
    every command that reads a history starts from."""
    return make_config().history_path()


OFF = "none"


def optional(kind: type) -> Any:
    """An argparse type that also accepts 'none' (the setting switched off)."""

    def parse(text: str) -> Any:
        return OFF if text.strip().lower() == OFF else kind(text)

    parse.__name__ = kind.__name__
    return parse


FLAGS = (
    "policy",
    "replicas",
    "trace",
    "data_dir",
    "peak_rate",
    "time_scale",
    "slice",
    "duration",
    "interval_s",
    "event_timeout_s",
    "queue_capacity",
    "drain_s",
    "seed",
    "out",
    "queues",
    "history",
    "dry_run",
    "series_resolution_s",
)


def config_from_args(args: argparse.Namespace, **overrides: Any) -> RunConfig:
    """Settings file, then command-line flags, then `overrides` (e.g. the engine). A bad or
    misplaced key of the settings file is named with its file and line."""
    base: dict[str, Any] = {}
    if getattr(args, "config", None) is not None:
        try:
            file = read_settings(RunConfig, args.config, "settings")
            base = file.model_dump(exclude_unset=True)
        except SettingsError as exc:
            raise ConfigError(str(exc)) from None
    given = {k: getattr(args, k, None) for k in FLAGS}
    flags = {k: (None if v == OFF else v) for k, v in given.items() if v is not None}
    if metrics := metrics_flags(args):
        flags["metrics"] = base.get("metrics", {}) | metrics
    return make_config(**(base | flags | overrides))


def load_run_inputs(args: argparse.Namespace, **overrides: Any) -> tuple[Pipeline, RunConfig]:
    pipeline = load_pipeline(args.pipeline)
    pipeline.check_imports()
    return pipeline, config_from_args(args, **overrides)


def print_summary(summary: Summary, paths: dict[str, Path]) -> None:
    values = summary.as_dict()
    print(json.dumps({k: values[k] for k in HEADLINE}, indent=2))
    for kind, path in paths.items():
        print(f"{kind:>10}: {path}")
