"""A `spark` source's backlog from its query's progress (runtime/spark/backlog.py), on progress
objects written in the shape Spark documents (the Structured Streaming guide's "Reading
Metrics Interactively" and SourceProgress): the expected backlogs are counted from the offsets
by the test; the same through PySpark's own StreamingQueryProgress; and into the policies."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest
from pyspark.sql.streaming.listener import StreamingQueryProgress
from support.builders import snapshot, stats

from elastream.control.controller import Controller
from elastream.runtime.spark.backlog import query_backlog, source_backlog

END = {"events": {"0": 534, "1": 134, "2": 0, "3": 21}}
LATEST = {"events": {"0": 934, "1": 184, "2": 0, "3": 121}}
BEHIND = {p: LATEST["events"][p] - END["events"][p] for p in END["events"]}  # 400, 50, 0, 100


def kafka_source(metrics: dict[str, str] | None = None) -> dict:
    """A Kafka source's entry of `sources` in a query progress (Spark 4)."""
    return {
        "description": "KafkaV2[Subscribe[events]]",
        "startOffset": {"events": {"0": 434, "1": 84, "2": 0, "3": 1}},
        "endOffset": END,
        "latestOffset": LATEST,
        "numInputRows": 170,
        "inputRowsPerSecond": 34.0,
        "processedRowsPerSecond": 85.0,
        "metrics": metrics if metrics is not None else kafka_metrics(),
    }


def kafka_metrics() -> dict[str, str]:
    """What the Kafka source reports in `metrics`: per-partition figures, as text."""
    behind = list(BEHIND.values())
    return {
        "avgOffsetsBehindLatest": str(sum(behind) / len(behind)),
        "maxOffsetsBehindLatest": str(max(behind)),
        "minOffsetsBehindLatest": str(min(behind)),
    }


def progress(*sources: dict) -> dict:
    """A whole query progress as Spark writes it (StreamingQueryProgress.json)."""
    return {
        "id": "ce011fdc-8762-4dcb-84eb-a77333e28109",
        "runId": "88e2ff94-ede0-45a8-b687-6316fbef529a",
        "name": "elastream-source-events",
        "timestamp": "2026-11-28T18:45:24.873Z",
        "batchId": 7,
        "batchDuration": 2000,
        "numInputRows": sum(s["numInputRows"] for s in sources),
        "inputRowsPerSecond": 34.0,
        "processedRowsPerSecond": 85.0,
        "durationMs": {"addBatch": 1800, "latestOffset": 12, "triggerExecution": 2000},
        "eventTime": {},
        "stateOperators": [],
        "sources": list(sources),
        "sink": {"description": "ForeachBatchSink", "numOutputRows": -1},
        "observedMetrics": {},
    }


def rate_source(end: int, latest: int | None) -> dict:
    """A source whose offsets are plain numbers (the rate source's are)."""
    return {
        "description": "RateStreamV2[rowsPerSecond=200, rampUpTimeSeconds=0, numPartitions=2",
        "startOffset": end - 5,
        "endOffset": end,
        "latestOffset": latest,
        "numInputRows": 1000,
        "inputRowsPerSecond": 200.0,
        "processedRowsPerSecond": 500.0,
        "metrics": {},
    }


def test_kafka_the_offsets_behind_the_latest_summed_over_the_partitions():
    assert query_backlog(progress(kafka_source())) == sum(BEHIND.values()) == 550
    # from the metrics alone (average × partitions), when the offsets cannot be compared
    only_metrics = {**kafka_source(), "latestOffset": None}
    assert source_backlog(only_metrics) == 550
    # a source reporting the total
    assert source_backlog({**kafka_source({"offsetsBehindLatest": "321"})}) == 321
    # from the offsets alone, partition by partition, when there are no metrics
    assert source_backlog(kafka_source({})) == 550


def test_number_offsets_give_their_difference_and_unknown_ones_none():
    assert query_backlog(progress(rate_source(120, 150))) == 30
    assert query_backlog(progress(rate_source(120, 120))) == 0
    assert query_backlog(progress(rate_source(120, None))) is None  # the source tells nothing
    assert query_backlog(None) is None and query_backlog(progress()) is None
    different = {**kafka_source({}), "latestOffset": {"events": {"0": 934}}}  # not comparable
    assert source_backlog(different) is None
    text = {**kafka_source({}), "endOffset": "not json"}
    assert source_backlog(text) is None


def test_several_sources_of_one_query_add_up():
    both = progress(kafka_source(), rate_source(10, 14))
    assert query_backlog(both) == 550 + 4
    assert query_backlog(progress(kafka_source(), rate_source(10, None))) == 550


def test_pysparks_own_progress_object_reads_the_same():
    """StreamingQuery.lastProgress is a StreamingQueryProgress (a dict whose offsets are JSON
    text): the same backlog as from the JSON."""
    recorded = progress(kafka_source(), rate_source(10, 14))
    parsed = StreamingQueryProgress.fromJson(copy.deepcopy(recorded))
    assert json.loads(parsed["sources"][0]["endOffset"]) == END  # offsets as text
    assert query_backlog(parsed) == query_backlog(recorded) == 554


@pytest.mark.parametrize("policy", ["psps", "lagaware"])
def test_the_backlog_reaches_the_policies_like_a_redis_sources_lag(policy):
    """What `Ingest.backlog` returns for a spark source lands in the snapshot's source_backlog,
    which the policies count as input: the same snapshot with the backlog asks for more."""
    op = stats("op", pool=(1, 8), received=50, frm={"kafka": 50}, processed=50, service_time_s=0.05)
    idle = snapshot(op, t=5.0, interval_s=5.0, sources={"kafka": 50})
    behind_by = query_backlog(progress(kafka_source()))
    lagging = replace(idle, source_backlog=(("kafka", behind_by),))
    controller = Controller.build(policy)
    calm, _ = controller.decide(idle, controller.initial_state())
    behind, _ = controller.decide(lagging, controller.initial_state())
    assert behind.as_dict()["op"] > calm.as_dict()["op"]
    # psps: (50 sent + 550 behind) events in 5 s at 50 ms each need ⌈600 × 0.05 / 5⌉ = 6
    if policy == "psps":
        assert behind.as_dict()["op"] == 6
