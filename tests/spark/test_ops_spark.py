"""One short Spark run as an operator runs it: queues in a redis-server with `requirepass` (the
password in the URL), /metrics scraped every second while it goes; at the end the last scrape
equals summary.json, intervals.csv and timeseries.csv, no output file holds the password, and
the console holds no Java stack trace and no Spark WARN line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.paths import PIPELINES
from support.redis_server import local_redis
from support.scrape import Scraper, assert_metrics_match_outputs, value

from elastream.runtime.queues.redis_server import free_port

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


def test_a_spark_run_scraped_with_a_redis_password(tmp_path):
    redis = local_redis(tmp_path / "redis", password=PASSWORD)
    redis.start()
    port, out = free_port(), tmp_path / "runs" / "ops"
    settings = tmp_path / "run.yaml"
    settings.write_text(yaml.safe_dump({"metrics": {"port": port, "linger_s": 3.0}}))
    cmd = [sys.executable, "-m", "elastream.cli", "run", str(PIPELINE),
           "--trace", "constant:rate=20,duration=16", "--interval", "2", "--drain", "60",
           "--event-timeout", "none", "--out", str(out), "--config", str(settings),
           "--queues", redis.url + "?prefix=ops"]  # fmt: skip
    env = {**os.environ, "ELASTREAM_METRICS_TOKEN": TOKEN}
    try:
        with Scraper(f"http://127.0.0.1:{port}/metrics", every_s=1.0, token=TOKEN) as scraper:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    finally:
        redis.stop()
    console = run.stdout + run.stderr
    assert run.returncode == 0, console
    run_label = {"pipeline": "filter3"}
    during = [s for s in scraper.scrapes if value(s, "elastream_run_finished", **run_label) == 0]
    assert len(during) >= 3, f"{len(during)} scrapes during the run"
    key = ("elastream_source_events_total", (("pipeline", "filter3"),))
    seen = [s.get(key, 0.0) for s in during]  # absent before the first interval
    assert seen == sorted(seen) and seen[-1] > seen[0]  # scraped while it went
    assert_metrics_match_outputs(scraper.scrapes[-1], out, "filter3")

    assert files_holding(tmp_path / "runs", PASSWORD) == []  # outputs, checkpoints, history
    assert PASSWORD not in console and TOKEN not in console
    assert "redis://:***@127.0.0.1" in (out / "summary.json").read_text()
    assert not re.search(r"^\s+at [\w.$]+\(", console, re.MULTILINE), console  # Java frames
    assert not re.search(r"\bWARN [\w.$]+:", console), console  # Spark's log lines (in spark.log)
    assert "Exception" not in console, console
