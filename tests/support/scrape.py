"""A Prometheus-like scraper for the tests: GETs /metrics every `every_s` on a thread, keeps every
scrape parsed into {(name, labels): value}."""

from __future__ import annotations

import csv
import json
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

Sample = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Sample:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def get(url: str, token: str | None = None, timeout: float = 5.0) -> tuple[int, str]:
    """(status, body) of one GET; an HTTP error status is returned, not raised."""
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


class Scraper:
    """Scrapes `url` until stopped; `scrapes` holds every successful one, in order."""

    def __init__(
        self, url: str, every_s: float = 0.5, token: str | None = None, raw: bool = False
    ) -> None:
        self.url, self.every_s, self.token, self.raw = url, every_s, token, raw
        self.scrapes: list[Sample] = []
        self.texts: list[str] = []  # every scrape's text too, with `raw`
        self.refused = 0  # connection refused: not up yet, or gone
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                status, body = get(self.url, self.token, timeout=2.0)
            except OSError:
                self.refused += 1
            else:
                assert status == 200, (status, body)
                self.scrapes.append(parse(body))
                if self.raw:
                    self.texts.append(body)
            self._stop.wait(self.every_s)

    def __enter__(self) -> Scraper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def value(sample: Sample, name: str, **labels: str) -> float:
    return sample[(name, tuple(sorted(labels.items())))]


# Every family /metrics serves (docs/deploy.md §Metrics), each with where the run's output files
# hold its value: the one list to update when a family is added or renamed (a family served and
# not listed here fails `assert_metrics_match_outputs`, as does one listed and not served).
Row = dict[str, str]
RUN_COUNTERS = {  # family -> intervals.csv column, summed over the intervals (and sources, sinks)
    "elastream_source_events_total": "input",
    "elastream_events_completed_total": "completed",
    "elastream_sink_events_total": "sink_events",
}
SUMMARY_COUNTERS = {  # family -> summary.json field
    "elastream_intervals_total": "intervals",
    "elastream_reconfigurations_total": "reconfigurations",
    "elastream_events_failed_total": "events_failed",
    "elastream_events_dropped_restart_total": "events_dropped_restart",
    "elastream_query_restarts_total": "query_restarts",
    "elastream_hosts_leased_total": "hosts_leased",
    "elastream_host_re_leases_total": "host_re_leases",
}
RUN_GAUGES = {  # family -> its value from the last row of intervals.csv (summed over sources)
    "elastream_run_finished": lambda row: 1,
    "elastream_source_rate_events_per_second": lambda row: (
        int(row["input"]) / float(row["interval_s"])
    ),
    "elastream_hosts_up": lambda row: int(row["hosts_up"]),
    "elastream_host_cost_price_units": lambda row: float(row["host_cost"]),
}
INTERVAL_P99 = "elastream_interval_latency_p99_seconds"  # the last interval's p99, when it had one
OBJECTIVE = {"elastream_objective_latency_seconds", "elastream_objective_met"}  # with an objective
SOURCE_BACKLOG = "elastream_source_backlog_events"  # per source; their sum: source_backlog
EVENT_LATENCY = "elastream_event_latency_seconds"  # one observation per sink event
OPERATOR_COUNTERS = {  # family -> summary.json's per-operator field
    "elastream_operator_events_received_total": "received",
    "elastream_operator_events_processed_total": "processed",
    "elastream_operator_events_emitted_total": "emitted",
    "elastream_operator_events_failed_total": "failed",
}
OPERATOR_DROPPED = "elastream_operator_events_dropped_total"  # reason: summary's dropped_REASON
OPERATOR_GAUGES = {  # family -> its value from the operator's last row of timeseries.csv (and td)
    "elastream_operator_queue_events": lambda row, td: int(row["queue"]),
    "elastream_operator_replicas_active": lambda row, td: int(row["replicas"]),
    "elastream_operator_replicas_pool": lambda row, td: int(row["max_replicas"]),
    "elastream_operator_replicas_target": lambda row, td: int(row["target"]),
    # PSPS Eq. 5 over the active replicas: events served × et / (r × td), a failed event or one
    # dropped for its age served too
    "elastream_operator_busy_ratio": lambda row, td: busy(row, td),
}


def served(row: dict[str, str]) -> int:
    """The events an operator's replicas served in an interval (μ_i(t) of Eq. 5)."""
    return sum(int(row[column]) for column in ("processed", "failed", "dropped_timeout"))


def busy(row: dict[str, str], td: float) -> float:
    """Eq. 5's mean utilization from a series row: 0 when nothing was served (no service time)."""
    events = served(row)
    if events == 0:
        return 0.0
    return events * float(row["service_ms"]) / 1000 / (int(row["replicas"]) * td)


OPERATOR_HISTOGRAMS = {"elastream_operator_service_time_seconds": "service_ms"}  # per interval
FAMILIES = {
    *RUN_COUNTERS, *SUMMARY_COUNTERS, *RUN_GAUGES, SOURCE_BACKLOG, INTERVAL_P99, EVENT_LATENCY,
    *OPERATOR_COUNTERS, OPERATOR_DROPPED, *OPERATOR_GAUGES, *OPERATOR_HISTOGRAMS,
}  # fmt: skip
HISTOGRAM_SAMPLES = ("_bucket", "_count", "_sum")


def families(sample: Sample) -> set[str]:
    """The families of a scrape, named as FAMILIES names them (a counter by its _total sample,
    a histogram by its family name; the _created samples left out)."""
    names = {name for name, _ in sample if not name.endswith("_created")}
    histograms = {n.rsplit("_", 1)[0] for n in names if n.endswith(HISTOGRAM_SAMPLES)}
    return histograms | {n for n in names if not n.endswith(HISTOGRAM_SAMPLES)}


def assert_histogram(sample: Sample, name: str, seconds: list[float], **labels: str) -> None:
    """A histogram of `seconds`, one observation each: its count, sum and every bucket."""
    assert value(sample, f"{name}_count", **labels) == len(seconds), name
    assert value(sample, f"{name}_sum", **labels) == pytest.approx(sum(seconds), rel=1e-9), name
    buckets = [dict(k)["le"] for n, k in sample if n == f"{name}_bucket" and _has(k, labels)]
    assert len(buckets) > 1, name
    for le in buckets:
        got = value(sample, f"{name}_bucket", **labels, le=le)
        assert got == sum(1 for s in seconds if s <= float(le)), (name, le)


def _has(key: tuple[tuple[str, str], ...], labels: dict[str, str]) -> bool:
    return labels.items() <= dict(key).items()


def total(sample: Sample, name: str, **labels: str) -> float:
    """The sum of `name` over every series whose labels include `labels` (e.g. every source's
    events of one pipeline)."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in sample.items() if n == name and wanted <= set(ls))


def assert_metrics_match_outputs(sample: Sample, out: Path, pipeline: str) -> None:
    """A scrape at the run's end against summary.json, intervals.csv and timeseries.csv: every
    family of FAMILIES, counters exact, the last interval's gauges, each histogram's
    observations recounted from the files."""
    summary = json.loads((out / "summary.json").read_text())
    intervals = list(csv.DictReader((out / "intervals.csv").open()))
    series = list(csv.DictReader((out / "timeseries.csv").open()))
    td = {row["t"]: float(row["interval_s"]) for row in intervals}
    # samples only for a source outside the engine (files, redis), or a run with an objective
    external = {SOURCE_BACKLOG, INTERVAL_P99, *OBJECTIVE}
    assert families(sample) | external == FAMILIES | external
    run = {"pipeline": pipeline}
    for metric, column in RUN_COUNTERS.items():
        assert total(sample, metric, **run) == sum(int(r[column]) for r in intervals), metric
    for metric, field in SUMMARY_COUNTERS.items():
        assert value(sample, metric, **run) == summary[field], metric
    for metric, expected in RUN_GAUGES.items():
        assert total(sample, metric, **run) == pytest.approx(expected(intervals[-1])), metric
    backlogs = [v for (n, _), v in sample.items() if n == SOURCE_BACKLOG]
    assert sum(backlogs) == int(intervals[-1]["source_backlog"])
    counted = total(sample, f"{EVENT_LATENCY}_count", **run)
    assert counted == sum(int(r["sink_events"]) for r in intervals)
    judged = [r for r in intervals if r["latency_ms_p99"]]
    if judged:
        p99 = value(sample, INTERVAL_P99, **run)
        assert p99 == pytest.approx(float(judged[-1]["latency_ms_p99"]) / 1000)
    for name, row in summary["operators"].items():
        op = {"pipeline": pipeline, "operator": name}
        for metric, field in OPERATOR_COUNTERS.items():
            assert value(sample, metric, **op) == row[field], (metric, name)
        for reason in ("timeout", "overflow"):
            got = value(sample, OPERATOR_DROPPED, **op, reason=reason)
            assert got == row[f"dropped_{reason}"], (name, reason)
        rows = [r for r in series if r["operator"] == name]
        for metric, expected in OPERATOR_GAUGES.items():
            got = value(sample, metric, **op)
            assert got == pytest.approx(expected(rows[-1], td[rows[-1]["t"]])), (metric, name)
        for metric, column in OPERATOR_HISTOGRAMS.items():
            seconds = [float(r[column]) / 1000 for r in rows if r[column]]
            assert_histogram(sample, metric, seconds, **op)
