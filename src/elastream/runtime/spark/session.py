"""Start (or reuse) the SparkSession the runtime needs, quietly, with our data source; with the
cluster's shared secret (spark.authenticate) and the Spark UI with its PrometheusServlet when
asked. Under spark-submit the session is made in the driver JVM spark-submit started."""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import sys
import threading
import warnings
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from pyspark import SparkContext
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from elastream.runtime.spark.class_cache import with_class_cache
from elastream.runtime.spark.cluster import read_secret
from elastream.runtime.spark.pipeline_source import PipelineDataSource
from elastream.runtime.spark.source import QueueDataSource
from elastream.runtime.spark.task import hold_worker
from elastream.runtime.spark.worker_python import worker_python

_registered: dict[int, tuple[str, ...]] = {}  # session -> the Python files its sources ship
RAW_LOCAL_FS = "org.apache.hadoop.fs.local.RawLocalFs"
PROMETHEUS_PATH = "/metrics/prometheus"  # the driver's metrics (PrometheusServlet)
EXECUTORS_PROMETHEUS_PATH = "/metrics/executors/prometheus"  # every executor's, from the UI
PROMETHEUS_SERVLET = "org.apache.spark.metrics.sink.PrometheusServlet"


def launched_by_spark_submit() -> bool:
    """This Python process is the driver spark-submit started (its JVM is already running)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def ui_conf(enabled: bool, port: int = 4040) -> dict[str, str]:
    """The Spark UI's settings: on, with the PrometheusServlet serving the driver's metrics at
    PROMETHEUS_PATH (the streaming queries' among them) and the executors' at
    EXECUTORS_PROMETHEUS_PATH, and its history kept short for long runs; or off."""
    if not enabled:
        return {"spark.ui.enabled": "false", "spark.sql.streaming.metricsEnabled": "false"}
    return {
        "spark.ui.enabled": "true",
        "spark.ui.port": str(port),
        "spark.ui.prometheus.enabled": "true",
        "spark.metrics.conf.*.sink.prometheusServlet.class": PROMETHEUS_SERVLET,
        "spark.metrics.conf.*.sink.prometheusServlet.path": PROMETHEUS_PATH,
        "spark.sql.streaming.metricsEnabled": "true",
        "spark.ui.retainedJobs": "200",
        "spark.ui.retainedStages": "200",
        "spark.sql.ui.retainedExecutions": "100",
    }


DAEMON = "elastream.runtime.spark.daemon"  # spark.python.daemon.module (a user's conf may reset it)


def spark_session(
    master: str | None,
    app_name: str = "elastream",
    conf: Mapping[str, str] | None = None,
    *,
    auth_file: Path | None = None,
    ui_host: str = "127.0.0.1",
    jvm_stderr: Path | None = None,
    py_files: Sequence[Path] = (),
    class_cache: bool = True,
) -> SparkSession:
    """A session with FAIR scheduling (one pool per query), Python worker reuse and the
    `elastream_queue` and `elastream_pipeline` sources registered; `conf` is applied last (it
    may override ours; the UI is off unless `conf` has `ui_conf(True)`). An existing active
    session is reused as it is. `auth_file` holds the cluster's shared secret; `ui_host` is
    the address the UI binds (the driver JVM's SPARK_LOCAL_IP unless set). `master` None: the
    one spark-submit was given. A driver JVM launched here runs in a session of its own, so a
    signal to this process's group (Ctrl-C, systemd's stop) leaves it and its Python workers
    to the graceful stop, and writes its standard error to `jvm_stderr` (appended; None: the
    console). `py_files` (zip or .py) are shipped to every Python worker (`adopt_session`).
    Python's SIGINT handler stays the one installed before (PySpark's would replace it). A
    driver JVM launched here with `class_cache` maps Spark's classes from the class cache
    (runtime/spark/class_cache.py)."""
    warnings.filterwarnings("ignore", category=FutureWarning)
    logging.getLogger("py4j").setLevel(logging.ERROR)
    os.environ.setdefault("PYSPARK_PYTHON", worker_python(master))
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    options = {
        "spark.app.name": app_name,
        "spark.ui.showConsoleProgress": "false",
        "spark.scheduler.mode": "FAIR",
        "spark.python.worker.reuse": "true",
        # workers forked from a daemon with the task code imported: start at once (daemon.py)
        "spark.python.daemon.module": DAEMON,
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.streaming.numRecentProgressUpdates": "2000",
        "spark.driver.memory": "2g",
        # checkpoint files without Hadoop's .crc side files: each micro-batch's offset and
        # commit files cost fewer file operations (measured: commit log 0.19 -> 0.11 s per
        # batch); the checkpoint manager's atomic rename still guards against torn files
        "spark.hadoop.fs.AbstractFileSystem.file.impl": RAW_LOCAL_FS,
        **ui_conf(False),
        **(conf or {}),
    }
    if master is not None:
        options["spark.master"] = master
    launching = SparkContext._gateway is None and not launched_by_spark_submit()
    if auth_file is not None and not launching:  # given to a running JVM: never on a command line
        options["spark.authenticate"] = "true"
        options["spark.authenticate.secret"] = read_secret(auth_file)
    with (
        _jvm_launch(auth_file if launching else None, ui_host if launching else None),
        _sigint_kept(),
    ):
        if launching:
            launch_quietly(with_class_cache(options) if class_cache else options, jvm_stderr)
        session = SparkSession.builder.config(map=options).getOrCreate()
    return adopt_session(session, py_files)


class JvmLaunchError(RuntimeError):
    """The driver JVM did not start; the message holds what it wrote to its standard error."""


def launch_quietly(options: Mapping[str, str], stderr_path: Path | None) -> None:
    """Launch the driver JVM in a session of its own (a signal to the driver's process group
    does not reach it, nor the Python workers it forks: the driver stops them) with its
    standard error appended to `stderr_path` (None: the console), and make the SparkContext of
    `options` on it (a session builder's getOrCreate then adopts it). What the JVM prints
    there before any logging is configured — the Java launcher's "Using incubator modules"
    warning, Spark's "Setting default log level" note — stays off the console; a JVM that
    exits at once raises JvmLaunchError with the lines it wrote (e.g. a bad Java option). The
    JVM ends with the driver all the same: it exits when its standard input closes."""
    from pyspark import SparkConf
    from pyspark.errors import PySparkRuntimeError
    from pyspark.java_gateway import launch_gateway

    conf = SparkConf().setAll(list(options.items()))
    with contextlib.ExitStack() as stack:
        popen: dict[str, Any] = {"start_new_session": True}
        if stderr_path is not None:
            stderr_path.parent.mkdir(parents=True, exist_ok=True)
            popen["stderr"] = stack.enter_context(stderr_path.open("ab"))
        start = popen["stderr"].tell() if "stderr" in popen else 0
        try:
            gateway = launch_gateway(conf, popen_kwargs=popen)
        except PySparkRuntimeError as exc:
            said = _tail(stderr_path, start) if stderr_path is not None else "(see above)"
            raise JvmLaunchError(
                f"the Spark driver JVM did not start ({exc.getErrorClass()}); it said: {said}"
            ) from None
    SparkContext(conf=conf, gateway=gateway)


@contextlib.contextmanager
def _sigint_kept() -> Iterator[None]:
    """SIGINT's handler as it was before the body: a SparkContext made in the main thread
    installs its own (cancel every job, raise KeyboardInterrupt), which would replace a graceful
    stop's (runtime/signals.py)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGINT)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def _tail(path: Path, start: int, lines: int = 20) -> str:
    """The last `lines` lines written to `path` from byte `start` on, joined by " | "."""
    with path.open("rb") as fh:
        fh.seek(start)
        text = fh.read().decode(errors="replace")
    kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(kept) or "nothing"


@contextlib.contextmanager
def _jvm_launch(auth_file: Path | None, ui_host: str | None) -> Iterator[None]:
    """The environment the driver JVM is launched with: spark-submit reads the secret from
    `auth_file` (`--properties-file`: pyspark passes a session's settings to spark-submit on its
    command line, where any user of the machine could read a secret) and SPARK_LOCAL_IP is
    `ui_host` (the address Spark's web UI binds). Restored afterwards."""
    saved = {k: os.environ.get(k) for k in ("PYSPARK_SUBMIT_ARGS", "SPARK_LOCAL_IP")}
    if auth_file is not None:
        read_secret(auth_file)  # a clear error before Spark's if the file is unusable
        given = os.environ.get("PYSPARK_SUBMIT_ARGS", "pyspark-shell")
        quoted = shlex.quote(str(Path(auth_file).resolve()))
        os.environ["PYSPARK_SUBMIT_ARGS"] = f"--properties-file {quoted} {given}"
    if ui_host is not None:
        os.environ.setdefault("SPARK_LOCAL_IP", ui_host)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def adopt_session(spark: SparkSession, py_files: Sequence[Path] = ()) -> SparkSession:
    """A running session made ready for the runtime: quiet logs, `py_files` shipped to its
    Python workers (`SparkContext.addPyFile`, as spark-submit's --py-files), the
    `elastream_queue` and `elastream_pipeline` sources registered (again when the files shipped
    changed: a source takes the files shipped when it is registered). Its static settings stay
    as they are: FAIR scheduling and Python worker reuse make replica changes cheap, so a
    caller's session should have them (docs/python.md)."""
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    for path in py_files:
        if path.name not in (sc._python_includes or []):
            sc.addPyFile(str(path))
    shipped = tuple(sc._python_includes or ())
    if _registered.get(id(spark)) != shipped:
        for source in (QueueDataSource, PipelineDataSource):
            _register(spark, source)
        _registered[id(spark)] = shipped
    return spark


def _register(spark: SparkSession, source: type) -> None:
    """Register a Python data source; one this session registered before (an earlier run in a
    caller's session: Spark refuses a second registration of a name) stays, the same class.
    Spark 4.3 checks the name against the thread's active session but registers it in `spark`,
    so a session made by `newSession()` of one that has the source would be refused and left
    without it: `spark` is made the active session first (measured, docs/python.md)."""
    from pyspark.errors import AnalysisException

    spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
    try:
        spark.dataSource.register(source)
    except AnalysisException as exc:
        if exc.getCondition() != "DATA_SOURCE_ALREADY_EXISTS":
            raise
        logging.getLogger(__name__).info("data source %s already registered: kept", source.name())


def stop_query(spark: SparkSession, query: StreamingQuery) -> None:
    """Stop `query` and make sure the session forgets it. With asynchronous progress tracking
    Spark 4.3 can fail its own clean-up: it commits the Python source once more after the
    source's helper process is gone (`ClosedChannelException` in `commitAllSources`), which skips
    the query's deregistration, and the stopped query then blocks any query started from the
    same checkpoint (`CONCURRENT_QUERY`) or under the same name. We deregister it as that
    clean-up would have (docs/runtime-internals.md, "Asynchronous progress tracking")."""
    query.stop()
    if spark.streams.get(query.id) is not None:
        execution = query._jsq.streamingQuery()  # the StreamExecution, as Spark registers it
        spark._jsparkSession.streams().notifyQueryTermination(execution)


def warm_python_workers(spark: SparkSession, n: int, hold_s: float = 1.0) -> int:
    """Start `n` Python workers of the kind the data source's `read` runs in, each with the
    runtime imported, before any event arrives: the replica pool is pre-allocated (PSPS), so a
    replica activated later starts at once instead of forking a worker mid-spike (measured here:
    1-3 s per new worker on 2 cores). `n` concurrent tasks hold a worker each for `hold_s`.
    Returns how many distinct workers answered."""
    rows = (
        spark.range(n, numPartitions=n)
        .mapInArrow(partial(hold_worker, hold_s), "pid LONG")
        .collect()
    )
    return len({row.pid for row in rows})
