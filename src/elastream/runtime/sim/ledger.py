"""Run-wide bookkeeping of the simulator: what entered, finished, was dropped, and how late.

Events are counted in cohorts: `k` is the step in which a cohort's source events were emitted,
so an event reaching a sink in step s has waited (s - k) steps; its latency is (s - k)·Δ plus
the service time of its path (see docs/simulator-model.md, "Latency")."""

from __future__ import annotations

from dataclasses import dataclass

from elastream.model.metrics import histogram_quantile, latency_histogram_of


@dataclass
class Counts:
    """Running totals; an interval's figures are the difference of two copies."""

    events_in: int = 0
    sink_events: int = 0
    completed_w: float = 0.0  # source events finished, in source-event units (see profile weights)
    filtered: int = 0
    failed: int = 0
    dropped_timeout: int = 0
    dropped_overflow: int = 0
    dropped_restart: int = 0
    latency_s_sum: float = 0.0

    def copy(self) -> Counts:
        return Counts(**vars(self))


class Ledger:
    """Totals, the latency histogram and the current step, shared by every operator and sink."""

    def __init__(self, step_s: float) -> None:
        self.step_s = step_s
        self.s = 0  # current step
        self.counts = Counts()
        self.histogram: dict[tuple[int, float], int] = {}  # (lag steps, path service s) -> n
        self.interval_histogram: dict[float, int] = {}  # latency s -> n, since the last snapshot
        self.interval_sinks: dict[str, int] = {}  # sink -> events, since the last snapshot

    def arrive_at_sink(
        self, cohorts: dict[int, int], weight: float, service_s: float, sink: str = ""
    ) -> None:
        c = self.counts
        s = self.s
        step = self.step_s
        histogram = self.histogram
        recent = self.interval_histogram
        n_all = 0
        for k, n in cohorts.items():
            lag = s - k
            n_all += n
            latency = lag * step + service_s
            c.latency_s_sum += n * latency
            key = (lag, service_s)
            histogram[key] = histogram.get(key, 0) + n
            recent[latency] = recent.get(latency, 0) + n
        c.sink_events += n_all
        c.completed_w += n_all * weight
        self.interval_sinks[sink] = self.interval_sinks.get(sink, 0) + n_all

    def latency_histogram_ms(self) -> list[tuple[float, int]]:
        """(latency in ms, events) of every cohort that reached a sink, lowest latency first."""
        return sorted(
            ((lag * self.step_s + service) * 1000.0, n)
            for (lag, service), n in self.histogram.items()
        )

    def interval_latencies(self) -> tuple[float | None, tuple[tuple[float, int], ...]]:
        """The nearest-rank p99 (ms) of the sink latencies since the last call, and those
        latencies as (ms, events) in 1-ms bins; the call starts the next interval's."""
        recent, self.interval_histogram = self.interval_histogram, {}
        p99 = histogram_quantile(sorted(recent.items()), 0.99)
        bins = latency_histogram_of(recent)
        return (None if p99 is None else p99 * 1000.0), bins

    def interval_sink_counts(self) -> tuple[tuple[str, int], ...]:
        """Events each sink received since the last call (which starts the next count), every
        sink listed."""
        counts, self.interval_sinks = self.interval_sinks, dict.fromkeys(self.interval_sinks, 0)
        return tuple(counts.items())

    def latency_ms_p99(self) -> float | None:
        """The nearest-rank 99th percentile of sink latencies, every cohort weighted by its size."""
        return histogram_quantile(self.latency_histogram_ms(), 0.99)


class Sink:
    """A terminal node: every cohort that reaches it has left the pipeline."""

    __slots__ = ("ledger", "name")

    def __init__(self, name: str, ledger: Ledger) -> None:
        self.name = name
        self.ledger = ledger
        ledger.interval_sinks.setdefault(name, 0)

    def receive(
        self, sender: str, cohorts: dict[int, int], weight: float, service_s: float
    ) -> None:
        self.ledger.arrive_at_sink(cohorts, weight, service_s, self.name)
