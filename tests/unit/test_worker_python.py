"""The launcher local Spark starts Python workers with: it drops exactly Spark's pyspark.zip and
core jar from PYTHONPATH (other entries kept as they are, spaces and wildcards too) and runs this
interpreter, which then imports the installed pyspark; a cluster master or another Spark home
keeps the interpreter itself."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pyspark
import pytest

from elastream.runtime.spark.worker_python import spark_path_entries, worker_python, write_launcher

INSTALLED = Path(pyspark.__file__).resolve().parent
ZIPPED = INSTALLED / "python" / "lib" / "pyspark.zip"
CORE_JARS = sorted((INSTALLED / "jars").glob("spark-core_*.jar"))
DROPPED = (ZIPPED, *CORE_JARS)

pytestmark = pytest.mark.skipif(not ZIPPED.is_file(), reason="pyspark without Spark's zip")


def run(launcher: str, pythonpath: str, code: str) -> str:
    env = {**os.environ, "PYTHONPATH": pythonpath}
    done = subprocess.run(
        [launcher, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


def test_the_zip_and_the_core_jar_are_found_where_pip_puts_them(monkeypatch):
    assert len(CORE_JARS) == 1  # the jar Spark's PythonUtils adds (SparkContext.jarOfObject)
    monkeypatch.delenv("SPARK_HOME", raising=False)
    assert spark_path_entries() == DROPPED
    monkeypatch.setenv("SPARK_HOME", str(INSTALLED))
    assert spark_path_entries() == DROPPED


def test_the_core_jar_holds_no_python_to_import():
    with zipfile.ZipFile(CORE_JARS[0]) as jar:
        assert not [name for name in jar.namelist() if name.endswith((".py", ".pyc"))]


def test_another_spark_home_keeps_its_entries(monkeypatch, tmp_path):
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    assert spark_path_entries() == ()
    assert worker_python("local[2]") == sys.executable


@pytest.mark.parametrize("master", ["spark://10.0.0.5:7077", "yarn", None])
def test_a_cluster_master_gets_the_interpreter_itself(monkeypatch, master):
    monkeypatch.delenv("SPARK_HOME", raising=False)
    assert worker_python(master) == sys.executable


def test_a_local_master_gets_a_launcher_in_the_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("SPARK_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    launcher = Path(worker_python("local[2]"))
    assert launcher.parent == tmp_path / "elastream" / "python"
    assert os.access(launcher, os.X_OK)
    assert worker_python("local[*]") == str(launcher)  # written once, named by its content
    assert [p.name for p in launcher.parent.iterdir()] == [launcher.name]  # no partial left


def test_the_launcher_drops_only_sparks_zip_and_core_jar(tmp_path):
    launcher = str(write_launcher(sys.executable, DROPPED, tmp_path))
    jar = CORE_JARS[0]
    given = f"/tmp/a b:{ZIPPED}:/tmp/*:{jar}:/opt/other/pyspark.zip:/opt/{jar.name}:{jar}x"
    shown = run(launcher, given, "import os; print(os.environ['PYTHONPATH'])")
    assert shown == f"/tmp/a b:/tmp/*:/opt/other/pyspark.zip:/opt/{jar.name}:{jar}x"


def test_a_launcher_keeps_an_entry_that_only_looks_like_a_dropped_one(tmp_path):
    odd = tmp_path / "a *[b].zip"  # characters a shell pattern would read as a pattern
    launcher = str(write_launcher(sys.executable, (odd,), tmp_path))
    given = f"{tmp_path}/a xb.zip:{odd}:{tmp_path}/a b.zip"  # the first matches it as a glob
    shown = run(launcher, given, "import os; print(os.environ['PYTHONPATH'])")
    assert shown == f"{tmp_path}/a xb.zip:{tmp_path}/a b.zip"


def test_through_the_launcher_pyspark_comes_from_site_packages(tmp_path):
    launcher = str(write_launcher(sys.executable, DROPPED, tmp_path))
    code = "import sys, pyspark; print(pyspark.__file__); print(sys.executable)"
    plain = run(sys.executable, str(ZIPPED), code).splitlines()
    assert plain[0] == str(ZIPPED / "pyspark" / "__init__.py")  # what Spark's path gives
    file, python = run(launcher, str(ZIPPED), code).splitlines()
    assert Path(file).resolve() == INSTALLED / "__init__.py"
    assert python == sys.executable
