"""A `spark` source's backlog on a real Spark, from its query's progress: a Spark source that
caps each micro-batch (as Kafka's maxOffsetsPerTrigger does) and reports its latest offset (as
Kafka does) falls behind; the run's policy sees that backlog and psps scales the first operator
on it, each decision equal to what the PSPS equations give from the run's own figures. Spark's
`rate` source, which reports no latest offset of its own, gives no backlog."""

from __future__ import annotations

import csv
import math
import time
from pathlib import Path
from typing import Any

import pytest

import elastream

pytestmark = [pytest.mark.spark]
PASS = "elastream.examples.synthetic:passthrough"
RATE = 400  # rows per second the capped source's "topic" receives
CAP = 40  # rows per micro-batch it lets through: at most 80/s at 2 batches a second
SERVICE_MS = 5.0


def capped_counter(spark: Any) -> Any:
    """A `spark` source: a Python data source whose offsets count rows that arrive at RATE per
    second from its start; each micro-batch takes at most CAP (admission control), and it
    reports the latest offset, so the rows beyond the cap wait outside Spark, counted."""
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
    from pyspark.sql.streaming.datasource import ReadMaxRows

    class Reader(DataSourceStreamReader):
        def __init__(self, start: float) -> None:
            self.start = start

        def latest(self) -> int:
            return int((time.time() - self.start) * RATE)

        def initialOffset(self) -> dict:
            return {"offset": 0}

        def getDefaultReadLimit(self) -> Any:
            return ReadMaxRows(CAP)

        def latestOffset(self, start: dict, limit: Any) -> dict:
            cap = limit.max_rows if isinstance(limit, ReadMaxRows) else 10**12
            return {"offset": min(self.latest(), start["offset"] + cap)}

        def reportLatestOffset(self) -> dict:
            return {"offset": self.latest()}

        def partitions(self, start: dict, end: dict) -> list:
            return [InputPartition((start["offset"], end["offset"]))]

        def read(self, partition: Any) -> Any:
            for i in range(*partition.value):
                yield (i,)

    class CappedCounter(DataSource):
        @classmethod
        def name(cls) -> str:
            return "elastream_test_capped_counter"

        def schema(self) -> str:
            return "i long"

        def streamReader(self, schema: Any) -> Any:
            return Reader(float(self.options["start"]))

    spark.dataSource.register(CappedCounter)
    return spark.readStream.format(CappedCounter.name()).option("start", str(time.time())).load()


def rate_source(spark: Any) -> Any:
    """A `spark` source: Spark's own rate source."""
    return spark.readStream.format("rate").option("rowsPerSecond", 40).load()


def run(tmp: Path, source: str) -> tuple[list[dict], list[dict]]:
    """A 30 s run of source -> op -> sink on psps; intervals.csv and timeseries.csv."""
    b = elastream.PipelineBuilder(f"backlog-{source}")
    b.source("src", kind="spark", function=f"{__name__}:{source}")
    b.operator("op", PASS, inputs="src", replicas=(1, 4), service_time_ms=SERVICE_MS)
    b.sink("out", inputs="op")
    out = tmp / source
    elastream.run(b, duration=30, interval_s=2, drain_s=30, out=out, metrics={"port": 0})
    read = lambda name: list(csv.DictReader((out / name).open()))  # noqa: E731
    return read("intervals.csv"), read("timeseries.csv")


@pytest.mark.alone
def test_a_spark_sources_backlog_from_its_progress_scales_psps(tmp_path):
    intervals, series = run(tmp_path, "capped_counter")
    backlog = [int(r["source_backlog"]) for r in intervals]
    # the source falls behind: RATE a second arrive, at most 2 × CAP a second are taken
    assert max(backlog) > 1000, backlog
    decided = 0
    for interval, row in zip(intervals, series, strict=True):
        if not row["service_ms"] or not row["target"]:
            continue
        # PSPS Eq. 1-4 with one source and one operator (θ = 1): the events expected next
        # interval are the source's input and backlog plus the queue; r = ⌈λ̂ · et / td⌉
        expected = int(interval["input"]) + int(interval["source_backlog"]) + int(row["queue"])
        busy_s = expected * float(row["service_ms"]) / 1000
        wanted = math.ceil(busy_s / float(interval["interval_s"]) - 1e-9)
        assert int(row["target"]) == min(4, max(1, wanted)), (interval, row)
        decided += 1
    assert decided > 5
    # without the backlog the input alone (≤ 2 × CAP a second × 5 ms) asks for one replica:
    # the scaling is the backlog's
    assert max(int(r["target"]) for r in series if r["target"]) >= 2
    assert all(int(r["input"]) * SERVICE_MS / 1000 <= float(r["interval_s"]) for r in intervals)


def test_the_rate_source_reports_no_backlog(tmp_path):
    intervals, _ = run(tmp_path, "rate_source")
    assert sum(int(r["input"]) for r in intervals) > 0
    assert {int(r["source_backlog"]) for r in intervals} == {0}
