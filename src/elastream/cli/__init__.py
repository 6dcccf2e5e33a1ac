"""The `elastream` command line: one sub-command per module of `elastream.cli`."""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import warnings
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from elastream.base.secrets import redact_text
from elastream.base.settings import RenamedSettingWarning
from elastream.cli._logging import FORMATS, LEVELS, configure_logging


def package_version() -> str:
    """The installed distribution's version (its metadata), or a note when run from a bare tree."""
    try:
        return metadata.version("elastream")
    except metadata.PackageNotFoundError:
        return "(not installed: no package metadata)"


def submit_script() -> Path:
    """The file spark-submit runs: `spark-submit [OPTIONS] SCRIPT COMMAND ...` (docs/deploy.md)."""
    return Path(__file__).resolve().parents[1] / "submit" / "elastream_submit.py"


class _PrintPath(argparse.Action):
    """`--spark-submit-script`: print the entry point's path and exit (as --version does)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help=str(kwargs.get("help")))

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(submit_script())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="elastream",
        description="Elastic, lag-aware per-operator scaling for PySpark pipelines.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
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
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        module.register(sub)
    return parser


def _one_line(message: Warning | str, category: type[Warning], *args: object, **kw: object) -> None:
    """A renamed setting's notice as one line on stderr; other warnings as Python prints them."""
    if issubclass(category, RenamedSettingWarning):
        print(f"elastream: warning: {message}", file=sys.stderr)
    else:
        _show_warning(message, category, *args, **kw)  # type: ignore[arg-type]


_show_warning = warnings.showwarning


def main(argv: Sequence[str] | None = None) -> int:
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("always", category=RenamedSettingWarning)
    warnings.showwarning = _one_line
    args = build_parser().parse_args(argv)
    configure_logging(args.log_level, args.log_format)
    try:
        return int(args.handler(args) or 0)
    except (ValueError, KeyError, FileNotFoundError, RuntimeError) as exc:
        if os.environ.get("ELASTREAM_DEBUG"):
            raise
        print(f"elastream {args.command}: error: {redact_text(str(exc))}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
