"""The Python that local Spark starts its Python workers with: this interpreter, importing the
installed (compiled) pyspark instead of Spark's uncompiled pyspark.zip, without Spark's core jar
on its import path."""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

import pyspark

from elastream.runtime.spark.class_cache import cache_root

# Spark puts two archives first on every Python worker's path (PythonUtils.sparkPythonPath):
# - $SPARK_HOME/python/lib/pyspark.zip: sources only, and Python never caches what it compiles
#   from a zip, so every worker and every helper process (a data source's planner and stream
#   reader) compiled pyspark again: 0.7-0.8 s of CPU each, measured here;
# - the jar Spark's core classes come from (spark-core_*.jar, 16 MB, about 6,000 entries, no
#   Python file in pip's pyspark): each process reads its directory at its first import that
#   misses the entries before it, and twice more (the jar and its `org` folder) when PySpark
#   adds the shipped files to the path and invalidates the import caches, 80-120 ms of CPU per
#   worker and helper, measured here.
# The launcher drops exactly those entries; the worker then imports the same pyspark from this
# interpreter's site-packages, compiled once.
LAUNCHER = """#!/bin/sh
# Written by elastream (runtime/spark/worker_python.py): runs the interpreter below with
# Spark's pyspark.zip and core jar dropped from PYTHONPATH, so that Spark's Python workers
# import the same pyspark from the interpreter's site-packages, compiled once.
set -f
kept=
IFS=:
for entry in $PYTHONPATH; do
  case "$entry" in
    {dropped}) ;;
    *) kept="${{kept:+$kept:}}$entry" ;;
  esac
done
unset IFS
PYTHONPATH=$kept exec {python} "$@"
"""


def worker_python(master: str | None) -> str:
    """The executable for PYSPARK_PYTHON: on a local master, where Spark's home is this
    interpreter's pyspark (pip's layout), a launcher (`LAUNCHER`, written once to the cache
    folder) that runs this interpreter without Spark's pyspark.zip and core jar on its path;
    else this interpreter itself (a cluster's executors have their own Spark, and the
    launcher's path exists only on this machine)."""
    dropped = spark_path_entries()
    if os.name != "posix" or not dropped or not (master or "").startswith("local"):
        return sys.executable
    return str(write_launcher(sys.executable, dropped, cache_root() / "python"))


def spark_path_entries() -> tuple[Path, ...]:
    """What Spark adds to its workers' path that the installed pyspark makes useless: its
    pyspark.zip and its core jar, when Spark's home (SPARK_HOME, else where pyspark is
    installed) is the pyspark this interpreter imports and the zip is there; else none."""
    installed = Path(pyspark.__file__).resolve().parent
    home = os.environ.get("SPARK_HOME")
    if home and Path(home).resolve() != installed:
        return ()
    zipped = installed / "python" / "lib" / "pyspark.zip"
    if not zipped.is_file():
        return ()
    return (zipped, *sorted((installed / "jars").glob("spark-core_*.jar")))


def write_launcher(python: str, dropped: Sequence[Path], folder: Path) -> Path:
    """The launcher script for `python`, dropping the `dropped` path entries, in `folder`,
    named by its content (written atomically when missing, so concurrent runs never see half
    of it)."""
    patterns = "|".join(shlex.quote(str(path)) for path in dropped)
    text = LAUNCHER.format(python=shlex.quote(python), dropped=patterns)
    path = folder / f"worker-{hashlib.sha256(text.encode()).hexdigest()[:16]}.sh"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        partial.write_text(text, encoding="utf-8")
        partial.chmod(0o755)
        os.replace(partial, path)
    return path
