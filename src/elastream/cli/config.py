"""`elastream config --describe`: every setting of a run with its type, default and meaning."""

from __future__ import annotations

import argparse

from elastream.base.settings import Option, describe
from elastream.config import RunConfig
from elastream.control.policies import POLICIES
from elastream.runtime.sim.settings import SimSettings


def register(parser: argparse.ArgumentParser) -> None:
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--describe", action="store_true", help="print every option, its default and meaning"
    )
    what.add_argument("--policies", action="store_true", help="list the registered policies")
    parser.set_defaults(handler=handle)


def sections() -> list[tuple[str, list[Option]]]:
    """(heading, options) of every settings model a user can write."""
    out = [
        ("run settings (--config FILE, or a bench scenario's run:)", describe(RunConfig)),
        (
            "simulator settings (--sim-config FILE, or a bench scenario's sim:)",
            describe(SimSettings),
        ),
    ]
    for name in POLICIES.names():
        policy = POLICIES.get(name)
        options = describe(policy.config_type)
        out.append((f"policy {name} options (policy_options:) — {policy.summary}", options))
    return out


def print_options(heading: str, options: list[Option]) -> None:
    print(f"\n{heading}")
    if not options:
        print("  (no options)")
    for option in options:
        print(f"  {option.path}: {option.type} = {option.default}")
        print(f"      {option.description}")


def handle(args: argparse.Namespace) -> int:
    if args.describe:
        for heading, options in sections():
            print_options(heading, options)
    else:  # --policies (argparse requires one of the two)
        for name in POLICIES.names():
            print(f"{name}: {POLICIES.get(name).summary}")
    return 0
