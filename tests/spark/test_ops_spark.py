"""One short Spark run as an operator runs it: queues in a redis-server with `requirepass` (the
password in the URL), an operator failing on a tenth of its events, /metrics and the Spark UI's
PrometheusServlet scraped every second while it goes; at the end the last scrape equals
summary.json, intervals.csv and timeseries.csv, no output file holds the password, and the
console holds no Java stack trace, no Spark WARN line and none of the JVM's start-up lines; and a
driver JVM that cannot start says why on the console."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from support.paths import PIPELINES
from support.redis_server import local_redis
from support.scrape import Scraper, assert_metrics_match_outputs, get, total, value

from reproductions.harness.redis_server import free_port

pytestmark = pytest.mark.spark
PIPELINE = PIPELINES / "filter3.yaml"
PASSWORD = "pw-spark-8c1d2e3f"
TOKEN = "tok-spark-4a5b6c7d"


def files_holding(root: Path, secret: str) -> list[Path]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and secret.encode() in path.read_bytes():
            found.append(path)
    return found


def listening_addresses(port: int) -> set[str]:
    """The addresses a socket listens on at `port` (from /proc/net/tcp and tcp6; a JVM listens
    on IPv6 sockets, IPv4 addresses mapped into them)."""
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state != "0A" or int(hex_port, 16) != port:  # 0A: LISTEN
                continue
            words = (bytes.fromhex(address[k : k + 8])[::-1] for k in range(0, len(address), 8))
            raw = b"".join(words)
            ip = ipaddress.ip_address(raw)
            mapped = getattr(ip, "ipv4_mapped", None)
            found.add(str(mapped or ip))
    return found


class SparkUIScraper:
    """GETs the Spark UI's PrometheusServlet every `every_s` on a thread; keeps the bodies and
    the addresses the UI listened on."""

    def __init__(self, port: int, every_s: float = 1.0) -> None:
        self.port, self.every_s = port, every_s
        self.bodies: list[str] = []
        self.executors: list[str] = []
        self.bound: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        base = f"http://127.0.0.1:{self.port}"
        while not self._stop.wait(self.every_s):
            try:
                status, body = get(f"{base}/metrics/prometheus", timeout=2.0)
                _, executors = get(f"{base}/metrics/executors/prometheus", timeout=2.0)
            except OSError:
                continue  # not up yet, or gone
            if status == 200:
                self.bodies.append(body)
                self.executors.append(executors)
                self.bound |= listening_addresses(self.port)

    def __enter__(self) -> SparkUIScraper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def test_a_spark_run_scraped_with_a_redis_password(tmp_path):
    redis = local_redis(tmp_path / "redis", password=PASSWORD)
    redis.start()
    port, ui_port, out = free_port(), free_port(), tmp_path / "runs" / "ops"
    settings = tmp_path / "run.yaml"
    run_settings = {"metrics": {"port": port, "linger_s": 3.0}, "spark": {"ui_port": ui_port}}
    settings.write_text(yaml.safe_dump(run_settings))
    pipeline = yaml.safe_load(PIPELINE.read_text())
    pipeline["operators"][0]["function"] = "elastream.examples.synthetic:fail_some"
    pipeline_file = tmp_path / "filter3.yaml"
    pipeline_file.write_text(yaml.safe_dump(pipeline))
    cmd = [sys.executable, "-m", "elastream.cli", "run", str(pipeline_file),
           "--trace", "constant:rate=20,duration=16", "--interval-s", "2", "--drain-s", "60",
           "--event-timeout-s", "none", "--out", str(out), "--config", str(settings),
           "--queues", redis.url + "?prefix=ops"]  # fmt: skip
    env = {**os.environ, "ELASTREAM_METRICS_TOKEN": TOKEN}
    try:
        with (
            Scraper(f"http://127.0.0.1:{port}/metrics", every_s=1.0, token=TOKEN) as scraper,
            SparkUIScraper(ui_port) as spark_ui,
        ):
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    finally:
        redis.stop()
    console = run.stdout + run.stderr
    assert run.returncode == 0, console
    run_label = {"pipeline": "filter3"}
    during = [s for s in scraper.scrapes if value(s, "elastream_run_finished", **run_label) == 0]
    assert len(during) >= 3, f"{len(during)} scrapes during the run"
    run_key = (("pipeline", "filter3"),)
    # every source's events, 0 before the first interval
    seen = [total(s, "elastream_source_events_total", **run_label) for s in during]
    assert seen == sorted(seen) and seen[-1] > seen[0]  # scraped while it went
    failed_key = ("elastream_operator_events_failed_total", (("operator", "ingest"), *run_key))
    assert any(s.get(failed_key, 0) > 0 for s in during)  # failures counted while it went
    assert_metrics_match_outputs(scraper.scrapes[-1], out, "filter3")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["events_failed"] == (summary["events_in"] + 6) // 10 > 0  # indexes ending in 3

    # Spark's UI was up on loopback only, its PrometheusServlet serving the driver's metrics
    # (the run's streaming query metrics among them) and every executor's.
    assert len(spark_ui.bodies) >= 3, f"{len(spark_ui.bodies)} Spark UI scrapes"
    assert spark_ui.bound == {"127.0.0.1"}, spark_ui.bound
    streaming = re.compile(r"_driver_.*streaming_elastream_")  # a query of the run's
    assert any(streaming.search(b) for b in spark_ui.bodies), spark_ui.bodies[-1][:3000]
    assert any('executor_id="driver"' in body for body in spark_ui.executors)
    ui_lines = [line for line in console.splitlines() if "Spark UI" in line]
    assert any(f"Spark UI: http://127.0.0.1:{ui_port} " in line for line in ui_lines), ui_lines

    assert files_holding(tmp_path / "runs", PASSWORD) == []  # outputs, checkpoints, history
    assert PASSWORD not in console and TOKEN not in console
    assert "redis://:***@127.0.0.1" in (out / "summary.json").read_text()
    # the console: the live lines and the summary, none of Spark's own lines
    assert re.search(r"^t=[\d.,]+ s  input ", run.stdout, re.MULTILINE), run.stdout  # live
    assert '"processed_ratio": ' in run.stdout  # the final summary
    assert "log4j" not in console, console
    # what the driver JVM prints before any logging is set up goes to spark.log, not here
    assert "Setting default log level" not in console, console
    assert "incubator" not in console, console
    spark_log = (out / "spark.log").read_text()
    assert "WARNING: Using incubator modules" in spark_log
    assert "Setting default log level" in spark_log
    assert not re.search(r"^\s+at [\w.$]+\(", console, re.MULTILINE), console  # Java frames
    assert not re.search(r"\bWARN [\w.$]+:", console), console  # Spark's log lines (in spark.log)
    assert "Exception" not in console, console


def test_a_driver_jvm_that_cannot_start_says_why_on_the_console(tmp_path):
    """The driver JVM's standard error goes to spark.log; when the JVM exits at its start (here
    a Java agent that does not exist: Spark's launcher adds -XX:+IgnoreUnrecognizedVMOptions,
    so an unknown -XX option would not do), the console still gets one line with what it said."""
    settings = tmp_path / "run.yaml"
    agent = tmp_path / "no-such-agent.jar"
    java_options = {"spark.driver.extraJavaOptions": f"-javaagent:{agent}"}
    settings.write_text(yaml.safe_dump({"spark": {"conf": java_options}, "metrics": {"port": 0}}))
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "elastream.cli", "run", str(PIPELINE), "--duration", "4",
           "--out", str(out), "--config", str(settings), "--quiet"]  # fmt: skip
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("elastream run: ")]
    assert len(errors) == 1, run.stderr  # one line says it
    assert errors[0].startswith("elastream run: error: the Spark driver JVM did not start")
    assert f"Error opening zip file or JAR manifest missing : {agent}" in errors[0], errors[0]
    assert "Error opening zip file" in (out / "spark.log").read_text()  # kept there too
