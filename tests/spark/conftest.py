"""One SparkSession for the Spark tests that run in this process (the CLI's runs start their own
JVM): started once, with a task slot for every replica of the largest pool among them, each run
adopting it as a caller's session (`SparkEngine(..., spark=...)`, docs/python.md) and leaving it
running; stopped at the end."""

from __future__ import annotations

import pytest

from elastream.runtime.spark.logs import jvm_log_conf
from elastream.runtime.spark.session import spark_session

SLOTS = 16  # ≥ the largest pool of the in-process tests' pipelines (filter3: 12)


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    folder = tmp_path_factory.mktemp("spark-session")
    conf = jvm_log_conf(folder, {})  # Spark's log lines to folder/spark.log
    session = spark_session(f"local[{SLOTS},4]", conf=conf, jvm_stderr=folder / "spark.log")
    yield session
    session.stop()
