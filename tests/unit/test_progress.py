"""The one progress bar (report/progress.py): done out of the total with an estimate of the
time left on a terminal; nothing at all with --quiet or when the output is not a terminal; and
every benchmark script has it."""

from __future__ import annotations

import ast
import io

from rich.console import Console
from support.paths import ROOT

from elastream.report.progress import ProgressBar, clock, steps


def terminal() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, force_terminal=True, width=140), buf


def test_on_a_terminal_it_shows_done_total_and_time_left():
    console, buf = terminal()
    with ProgressBar(8, "cases", console=console) as bar:
        for k in range(3):
            bar.advance(1, f"case {k}")
    out = buf.getvalue()
    assert "3/8" in out and "left" in out and "case 2" in out and "38%" in out


def test_simulated_seconds_as_the_unit():
    console, buf = terminal()
    with ProgressBar(3600, "simulated", unit="s", console=console) as bar:
        bar.update(900)
    assert "900/3,600 s" in buf.getvalue() and "25%" in buf.getvalue()


def test_quiet_or_not_a_terminal_draws_nothing():
    console, buf = terminal()
    with ProgressBar(4, "quiet", quiet=True, console=console) as bar:
        bar.advance(2)
    assert buf.getvalue() == ""
    piped = io.StringIO()
    with ProgressBar(4, "piped", console=Console(file=piped)) as bar:
        bar.advance(2)
    assert piped.getvalue() == ""
    assert list(steps([1, 2, 3], "items", quiet=True)) == [1, 2, 3]
    with clock(0.6, "wait", quiet=True) as bar:
        pass
    assert not bar.shown


def test_every_benchmark_script_has_the_bar_and_its_quiet_option():
    """Each script under benchmarks/ uses the shared bar (steps, clock, ProgressBar, or the
    bench's run_matrix) and takes --quiet (add_quiet)."""
    missing = []
    for script in sorted((ROOT / "benchmarks").glob("*.py")):
        names = {
            alias.name
            for node in ast.walk(ast.parse(script.read_text()))
            if isinstance(node, ast.ImportFrom) and node.module == "elastream.report.progress"
            for alias in node.names
        }
        bench = "run_matrix(" in script.read_text()  # the bench's own bar, the same helper
        if "add_quiet" not in names or not (names & {"steps", "clock", "ProgressBar"} or bench):
            missing.append(script.name)
    assert missing == []
