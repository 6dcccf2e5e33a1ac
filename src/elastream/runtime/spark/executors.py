"""Adding and removing executors of a running Spark application (standalone cluster, dynamic
allocation off): the small interface host leasing uses to turn leases into executors."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession


class Executors:
    """The executors of `spark`'s application, through the SparkContext's JVM side."""

    def __init__(self, spark: SparkSession) -> None:
        self._jvm = spark.sparkContext._jvm
        self._sc = spark.sparkContext._jsc.sc()

    def ids(self) -> list[str]:
        """The live executors' ids (the driver is not an executor)."""
        text = self._sc.getExecutorIds().mkString(",")
        return [i for i in text.split(",") if i]

    def set_total(self, n: int) -> bool:
        """Ask the cluster manager for `n` executors in all (it starts or stops the difference).
        Standalone starts with no target, so the absolute target must come first (spark-notes)."""
        if n < 0:
            raise ValueError(f"executor target must be >= 0, got {n}")
        return bool(self._sc.requestTotalExecutors(n, 0, self._empty_map()))

    def decommission(self, executor_id: str) -> bool:
        """Retire executor `executor_id` gracefully and lower the target by one: it takes no new
        task, finishes the ones it runs, then exits (needs `spark.decommission.enabled`).
        Measured on a local standalone cluster: a task running at the request finished; the
        executor left 10-16 s later."""
        if executor_id not in self.ids():
            raise ValueError(f"no live executor {executor_id} (live: {self.ids()})")
        scheduler = self._jvm.org.apache.spark.scheduler.ExecutorDecommissionInfo
        none = getattr(getattr(self._jvm.scala, "None$"), "MODULE$")
        info = scheduler("elastream: lease released", none)
        backend = self._sc.schedulerBackend()
        return bool(backend.decommissionExecutor(executor_id, info, True, False))

    def _empty_map(self) -> Any:
        """Scala's `Map.empty` (its companion object is `Map$.MODULE$` from the JVM side)."""
        companion = getattr(self._jvm.scala.collection.immutable, "Map$")
        return getattr(companion, "MODULE$").empty()
