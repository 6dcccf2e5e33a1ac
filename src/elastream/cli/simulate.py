"""`elastream simulate PIPELINE`: an alias of `elastream run --engine sim`."""

from __future__ import annotations

import argparse

from elastream.cli.run import add_parser


def register(sub: argparse._SubParsersAction) -> None:
    parser = add_parser(sub, "simulate", "alias of `run --engine sim`: the run on the simulator")
    parser.set_defaults(engine="sim")
