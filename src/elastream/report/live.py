"""A live terminal view of the MAPE loop: an observer that redraws a per-operator table."""

from __future__ import annotations

import time

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from elastream.control.policy import Decision
from elastream.model.objective import Objective, ObjectiveTally, judge
from elastream.model.pipeline import Pipeline
from elastream.model.snapshot import OperatorStats, Snapshot
from elastream.report import formatting as fmt
from elastream.report.series import per_second, service_ms, utilization


class LiveTable:
    """Observer `(snapshot, decision) -> None` for `run_mape`.

    Inside `with LiveTable(pipeline):` on a terminal the table is redrawn in place every interval;
    when stdout is not a terminal (or outside the `with`) one compact line per interval is printed
    instead; with `quiet=True` nothing is shown."""

    def __init__(
        self,
        pipeline: Pipeline,
        *,
        console: Console | None = None,
        quiet: bool = False,
        title: str | None = None,
        refresh_per_second: float = 4.0,
        objective: Objective | None = None,
        length_s: float | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.tally = ObjectiveTally(objective) if objective is not None else None
        self.console = console or Console()
        self.quiet = quiet
        self.title = title or pipeline.name
        self.refresh_per_second = refresh_per_second
        self.length_s = length_s  # the run's length in its own time (None: until stopped)
        self._live: Live | None = None
        self._started: float | None = None  # wall clock at the first interval
        self._first_t = 0.0  # the run's time at the first interval

    def __enter__(self) -> LiveTable:
        if not self.quiet and self.console.is_terminal:
            waiting = Text(f"{self.title}: waiting for the first interval…", style="dim")
            self._live = Live(
                waiting, console=self.console, refresh_per_second=self.refresh_per_second
            )
            self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def __call__(self, snapshot: Snapshot, decision: Decision) -> None:
        if self.tally is not None:
            self.tally(snapshot)
        if self.quiet:
            return
        if self._live is not None:
            self._live.update(self.render(snapshot, decision), refresh=True)
        else:
            line = self.line(snapshot, decision)
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def header(self, snapshot: Snapshot) -> str:
        s = snapshot
        return (
            f"t={s.t:,.1f} s  input {fmt.rate(per_second(s.source_events, s.interval_s))} ev/s  "
            f"output {fmt.rate(per_second(s.completed, s.interval_s))} ev/s  "
            f"latency {fmt.ms(s.latency_ms_mean)} (p99 {fmt.ms(s.latency_ms_p99)})"
            f"{self.objective_text(s)}"
            + "".join(f"  {name} backlog {n:,}" for name, n in s.source_backlog)
        )

    def objective_text(self, snapshot: Snapshot) -> str:
        """'  objective p99 ≤ 2 s: met (met in 97.5% of intervals)', or '' without an
        objective."""
        if self.tally is None:
            return ""
        objective = self.tally.objective
        verdict = judge(snapshot, objective).met
        word = "not judged" if verdict is None else "met" if verdict else "MISSED"
        share = self.tally.met_share
        so_far = "" if share is None else f" (met in {fmt.pct(share, 1)} of intervals)"
        return f"  objective {objective.statistic} ≤ {objective.bound_s:g} s: {word}{so_far}"

    @staticmethod
    def hosts(snapshot: Snapshot) -> str:
        """The leased hosts with their BTU clocks and the cost so far ('' without leasing)."""
        if not snapshot.hosts:
            return ""
        clocks = [
            f"{h.host_id} BTU {h.btus}, {h.btu_left_s:,.0f} s left"
            if h.up
            else f"{h.host_id} booting"
            for h in snapshot.hosts
        ]
        return f"hosts: {'; '.join(clocks)} · cost so far {snapshot.host_cost:,.2f}"

    def progress(self, snapshot: Snapshot, now: float | None = None) -> str:
        """'180 of 600 s (30%), about 42 s left': the run's time against its length, and the
        wall time left at the pace so far ('' for a run without an end)."""
        if not self.length_s:
            return ""
        now = time.monotonic() if now is None else now
        if self._started is None:
            self._started, self._first_t = now, snapshot.t
        done = min(snapshot.t / self.length_s, 1.0)
        text = f"{snapshot.t:,.0f} of {self.length_s:,.0f} s ({fmt.pct(done, 0)})"
        ran = snapshot.t - self._first_t
        if ran > 0 and done < 1:
            left = (now - self._started) / ran * (self.length_s - snapshot.t)
            text += f", about {left:,.0f} s left"
        return text

    def render(self, snapshot: Snapshot, decision: Decision) -> Table:
        """The full table for one interval."""
        caption = " · ".join(t for t in (self.progress(snapshot), self.hosts(snapshot)) if t)
        table = Table(
            title=Text(f"{self.title} · {self.header(snapshot)}", style="bold"),
            title_justify="left",
            caption=caption or None,
            caption_justify="left",
            expand=False,
        )
        table.add_column("operator", no_wrap=True)
        headings = ("in ev/s", "processed ev/s", "queue", "replicas", "target", "service ms")
        for heading in (*headings, "busy"):
            table.add_column(heading, justify="right", no_wrap=True, min_width=len(heading))
        table.add_column("reason", style="dim", no_wrap=True, overflow="ellipsis", max_width=60)
        targets = decision.as_dict()
        for o in self._ordered(snapshot):
            reason = decision.reason(o.name)
            table.add_row(*self._cells(o, snapshot.interval_s, targets.get(o.name), reason))
        return table

    def _ordered(self, snapshot: Snapshot) -> list[OperatorStats]:
        rank = {name: i for i, name in enumerate(self.pipeline.topological_order)}
        return sorted(snapshot.operators, key=lambda o: rank.get(o.name, len(rank)))

    @staticmethod
    def _cells(o: OperatorStats, td: float, target: int | None, reason: str) -> list[str | Text]:
        if target is None:
            change = Text(fmt.MISSING)
        else:
            style = "green" if target > o.replicas else "yellow" if target < o.replicas else ""
            change = Text(str(target), style=style)
        return [
            Text(o.name),
            fmt.rate(per_second(o.received, td)),
            fmt.rate(per_second(o.processed, td)),
            fmt.count(o.queue),
            f"{o.replicas}/{o.max_replicas}",
            change,
            fmt.number(service_ms(o), 1),
            fmt.pct(utilization(o, td), 0),
            Text(reason),
        ]

    def line(self, snapshot: Snapshot, decision: Decision) -> str:
        """One compact line for one interval (non-terminal output)."""
        targets = decision.as_dict()
        parts = [
            f"{o.name} replicas {o.replicas}/{o.max_replicas}->{targets.get(o.name, fmt.MISSING)}"
            f" queue {o.queue:,} busy {fmt.pct(utilization(o, snapshot.interval_s), 0)}"
            for o in self._ordered(snapshot)
        ]
        hosts = self.hosts(snapshot)
        return " | ".join([self.header(snapshot), *parts, *([hosts] if hosts else [])])
