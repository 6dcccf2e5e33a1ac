"""The settings a Spark run starts its session with (runtime/spark/runtime.py `session_conf`):
with host leasing an executor gets exactly its slots' cores, unless the user's conf says."""

import pytest

from elastream.config import SparkSettings
from elastream.runtime.spark.queries import RuntimeFailure
from elastream.runtime.spark.runtime import session_conf

MASTER = "spark://127.0.0.1:7077"


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
