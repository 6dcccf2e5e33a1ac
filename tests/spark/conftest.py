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

# An in-process test reads through the `spark` fixture (the shared session) and never starts a
# session of its own: whichever test comes first in a worker, the fixture would adopt that one
# as it is (one slot, or Python workers on another interpreter).


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
