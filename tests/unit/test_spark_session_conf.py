"""The settings a Spark run starts its session with (runtime/spark/runtime.py `session_conf`):
with host leasing an executor gets exactly its slots' cores, unless the user's conf says."""

import json
import subprocess
import sys
from functools import partial

import pytest

from elastream.config import SparkSettings
from elastream.runtime.spark.queries import RuntimeFailure
from elastream.runtime.spark.runtime import session_conf

MASTER = "spark://127.0.0.1:7077"
DRIVER_SIDE = ("session", "class_cache", "cluster", "worker_python", "runtime", "driver")


def test_a_leased_host_is_an_executor_of_its_slots_cores():
    conf = session_conf(SparkSettings(master=MASTER, leasing={"slots": 3}))
    assert conf["spark.executor.cores"] == "3"
    assert conf["spark.decommission.enabled"] == "true"


def test_the_users_conf_wins_and_a_run_without_leasing_leaves_the_cores_to_spark():
    given = {"spark.executor.cores": "1"}
    assert (
        session_conf(SparkSettings(master=MASTER, leasing={"slots": 3}, conf=given))[
            "spark.executor.cores"
        ]
        == "1"
    )
    assert "spark.executor.cores" not in session_conf(SparkSettings(master=MASTER))


def test_leasing_without_a_standalone_master_is_refused_naming_the_option():
    with pytest.raises(RuntimeFailure, match="--spark-master spark://HOST:PORT"):
        session_conf(SparkSettings(master="local[2]", leasing={"slots": 2}))


def test_the_warm_up_task_a_worker_unpickles_imports_no_driver_module():
    """Each warmed Python worker unpickles `warm_python_workers`' task function and so imports
    its module: that module (and what it imports) must be task-side, not the driver's session
    code with its class cache, cluster and launcher modules."""
    from pyspark import cloudpickle

    from elastream.runtime.spark.task import hold_worker

    blob = cloudpickle.dumps(partial(hold_worker, 1.0))
    assert b"elastream.runtime.spark.task" in blob  # by reference: the worker imports it
    code = (
        "import json, pickle, sys; pickle.loads(sys.stdin.buffer.read()); "
        "print(json.dumps([m for m in sys.modules if m.startswith('elastream.runtime.spark.')]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], input=blob, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    loaded = set(json.loads(done.stdout))
    assert "elastream.runtime.spark.task" in loaded
    assert not loaded & {f"elastream.runtime.spark.{m}" for m in DRIVER_SIDE}, loaded
