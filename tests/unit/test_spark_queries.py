"""Waiting for a query to make its sources (runtime/spark/queries.py `await_sources`), which the
runtime does before it starts the external sources beside the query's first batch. A stand-in
query with Spark's status messages; every Spark test's run goes through the real one."""

import pytest
from support.builders import linear_pipeline

from elastream.config import RunConfig
from elastream.model.pipeline import pipeline_from_dict
from elastream.runtime.spark.queries import Queries, RuntimeFailure


class StatusQuery:
    """A query whose status message follows `messages`, one per read (the last one stays)."""

    def __init__(self, *messages: str) -> None:
        self.messages = list(messages)
        self.reads = 0

    @property
    def status(self) -> dict:
        self.reads += 1
        return {"message": self.messages[min(self.reads, len(self.messages)) - 1]}


def queries_with(query: StatusQuery, tmp_path) -> Queries:
    pipeline = pipeline_from_dict(linear_pipeline(n_ops=1, pool=(1, 2)))
    queries = Queries(pipeline, RunConfig(), str(tmp_path / "q.db"), tmp_path)
    queries.running["_pipeline"] = query
    return queries


def test_it_returns_once_the_sources_are_made(tmp_path):
    # Spark's messages while a query starts, then its first batch's
    query = StatusQuery(
        "Initializing StreamExecution", "Initializing sources", "Getting offsets from x"
    )
    queries_with(query, tmp_path).await_sources("_pipeline", lambda: None)
    assert query.reads == 3


def test_a_failure_while_it_waits_is_raised(tmp_path):
    def failed() -> None:
        raise RuntimeFailure("the pipeline's query failed: boom")

    query = StatusQuery("Initializing sources")
    with pytest.raises(RuntimeFailure, match="boom"):
        queries_with(query, tmp_path).await_sources("_pipeline", failed)


def test_a_query_that_never_makes_its_sources_is_named(tmp_path):
    query = StatusQuery("Initializing sources")
    with pytest.raises(RuntimeFailure, match="the pipeline's query did not make its sources"):
        queries_with(query, tmp_path).await_sources("_pipeline", lambda: None, timeout_s=0.3)
    assert query.reads >= 2
