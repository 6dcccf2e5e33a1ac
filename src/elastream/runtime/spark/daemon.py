"""Spark's Python daemon with the task code imported once, before it forks the Python workers.

Spark starts one daemon per executor (`spark.python.daemon.module`) and forks every Python worker
from it. PySpark's own daemon imports nothing a task needs, so each new worker imported pyarrow,
pandas and elastream's task code itself: about 1 s of CPU per worker here, 12 workers for a pool of
12 replicas, the largest part of a run's start. Forked from this daemon a worker shares those
modules' pages with it (copy on write) and starts at once, so a replica activated mid-spike has its
worker at once too. PySpark's worker loop (`pyspark.worker`, which imports pyspark.sql) and the
data sources' modules, which each task's pickled reader names, are imported here too: about 0.1 s
of CPU less for each new worker, measured here. PySpark imports the task code after the fork
because an import may start threads that a fork does not copy; the two threads these imports start
(OpenBLAS' and jemalloc's) leave numpy, pandas and pyarrow's compute working in a forked worker
(tests/spark/test_spark_daemon.py). A user's own modules are imported after the fork, as before.

The daemon's objects are then frozen out of Python's cyclic garbage collector (`gc.freeze`):
PySpark's daemon runs a full `gc.collect()` in a reused worker after every task, and with these
modules loaded each pass walked about 90,000 objects (35-45 ms here), most of them the imports'
— 0.8 of the Python workers' CPU in a vectorized run's profile (results.md, 30 Nov). Frozen,
they are never walked again (nor written to, so their pages stay shared with the daemon); what a
task itself makes is collected as before.
"""

from __future__ import annotations

import gc

import pandas  # noqa: F401  (a vectorized operator may return a frame; PySpark's Arrow paths)
import pyarrow  # noqa: F401
import pyspark.worker  # noqa: F401  (the worker's main loop, with pyspark.sql, which it imports)
from pyspark.daemon import manager

# the data sources' modules: each task's pickled reader names one of them
import elastream.runtime.spark.pipeline_source
import elastream.runtime.spark.source
import elastream.runtime.spark.task  # noqa: F401


def freeze_imports() -> int:
    """Free the imports' garbage, then freeze every object left; returns how many are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


if __name__ == "__main__":
    freeze_imports()
    manager()
