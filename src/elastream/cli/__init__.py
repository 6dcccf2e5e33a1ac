"""The `elastream` command line: one sub-command per module of `elastream.cli`, each imported
only when its command runs (or its --help is asked for): `elastream --version` imports none."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

from elastream.base.secrets import redact_text
from elastream.cli._logging import FORMATS, LEVELS, configure_logging

# Every command and its one-line help; the module `elastream.cli.COMMAND` adds its options.
COMMANDS = {
    "bench": "run scenarios x policies x parameter grids on the simulator",
    "check": "check a pipeline and its settings as `run` would, and say what would run",
    "cluster": "start or stop a Spark standalone cluster here",
    "config": "describe every setting (run settings file, simulator, policy options)",
    "demo": "run the tweet-analysis example on Spark (a few minutes)",
    "forecast": "backtest traffic forecasters on a trace (MASE, skill, sMAPE, interval coverage)",
    "plan": "choose replicas per operator and a node for each (ODRP on HiGHS)",
    "run": "run a pipeline, scaling each operator live (Spark, or --engine sim)",
    "serve": "start the modelling REST service (OpenAPI at /openapi.json, docs at /docs)",
    "simulate": "alias of `run --engine sim`: the run on the simulator",
    "trace": "statistics and a plot of a workload trace",
    "whatif": "predict throughput, backpressure, CPU and latency at a proposed parallelism",
}


def package_version() -> str:
    """The package's version (its distribution's metadata is made from it: pyproject.toml)."""
    from elastream import __version__

    return __version__


def submit_script() -> Path:
    """The file spark-submit runs: `spark-submit [OPTIONS] SCRIPT COMMAND ...` (docs/deploy.md)."""
    return Path(__file__).resolve().parents[1] / "submit" / "elastream_submit.py"


class _Version(argparse.Action):
    """`--version`: print the installed version and exit (read from the metadata only then)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help=str(kwargs.get("help")))

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"{parser.prog} {package_version()}")
        parser.exit()


class _PrintPath(argparse.Action):
    """`--spark-submit-script`: print the entry point's path and exit (as --version does)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help=str(kwargs.get("help")))

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(submit_script())
        parser.exit()


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; only the options of `commands` (None: all) are added, so
    only their modules are imported."""
    parser = argparse.ArgumentParser(
        prog="elastream",
        description="Elastic, lag-aware per-operator scaling for PySpark pipelines.",
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    parser.add_argument(
        "--spark-submit-script",
        action=_PrintPath,
        help="print the path of the file to give spark-submit, then exit",
    )
    parser.add_argument(
        "--log-level", choices=LEVELS, default="info", help="log level (default info)"
    )
    parser.add_argument(
        "--log-format", choices=FORMATS, default="text", help="log lines as text or JSON"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    full = set(COMMANDS if commands is None else commands)
    for name, help in COMMANDS.items():
        command = sub.add_parser(name, help=help, description=help)
        if name in full:
            importlib.import_module(f"{__name__}.{name}").register(command)
    return parser


def command_named(argv: Sequence[str]) -> str | None:
    """The command `argv` names: its first word that is one (the global options' values, log
    levels and formats, never are)."""
    return next((word for word in argv if word in COMMANDS), None)


def _one_line(message: Warning | str, category: type[Warning], *args: object, **kw: object) -> None:
    """A renamed setting's notice as one line on stderr; other warnings as Python prints them."""
    from elastream.base.settings import RenamedSettingWarning

    if issubclass(category, RenamedSettingWarning):
        print(f"elastream: warning: {message}", file=sys.stderr)
    else:
        _show_warning(message, category, *args, **kw)  # type: ignore[arg-type]


_show_warning = warnings.showwarning


def _notices_in_one_line() -> None:
    """Every renamed setting's notice, each time, in one line; FutureWarnings hidden."""
    from elastream.base.settings import RenamedSettingWarning

    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("always", category=RenamedSettingWarning)
    warnings.showwarning = _one_line


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = command_named(argv)
    if command is not None:
        _notices_in_one_line()
    args = build_parser([] if command is None else [command]).parse_args(argv)
    configure_logging(args.log_level, args.log_format)
    try:
        return int(args.handler(args) or 0)
    except (ValueError, KeyError, FileNotFoundError, RuntimeError) as exc:
        if os.environ.get("ELASTREAM_DEBUG"):
            raise
        print(f"elastream {args.command}: error: {redact_text(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # a second SIGINT or SIGTERM: stopped at once
        print(
            f"elastream {args.command}: stopped at once ({exc or 'interrupted'})", file=sys.stderr
        )
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
