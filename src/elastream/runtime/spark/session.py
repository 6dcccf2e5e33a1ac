"""Start (or reuse) the local SparkSession the runtime needs, quietly, with our data source."""

from __future__ import annotations

import logging
import os
import warnings

from pyspark.sql import SparkSession

from elastream.runtime.spark.source import QueueDataSource

_registered: set[int] = set()


def spark_session(master: str, app_name: str = "elastream") -> SparkSession:
    """A session with FAIR scheduling (one pool per operator query), Python worker reuse and the
    `elastream_queue` source registered. An existing active session is reused as it is."""
    warnings.filterwarnings("ignore", category=FutureWarning)
    logging.getLogger("py4j").setLevel(logging.ERROR)
    os.environ.setdefault("PYSPARK_PYTHON", _python())
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", _python())
    spark = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.scheduler.mode", "FAIR")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.metricsEnabled", "false")
        .config("spark.sql.streaming.numRecentProgressUpdates", "2000")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    if id(spark) not in _registered:
        spark.dataSource.register(QueueDataSource)
        _registered.add(id(spark))
    return spark


def _python() -> str:
    import sys

    return sys.executable
