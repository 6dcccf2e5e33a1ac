"""The launcher local Spark starts Python workers with: it drops exactly Spark's pyspark.zip from
PYTHONPATH (other entries kept as they are, spaces and wildcards too) and runs this interpreter,
which then imports the installed pyspark; a cluster master or another Spark home keeps the
interpreter itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from elastream.runtime.spark.worker_python import spark_pyspark_zip, worker_python, write_launcher

INSTALLED = Path(pyspark.__file__).resolve().parent
ZIPPED = INSTALLED / "python" / "lib" / "pyspark.zip"

pytestmark = pytest.mark.skipif(not ZIPPED.is_file(), reason="pyspark without Spark's zip")


def run(launcher: str, pythonpath: str, code: str) -> str:
    env = {**os.environ, "PYTHONPATH": pythonpath}
    done = subprocess.run(
        [launcher, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


def test_the_zip_is_found_where_pip_puts_it(monkeypatch):
    monkeypatch.delenv("SPARK_HOME", raising=False)
    assert spark_pyspark_zip() == ZIPPED
    monkeypatch.setenv("SPARK_HOME", str(INSTALLED))
    assert spark_pyspark_zip() == ZIPPED


def test_another_spark_home_keeps_its_zip(monkeypatch, tmp_path):
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    assert spark_pyspark_zip() is None
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


def test_the_launcher_drops_only_sparks_zip(tmp_path):
    launcher = str(write_launcher(sys.executable, ZIPPED, tmp_path))
    given = f"/tmp/a b:{ZIPPED}:/tmp/*:/opt/other/pyspark.zip"
    shown = run(launcher, given, "import os; print(os.environ['PYTHONPATH'])")
    assert shown == "/tmp/a b:/tmp/*:/opt/other/pyspark.zip"


def test_through_the_launcher_pyspark_comes_from_site_packages(tmp_path):
    launcher = str(write_launcher(sys.executable, ZIPPED, tmp_path))
    code = "import sys, pyspark; print(pyspark.__file__); print(sys.executable)"
    plain = run(sys.executable, str(ZIPPED), code).splitlines()
    assert plain[0] == str(ZIPPED / "pyspark" / "__init__.py")  # what Spark's path gives
    file, python = run(launcher, str(ZIPPED), code).splitlines()
    assert Path(file).resolve() == INSTALLED / "__init__.py"
    assert python == sys.executable
