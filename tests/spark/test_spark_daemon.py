"""The session's Python workers fork from elastream's daemon, which has pyarrow, PySpark's worker
loop and the task code loaded before the fork (so a new worker does not import them again) and
its objects frozen out of the cyclic garbage collector (so PySpark's collection after every task
does not walk them); a worker forked from it runs pyarrow compute, numpy and pandas (the fork
broke none of them); the workers import the installed pyspark, not Spark's uncompiled pyspark.zip
or its core jar."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.spark
# what a worker runs, imported by the daemon before it forks (runtime/spark/daemon.py)
PRELOADED = (
    "pyarrow",
    "pandas",
    "pyspark.worker",
    "elastream.runtime.spark.task",
    "elastream.runtime.spark.pipeline_source",
    "elastream.runtime.spark.source",
)


def test_python_workers_fork_from_a_daemon_with_pyarrow_loaded(spark):
    def parent(batches):
        import gc
        import os
        import sys

        import numpy as np
        import pandas as pd
        import pyarrow as pa
        import pyarrow.compute as pc

        for batch in batches:
            total = pc.sum(pc.multiply(batch.column(0), 2)).as_py()
            matrix = np.arange(9.0).reshape(3, 3)
            frame = pd.DataFrame({"x": matrix.diagonal()})
        ppid = os.getppid()
        with open(f"/proc/{ppid}/cmdline", "rb") as f:
            command = f.read().replace(b"\0", b" ").decode()
        with open(f"/proc/{ppid}/maps") as f:
            arrow = any("libarrow" in line for line in f)
        checks = f"{total}|{float(frame['x'].sum())}|{float((matrix @ matrix).trace())}"
        row = {"command": [command], "arrow": [arrow], "checks": [checks]}
        row["frozen"] = [gc.get_freeze_count()]
        # a module the daemon imported has its namespace frozen (outside gc.get_objects())
        tracked = {id(o) for o in gc.get_objects() if isinstance(o, dict)}
        late = [n for n in PRELOADED if n not in sys.modules or id(vars(sys.modules[n])) in tracked]
        row["unfrozen"] = [",".join(late)]
        yield pa.RecordBatch.from_pydict(row)

    rows = (
        spark.range(4, numPartitions=4)
        .mapInArrow(
            parent, "command STRING, arrow BOOLEAN, checks STRING, frozen LONG, unfrozen STRING"
        )
        .collect()
    )
    assert len(rows) == 4
    for row in rows:
        assert "elastream.runtime.spark.daemon" in row.command, row.command
        assert row.arrow, "the daemon the worker forked from has not loaded pyarrow"
        # pyarrow, pandas and the task code make tens of thousands of objects (a plain
        # interpreter: about 5,000), frozen before the fork
        assert row.frozen > 50_000, row.frozen
        assert row.unfrozen == "", f"imported after the fork: {row.unfrozen}"
    # partition k of range(4) over 4 partitions holds k: 2k; the diagonal 0+4+8; trace(M²) = 180
    assert sorted(row.checks for row in rows) == [f"{2 * k}|12.0|180.0" for k in range(4)]


def test_python_workers_import_the_installed_pyspark_not_sparks_zip(spark):
    """The session's workers start through elastream's launcher (runtime/spark/worker_python.py):
    Spark's uncompiled pyspark.zip and its core jar are off their path and pyspark comes from
    site-packages."""
    import pyspark

    installed = str(Path(pyspark.__file__).resolve().parent)

    def where(batches):
        import os
        import sys

        import pyarrow as pa
        import pyspark

        for _ in batches:
            path = ":".join([os.environ.get("PYTHONPATH", ""), *sys.path])
            yield pa.RecordBatch.from_pydict({"file": [pyspark.__file__], "path": [path]})

    rows = spark.range(2, numPartitions=2).mapInArrow(where, "file STRING, path STRING").collect()
    assert len(rows) == 2
    for row in rows:
        assert str(Path(row.file).resolve()).startswith(installed + "/"), row.file
        assert "pyspark.zip" not in row.file, row.file
        entries = row.path.split(":")
        assert not any(e.endswith("pyspark.zip") for e in entries), row.path
        assert not any(Path(e).name.startswith("spark-core_") for e in entries), row.path
