"""Renamed options: the old spelling still accepted for one release, with a one-line notice."""

from __future__ import annotations

import argparse
from typing import Any

from elastream.base.settings import warn_renamed


class _OldOption(argparse.Action):
    """An option's old spelling: stores the value and prints the renamed notice."""

    def __init__(
        self, *args: Any, new: str, append: bool = False, flag: bool | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **({"nargs": 0} if flag is not None else {}) | kwargs)
        self.new, self.append, self.flag = new, append, flag

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        warn_renamed(str(option), self.new, "option")
        if self.flag is not None:  # a switch: --x or --no-x
            values = self.flag
        elif self.append:  # a repeatable option: add to what was given
            values = [*(getattr(namespace, self.dest, None) or []), values]
        setattr(namespace, self.dest, values)


class _GoneOption(argparse.Action):
    """An option that no longer exists: its use ends the command with one line saying why."""

    def __init__(self, *args: Any, message: str, **kwargs: Any) -> None:
        super().__init__(*args, nargs=0, **kwargs)
        self.message = message

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        parser.exit(2, f"{parser.prog}: error: {self.message}\n")


def add_gone_option(parser: Any, old: str, message: str) -> None:
    """An option that was removed, hidden from --help: using it fails with `message`."""
    parser.add_argument(
        old, action=_GoneOption, message=message, default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )


def add_old_option(parser: Any, old: str, new: str, dest: str, **kwargs: Any) -> None:
    """A renamed option's old spelling, hidden from --help, accepted for one release."""
    parser.add_argument(
        old,
        dest=dest,
        action=_OldOption,
        new=new,
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
        **kwargs,
    )


def add_old_switch(parser: Any, old: str, new: str, dest: str) -> None:
    """A renamed on/off option's old spellings (--old and --no-old), accepted for one release."""
    add_old_option(parser, old, new, dest, flag=True)
    negative = f"--no-{old.removeprefix('--')}"
    add_old_option(parser, negative, f"--no-{new.removeprefix('--')}", dest, flag=False)
