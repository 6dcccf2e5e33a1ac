"""The driver's Spark session for a run: the caller's, or one started here (local mode sized to
the replica pools, or a standalone master with its shared secret), and where its UI is."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from py4j.protocol import Py4JJavaError
from pyspark import SparkContext

from elastream.base.auth import is_loopback
from elastream.config import RunConfig
from elastream.config.files import app_folders
from elastream.model.pipeline import Pipeline
from elastream.runtime.spark.cluster import DEFAULT_STATE, ClusterError, ClusterState
from elastream.runtime.spark.logs import LOG_FILE
from elastream.runtime.spark.pyfiles import app_archive
from elastream.runtime.spark.queries import RuntimeFailure
from elastream.runtime.spark.session import (
    EXECUTORS_PROMETHEUS_PATH,
    PROMETHEUS_PATH,
    adopt_session,
    launched_by_spark_submit,
    spark_session,
)

# what the driver's start raises when Spark stopped its SparkContext while it started (a
# standalone master that gave the driver up): the session's constructor finds the context
# stopped; or, when Spark gives up earlier, the context's own start finds the stopped context's
# environment gone, or its scheduler gone at the post-start hook (which one: timing only)
STOPPED_CONTEXT = (
    "Cannot call methods on a stopped SparkContext",
    'because the return value of "org.apache.spark.SparkEnv$.get()" is null',
    'because the return value of "org.apache.spark.SparkContext._taskScheduler()" is null',
)
log = logging.getLogger(__name__)


def task_slots(pipeline: Pipeline) -> int:
    """One task slot per pre-allocated replica, so every active replica really runs."""
    return max(2, pipeline.overprovisioned_replicas)


def jvm_running(given: Any) -> bool:
    """A JVM is up already: the caller's session, or a SparkContext of this process."""
    return given is not None or SparkContext._active_spark_context is not None


def open_session(
    pipeline: Pipeline, config: RunConfig, out: Path, given: Any, conf: dict[str, str]
) -> tuple[Any, bool]:
    """The caller's SparkSession `given`, else the one `spark_session` makes or reuses; and
    whether it is the caller's (kept running at the end: a session already running is the
    caller's too). A JVM launched here writes its standard error to spark.log (a failed start
    is raised with its lines). The pipeline's own modules (its folder's and the working
    directory's) are shipped to the Python workers (runtime/spark/pyfiles.py)."""
    archive = app_archive(app_folders(pipeline))
    py_files = [] if archive is None else [archive]
    if given is not None:
        return adopt_session(given, py_files), True
    callers = SparkContext._active_spark_context is not None
    auth_file = cluster_auth_file(config)
    try:
        session = spark_session(
            master_url(config, pipeline),
            conf=conf,
            auth_file=auth_file,
            ui_host=config.spark.ui_host,
            jvm_stderr=out / LOG_FILE,  # the JVM's start-up lines to spark.log
            py_files=py_files,
            class_cache=config.spark.class_cache,
        )
    except Py4JJavaError as exc:
        if not (config.spark.standalone and stopped_while_starting(str(exc))):
            raise
        raise RuntimeFailure(unregistered(config, out, auth_file)) from None
    return session, callers


def stopped_while_starting(error: str) -> bool:
    """The Java `error` the driver's start raised says its SparkContext was stopped while it
    started (STOPPED_CONTEXT)."""
    return any(marker in error for marker in STOPPED_CONTEXT)


def unregistered(config: RunConfig, out: Path, auth_file: Path | None) -> str:
    """Why a driver's SparkContext stopped before it started: its standalone master gave it
    up (Spark tries for about a minute), unreachable or refusing an unauthenticated driver."""
    secret = (
        f"with the secret in {auth_file}"
        if auth_file is not None
        else "without a secret (a cluster with RPC authentication needs its shared secret: "
        "spark.auth_file, or the cluster `elastream cluster up` started with its default "
        "state file)"
    )
    return (
        f"the driver could not register with the Spark master {config.spark.master} "
        f"{secret}: the master did not answer or refused it (Spark's reason is in "
        f"{out / LOG_FILE})"
    )


def master_url(config: RunConfig, pipeline: Pipeline) -> str | None:
    """The master given, else spark-submit's (None), else local mode sized to the pools
    (local[n, 4]: up to 4 attempts per task, as on a cluster; plain local[n] never retries)."""
    if config.spark.master is not None or launched_by_spark_submit():
        return config.spark.master
    return f"local[{task_slots(pipeline)},4]"


def cluster_auth_file(config: RunConfig) -> Path | None:
    """The file with the cluster's shared secret: spark.auth_file, else the one of the
    cluster `elastream cluster up` started with its default state file, if `master` is it."""
    spark = config.spark
    if spark.auth_file is not None or not spark.standalone:
        return spark.auth_file
    try:
        state = ClusterState.load(DEFAULT_STATE)
    except (ClusterError, ValueError, TypeError):
        return None  # no such cluster (or an unreadable state file): no secret to give
    if state.master_url != spark.master or state.auth_file is None:
        return None
    return Path(state.auth_file)


def log_ui(spark: Any, config: RunConfig) -> None:
    """Say where the Spark UI and its Prometheus metrics are (when it is on), and warn when
    it listens beyond loopback without having been asked to (a JVM spark-submit started
    without SPARK_LOCAL_IP: the UI then binds every address)."""
    sc = spark.sparkContext
    if not sc.uiWebUrl:
        return
    bound = sc._jvm.java.lang.System.getenv("SPARK_LOCAL_IP") or "0.0.0.0"
    # the address the UI listens on (its URL names the host by its public name)
    url = f"http://{bound}:{urlsplit(sc.uiWebUrl).port}"
    ui_host = config.spark.ui_host
    if not is_loopback(bound) and is_loopback(ui_host):
        log.warning(
            "the Spark UI listens on %s (the driver JVM's SPARK_LOCAL_IP), not on %s: "
            "export SPARK_LOCAL_IP=%s before spark-submit, or set spark.ui: false",
            bound,
            ui_host,
            ui_host,
        )
    prometheus = (url, PROMETHEUS_PATH, url, EXECUTORS_PROMETHEUS_PATH)
    log.info("Spark UI: %s (Prometheus: %s%s, %s%s)", url, *prometheus)
