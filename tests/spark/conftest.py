"""One SparkSession for the Spark tests that run in this process (the CLI's runs start their own
JVM): started when first asked for, with a task slot for every replica of the largest pool among
them, each run adopting it as a caller's session (`SparkEngine(..., spark=...)`, docs/python.md)
and leaving it running; stopped at the end. An in-process run that made its own session (one
not given `spark`) stops the active one when it ends, so a stopped session is started again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from elastream.runtime.spark.logs import jvm_log_conf
from elastream.runtime.spark.session import spark_session

SLOTS = 16  # ≥ the largest pool of the in-process tests' pipelines (filter3: 12)

# The longest Spark tests, their call's seconds in a fresh-clone CI run (29 Nov): run first. An
# xdist worker queues up to three tests ahead, so a long test collected last keeps one worker
# busy after the other has run out of work; longest first leaves the short ones for the end.
# Any test may come first in its worker, so an in-process test reads through the `spark`
# fixture (the shared session) and never starts a session of its own, which the fixture would
# then adopt as it is (one slot, or workers on another Python).
LONGEST = {
    "test_every_case_runs_and_delivers_every_row_once": 158,
    "test_a_killed_helper_then_a_killed_run_lose_nothing_and_deliver_once": 147,
    "test_a_killed_run_on_redis_resumes_exactly_once": 123,
    "test_redis_in_redis_out_exactly_once_across_kill_resume_and_server_restart": 116,
    "test_overlapping_faults_lose_nothing_duplicate_nothing_and_keep_state_exact": 114,
    "test_a_keyed_count_rescales_live_and_counts_every_key_exactly": 107,
    "test_sigterm_stops_an_unbounded_run_gracefully_and_resume_delivers_the_rest": 95,
    "test_a_second_sigint_stops_at_once_and_resume_completes_the_run": 89,
    "test_replicas_change_live_and_a_redis_restart_mid_run_loses_nothing": 80,
    "test_a_killed_keyed_count_resumes_and_counts_every_key_exactly": 80,
    "test_a_killed_files_run_resumes_with_every_row_once": 77,
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest tests first (`LONGEST`), every other in its collected order."""
    items.sort(key=lambda item: -LONGEST.get(getattr(item, "originalname", item.name), 0))


def _start(folder: Path) -> Any:
    conf = jvm_log_conf(folder, {})  # Spark's log lines to folder/spark.log
    return spark_session(f"local[{SLOTS},4]", conf=conf, jvm_stderr=folder / "spark.log")


def _stopped(session: Any) -> bool:
    context = session.sparkContext._jsc
    return context is None or context.sc().isStopped()


@pytest.fixture(scope="session")
def _shared(tmp_path_factory):
    held: dict[str, Any] = {"folder": tmp_path_factory.mktemp("spark-session")}
    yield held
    if "session" in held and not _stopped(held["session"]):
        held["session"].stop()


@pytest.fixture
def spark(_shared):
    session = _shared.get("session")
    if session is None or _stopped(session):
        _shared["session"] = session = _start(_shared["folder"])
    return session
