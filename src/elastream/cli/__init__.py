"""The `elastream` command line: one sub-command per module of `elastream.cli`."""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import warnings
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="elastream",
        description="Elastic, lag-aware per-operator scaling for PySpark pipelines.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    warnings.filterwarnings("ignore", category=FutureWarning)
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except (ValueError, KeyError, FileNotFoundError, RuntimeError) as exc:
        if os.environ.get("ELASTREAM_DEBUG"):
            raise
        print(f"elastream {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
