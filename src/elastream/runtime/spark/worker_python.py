"""The Python that local Spark starts its Python workers with: this interpreter, importing the
installed (compiled) pyspark instead of Spark's uncompiled pyspark.zip."""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
from pathlib import Path

import pyspark

from elastream.runtime.spark.class_cache import cache_root

# Spark puts $SPARK_HOME/python/lib/pyspark.zip first on every Python worker's path. The zip
# holds sources only, and Python never caches what it compiles from a zip, so every worker and
# every helper process (a data source's planner and stream reader) compiles pyspark again:
# 0.7-0.8 s of CPU each, measured here. The launcher drops that one entry; the worker then
# imports the same pyspark from this interpreter's site-packages, compiled once.
LAUNCHER = """#!/bin/sh
# Written by elastream (runtime/spark/worker_python.py): runs the interpreter below with
# Spark's pyspark.zip dropped from PYTHONPATH, so that Spark's Python workers import the same
# pyspark from the interpreter's site-packages, compiled once.
set -f
kept=
IFS=:
for entry in $PYTHONPATH; do
  [ "$entry" = {zipped} ] || kept="${{kept:+$kept:}}$entry"
done
unset IFS
PYTHONPATH=$kept exec {python} "$@"
"""


def worker_python(master: str | None) -> str:
    """The executable for PYSPARK_PYTHON: on a local master, where Spark's home is this
    interpreter's pyspark (pip's layout), a launcher (`LAUNCHER`, written once to the cache
    folder) that runs this interpreter without Spark's pyspark.zip on its path; else this
    interpreter itself (a cluster's executors have their own Spark, and the launcher's path
    exists only on this machine)."""
    zipped = spark_pyspark_zip()
    if os.name != "posix" or zipped is None or not (master or "").startswith("local"):
        return sys.executable
    return str(write_launcher(sys.executable, zipped, cache_root() / "python"))


def spark_pyspark_zip() -> Path | None:
    """The pyspark.zip Spark adds to its workers' path, when Spark's home (SPARK_HOME, else
    where pyspark is installed) is the pyspark this interpreter imports; else None."""
    installed = Path(pyspark.__file__).resolve().parent
    home = os.environ.get("SPARK_HOME")
    if home and Path(home).resolve() != installed:
        return None
    zipped = installed / "python" / "lib" / "pyspark.zip"
    return zipped if zipped.is_file() else None


def write_launcher(python: str, zipped: Path, folder: Path) -> Path:
    """The launcher script for `python` and `zipped` in `folder`, named by its content (written
    atomically when missing, so concurrent runs never see half of it)."""
    text = LAUNCHER.format(python=shlex.quote(python), zipped=shlex.quote(str(zipped)))
    path = folder / f"worker-{hashlib.sha256(text.encode()).hexdigest()[:16]}.sh"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        partial.write_text(text, encoding="utf-8")
        partial.chmod(0o755)
        os.replace(partial, path)
    return path
