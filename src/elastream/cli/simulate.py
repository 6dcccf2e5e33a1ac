"""`elastream simulate PIPELINE`: an alias of `elastream run --engine sim`."""

from __future__ import annotations

import argparse

from elastream.cli import run


def register(parser: argparse.ArgumentParser) -> None:
    run.register(parser)
    parser.set_defaults(engine="sim")
