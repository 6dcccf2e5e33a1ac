"""Options and steps shared by `elastream run` (`simulate` is its alias) and `demo`: the options
are made from the run settings' descriptions, so `--help` and `config --describe` agree."""

from __future__ import annotations

import argparse
import json
import typing
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo

from elastream.base.settings import SettingsError, default_text, read_settings
from elastream.cli._renamed import add_gone_option, add_old_option, add_old_switch
from elastream.config import ConfigError, RunConfig, make_config
from elastream.config.files import load_pipeline, make_importable
from elastream.config.run import DRY_RUN_GONE
from elastream.control.policies import POLICIES
from elastream.model.metric_catalog import PAPER_METRICS
from elastream.model.metrics import Summary
from elastream.model.pipeline import Pipeline
from elastream.runtime.sim.settings import SimSettings

HEADLINE = (
    *PAPER_METRICS,
    "latency_ms_p99",
    "events_in",
    "events_out",
    "replicas_mean",
    "reconfigurations",
)


# Run settings given only in a --config file: mappings of settings of their own.
FILE_ONLY = ("policy_options", "objective", "guards", "spark", "metrics")
# Nested run settings that have an option: (section, setting); the option is their path.
NESTED_SETTINGS = (
    ("spark", "master"),
    ("metrics", "port"),
    ("metrics", "host"),
    ("objective", "latency_p99_s"),
    ("objective", "latency_mean_s"),
)
# Simulator settings with an option (`run --engine sim`), its path under `sim`; the others go
# in --sim-config.
SIM_SETTINGS = (
    "step_s",
    "queue_model",
    "reconfiguration",
    "restart_downtime_s",
    "start_delay_s",
    "batch_overhead_s",
    "et_noise",
    "sample_events",
    "fast_forward",
)
OFF = "none"


def option_name(*path: str) -> str:
    """A setting's option: its path (section, name) joined by '-', with '-' for '_', so
    `interval_s` is --interval-s and `spark.master` is --spark-master: the same name as in a
    settings file and in Python."""
    return "--" + "-".join(path).replace("_", "-")


NESTED = {option_name(*path): path for path in NESTED_SETTINGS}
SIM_OPTIONS = {name: option_name("sim", name) for name in SIM_SETTINGS}
# Options renamed when their names were made the settings' own: old spelling -> setting.
OLD_OPTIONS = {
    "--td": "interval_s",
    "--interval": "interval_s",
    "--t-out": "event_timeout_s",
    "--event-timeout": "event_timeout_s",
    "--q-size": "queue_capacity",
    "--drain": "drain_s",
    "--series-resolution": "series_resolution_s",
    "--series-recent": "series_recent_s",
    "--series-archive": "series_archive_s",
}
# A bound given as an option replaces the other statistic's bound of the settings file.
ALTERNATIVE = {"latency_p99_s": "latency_mean_s", "latency_mean_s": "latency_p99_s"}
OLD_NESTED = {"--master": ("spark", "master")}
OLD_SIM = {
    "--sim-step": "step_s",
    "--queue-model": "queue_model",
    "--reconfiguration": "reconfiguration",
    "--restart-downtime": "restart_downtime_s",
    "--start-delay": "start_delay_s",
    "--batch-overhead": "batch_overhead_s",
    "--et-noise": "et_noise",
    "--sample-events": "sample_events",
    "--fast-forward": "fast_forward",
}


def run_settings() -> list[str]:
    """The run settings that have an option of their own (every one not in FILE_ONLY)."""
    return [name for name in RunConfig.model_fields if name not in FILE_ONLY]


class HelpWithDefaults(argparse.HelpFormatter):
    """Help that ends each setting's description with the setting's default (unless None, or
    the description already tells the default)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        default = getattr(action, "setting_default", None)
        text = action.help or ""
        if default in (None, "None") or "default" in text:
            return text
        return f"{text} (default: {default})"


def optional(kind: Any) -> Any:
    """An argparse type that also accepts 'none' (the setting switched off)."""

    def parse(text: str) -> Any:
        return OFF if text.strip().lower() == OFF else kind(text)

    parse.__name__ = getattr(kind, "__name__", "value")
    return parse


def _parser_type(annotation: Any) -> dict[str, Any]:
    """argparse keywords (type, choices or a boolean action) for a setting's annotation."""
    args = typing.get_args(annotation)
    nullable = type(None) in args
    if nullable:
        annotation = next(a for a in args if a is not type(None))
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if annotation is bool:
        return {"action": argparse.BooleanOptionalAction}
    if typing.get_origin(annotation) is typing.Literal:
        return {"choices": typing.get_args(annotation)}
    if annotation not in (int, float, str, Path):
        raise TypeError(f"no command-line type for {annotation!r}")
    return {"type": optional(annotation) if nullable else annotation}


def add_setting(
    parser: Any, option: str, info: FieldInfo, dest: str, **extra: Any
) -> argparse.Action:
    """An option made from a setting: its help is the setting's description (its default
    printed after it), so `--help` and `config --describe` say the same."""
    keywords = _parser_type(info.annotation) | extra
    if "action" not in keywords and "choices" not in keywords:
        keywords["metavar"] = option.removeprefix("--").upper().replace("-", "_")
    description = (info.description or "").replace("%", "%%")
    action = parser.add_argument(option, dest=dest, default=None, help=description, **keywords)
    action.setting_default = default_text(info)  # type: ignore[attr-defined]
    return action


def add_run_options(parser: argparse.ArgumentParser, *, pipeline: bool = True) -> None:
    """The run settings as options, then the simulator's and the nested ones."""
    parser.formatter_class = HelpWithDefaults
    if pipeline:
        parser.add_argument("pipeline", type=Path, help="pipeline YAML file")
    parser.add_argument("--config", type=Path, help="YAML file of run settings (options win)")
    parser.add_argument("--quiet", action="store_true", help="no live table")
    for name in run_settings():
        extra = {"choices": POLICIES.names()} if name == "policy" else {}
        add_setting(parser, option_name(name), RunConfig.model_fields[name], name, **extra)
    for option, (section, name) in NESTED.items():
        add_setting(parser, option, nested_field(section, name), f"{section}_{name}")
    parser.add_argument(
        "--no-metrics", action="store_true", help="serve no /metrics endpoint (as --metrics-port 0)"
    )
    sim = parser.add_argument_group("simulator, with --engine sim (docs/simulator.md)")
    sim.add_argument("--sim-config", type=Path, help="YAML mapping of simulator settings")
    for name, option in SIM_OPTIONS.items():
        add_setting(sim, option, SimSettings.model_fields[name], f"sim_{name}")
    add_old_options(parser)


def nested_field(section: str, name: str) -> FieldInfo:
    """The field of setting `name` in section `section` of the run settings."""
    annotation = RunConfig.model_fields[section].annotation
    model = next(
        a for a in (annotation, *typing.get_args(annotation)) if hasattr(a, "model_fields")
    )
    return model.model_fields[name]


def add_old_options(parser: argparse.ArgumentParser) -> None:
    """The old spellings of the renamed run options: accepted for one release, with a notice
    naming the new one; and the one that was removed."""
    for old, name in OLD_OPTIONS.items():
        kind = _parser_type(RunConfig.model_fields[name].annotation)["type"]
        add_old_option(parser, old, option_name(name), name, type=kind)
    for old, (section, name) in OLD_NESTED.items():
        kind = _parser_type(nested_field(section, name).annotation)["type"]
        add_old_option(parser, old, option_name(section, name), f"{section}_{name}", type=kind)
    for old, name in OLD_SIM.items():
        keywords = _parser_type(SimSettings.model_fields[name].annotation)
        if "action" in keywords:  # an on/off switch
            add_old_switch(parser, old, SIM_OPTIONS[name], f"sim_{name}")
        else:
            add_old_option(parser, old, SIM_OPTIONS[name], f"sim_{name}", **keywords)
    add_gone_option(
        parser, "--dry-run", DRY_RUN_GONE.format(old="--dry-run", new="--recommend-only")
    )


def default_history() -> Path:
    """Where `run` and `demo` record their history by default: the one default every command
    that reads a history starts from."""
    return make_config().history_path()


def add_history_option(parser: argparse.ArgumentParser) -> None:
    """`--history`, for a command that reads the metrics history (`serve`, `whatif`)."""
    parser.add_argument(
        "--history",
        type=Path,
        default=default_history(),
        help=f"metrics history (SQLite; default {default_history()}, where runs record theirs)",
    )


def _given(value: Any) -> Any:
    return None if value == OFF else value


def nested_flags(args: argparse.Namespace, base: dict[str, Any]) -> dict[str, Any]:
    """The nested settings given as options, merged into the --config file's sections."""
    out: dict[str, Any] = {}
    for section, name in NESTED.values():
        value = getattr(args, f"{section}_{name}", None)
        if value is not None:
            values = out.setdefault(section, dict(base.get(section) or {}))
            values.pop(ALTERNATIVE.get(name, ""), None)  # the option replaces the file's bound
            values[name] = _given(value)
    if getattr(args, "no_metrics", False):
        out.setdefault("metrics", dict(base.get("metrics") or {}))["port"] = 0
    return out


def sim_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The simulator settings given as options."""
    given = {name: getattr(args, f"sim_{name}", None) for name in SIM_OPTIONS}
    return {name: _given(value) for name, value in given.items() if value is not None}


def config_from_args(args: argparse.Namespace, **overrides: Any) -> RunConfig:
    """Settings file, then command-line options, then `overrides`. A bad or misplaced key of the
    settings file is named with its file and line."""
    base: dict[str, Any] = {}
    if getattr(args, "config", None) is not None:
        try:
            file = read_settings(RunConfig, args.config, "settings")
            base = file.model_dump(exclude_unset=True)
        except SettingsError as exc:
            raise ConfigError(str(exc)) from None
    given = {name: getattr(args, name, None) for name in run_settings()}
    flags = {name: _given(value) for name, value in given.items() if value is not None}
    return make_config(**(base | flags | nested_flags(args, base) | overrides))


def load_run_inputs(args: argparse.Namespace, **overrides: Any) -> tuple[Pipeline, RunConfig]:
    pipeline = load_pipeline(args.pipeline)
    make_importable(pipeline)
    pipeline.check_imports()
    return pipeline, config_from_args(args, **overrides)


def print_summary(summary: Summary, paths: dict[str, Path]) -> None:
    values = summary.as_dict()
    print(json.dumps({k: values[k] for k in HEADLINE}, indent=2))
    for kind, path in paths.items():
        print(f"{kind:>10}: {path}")
