"""The one progress bar of every long command and benchmark script: what is done out of the
total (cases, or seconds of simulated or wall time) and an estimate of the time left; off with
`--quiet` and when the output is not a terminal."""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

T = TypeVar("T")


class ProgressBar:
    """A bar of `total` units (`unit`: "cases", "s" …) under a title; `advance()` and
    `update()` move it, the description says what runs now. Inert (nothing drawn) when `quiet`
    or when the console is not a terminal, so logs and pipes stay clean."""

    def __init__(
        self,
        total: float,
        title: str,
        *,
        unit: str = "cases",
        quiet: bool = False,
        console: Console | None = None,
    ) -> None:
        self.console = console or Console()
        self.shown = not quiet and self.console.is_terminal
        self.total, self.unit, self.done = total, unit, 0.0
        count = (
            MofNCompleteColumn()
            if unit == "cases"
            else TextColumn(f"{{task.completed:,.0f}}/{{task.total:,.0f}} {unit}")
        )
        self._progress = Progress(
            TextColumn(f"[bold]{title}"),
            BarColumn(),
            TaskProgressColumn(),
            count,
            TextColumn("elapsed"),
            TimeElapsedColumn(),
            TextColumn("· left"),
            TimeRemainingColumn(),
            TextColumn("{task.description}"),
            console=self.console,
            disable=not self.shown,
        )
        self._task = self._progress.add_task("", total=total)

    def __enter__(self) -> ProgressBar:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def advance(self, n: float = 1.0, description: str | None = None) -> None:
        self.update(self.done + n, description)

    def update(self, done: float, description: str | None = None) -> None:
        """`done` units of the total; `description`: what runs now (None: unchanged)."""
        self.done = min(done, self.total)
        extra = {} if description is None else {"description": description}
        self._progress.update(self._task, completed=self.done, **extra)


def steps(
    items: Iterable[T], title: str, *, quiet: bool = False, label: bool = True
) -> Iterator[T]:
    """`items` one by one under a bar of cases done (each item's text as the description)."""
    items = list(items)
    with ProgressBar(len(items), title, quiet=quiet) as bar:
        for k, item in enumerate(items):
            bar.update(k, str(item) if label else None)
            yield item
        bar.update(len(items), "done")


@contextmanager
def clock(seconds: float, title: str, *, quiet: bool = False) -> Iterator[ProgressBar]:
    """A bar of wall time for one long step of a known length (a Spark run of `seconds`): it
    moves by itself while the body runs, and stops at the total until the body ends."""
    bar = ProgressBar(seconds, title, unit="s", quiet=quiet)
    stop = threading.Event()
    start = time.monotonic()

    def tick() -> None:
        while not stop.wait(0.5):
            bar.update(time.monotonic() - start)

    ticker = threading.Thread(target=tick, name="progress-clock", daemon=True)
    with bar:
        ticker.start()
        try:
            yield bar
        finally:
            stop.set()
            ticker.join()


def add_quiet(parser: argparse.ArgumentParser) -> None:
    """The `--quiet` option of a script: no progress bar."""
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
