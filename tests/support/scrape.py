"""A Prometheus-like scraper for the tests: GETs /metrics every `every_s` on a thread, keeps every
scrape parsed into {(name, labels): value}."""

from __future__ import annotations

import csv
import json
import threading
import urllib.error
import urllib.request
from pathlib import Path

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


def total(sample: Sample, name: str, **labels: str) -> float:
    """The sum of `name` over every series whose labels include `labels` (e.g. every source's
    events of one pipeline)."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in sample.items() if n == name and wanted <= set(ls))


def assert_metrics_match_outputs(sample: Sample, out: Path, pipeline: str) -> None:
    """The last scrape against summary.json, intervals.csv and timeseries.csv: counts exact."""
    summary = json.loads((out / "summary.json").read_text())
    intervals = list(csv.DictReader((out / "intervals.csv").open()))
    series = list(csv.DictReader((out / "timeseries.csv").open()))
    run = {"pipeline": pipeline}
    assert value(sample, "elastream_run_finished", **run) == 1
    for column, metric in (
        ("input", "elastream_source_events_total"),
        ("completed", "elastream_events_completed_total"),
        ("sink_events", "elastream_sink_events_total"),
    ):
        assert total(sample, metric, **run) == sum(int(r[column]) for r in intervals), metric
    counted = total(sample, "elastream_event_latency_seconds_count", **run)
    assert counted == sum(int(r["sink_events"]) for r in intervals)
    assert value(sample, "elastream_intervals_total", **run) == summary["intervals"]
    assert value(sample, "elastream_reconfigurations_total", **run) == summary["reconfigurations"]
    assert value(sample, "elastream_events_failed_total", **run) == summary["events_failed"]
    restart_drops = value(sample, "elastream_events_dropped_restart_total", **run)
    assert restart_drops == summary["events_dropped_restart"]
    assert value(sample, "elastream_query_restarts_total", **run) == summary["query_restarts"]
    assert value(sample, "elastream_hosts_leased_total", **run) == summary["hosts_leased"]
    for name, row in summary["operators"].items():
        op = {"pipeline": pipeline, "operator": name}
        for field in ("received", "processed", "emitted", "failed"):
            assert value(sample, f"elastream_operator_events_{field}_total", **op) == row[field]
        for reason in ("timeout", "overflow"):
            got = value(sample, "elastream_operator_events_dropped_total", **op, reason=reason)
            assert got == row[f"dropped_{reason}"], (name, reason)
        last = [r for r in series if r["operator"] == name][-1]
        assert value(sample, "elastream_operator_queue_events", **op) == int(last["queue"])
        assert value(sample, "elastream_operator_replicas_active", **op) == int(last["replicas"])
        assert value(sample, "elastream_operator_replicas_pool", **op) == row["max_replicas"]
        assert value(sample, "elastream_operator_replicas_target", **op) == int(last["target"])
