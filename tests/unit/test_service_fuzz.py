"""Property-based fuzz of the service's OpenAPI schema (schemathesis): no request gives a 500."""

from __future__ import annotations

import numpy as np
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from elastream.history import HistoryStore
from elastream.service.app import create_app
from elastream.service.operations import Modeller
from elastream.service.server import BackgroundServer
from reproductions.caladrius.synthetic import wordcount_history


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    store = HistoryStore(tmp_path_factory.mktemp("fuzz") / "history.db")
    rates = np.linspace(20, 600, 30)
    store.record(wordcount_history("r1", rates, {"spout": 1, "splitter": 3, "counter": 2}))
    with BackgroundServer(create_app(Modeller(store))) as srv:
        yield srv
    store.close()


def operations(url: str) -> list:
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    return [result.ok() for result in schema.get_all_operations()]


def test_every_operation_answers_without_a_server_error(server):
    ops = operations(server.url)
    assert {op.path for op in ops} >= {"/models", "/forecasts", "/predictions", "/jobs/{job_id}"}
    sent: list[int] = []
    for op in ops:

        @given(case=op.as_strategy())
        @settings(
            max_examples=80,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def check(case) -> None:
            response = case.call_and_validate(base_url=server.url, checks=[not_a_server_error])
            sent.append(response.status_code)

        check()
    assert len(sent) >= 50  # the fuzz really sent requests
    assert 202 in sent and 422 in sent  # and reached both valid and invalid bodies
