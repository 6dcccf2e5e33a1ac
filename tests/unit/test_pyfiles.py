"""The user's code shipped to Spark's Python workers (runtime/spark/pyfiles.py): one zip of the
pipeline's folders' modules and packages, importable from the zip alone (the workers' side is
tested on Spark: tests/spark/test_first_hour.py, tests/spark/test_cluster.py)."""

from __future__ import annotations

import subprocess
import sys
import zipfile

from elastream.runtime.spark.pyfiles import app_archive


def write(path, text: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_archive_holds_the_folders_modules_and_packages_and_imports_alone(tmp_path):
    app, cwd = tmp_path / "app", tmp_path / "cwd"
    write(app / "myapp.py", "from helpers.text import split\nWHERE = 'app'\n")
    write(app / "helpers" / "__init__.py")
    write(app / "helpers" / "text.py", "def split(s):\n    return s.split()\n")
    write(app / "helpers" / "__pycache__" / "text.cpython-311.pyc", "stale")
    write(app / "data" / "rows.json", "{}")  # no package: not shipped
    write(app / ".venv" / "lib.py", "")  # hidden: not shipped
    write(cwd / "myapp.py", "WHERE = 'cwd'\n")  # the pipeline's folder comes first
    write(cwd / "tools.py", "X = 1\n")
    archive = app_archive([app, cwd], where=tmp_path)
    names = sorted(zipfile.ZipFile(archive).namelist())
    assert names == ["helpers/__init__.py", "helpers/text.py", "myapp.py", "tools.py"]
    code = "import myapp, tools; print(myapp.WHERE, myapp.split('a b'), tools.X)"
    done = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(archive)!r}); {code}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "app ['a', 'b'] 1"
    assert app_archive([app, cwd], where=tmp_path) == archive  # the same code, the same file
    write(app / "myapp.py", "WHERE = 'changed'\n")
    assert app_archive([app, cwd], where=tmp_path) != archive  # changed code, another name


def test_folders_without_python_give_no_archive(tmp_path):
    write(tmp_path / "in" / "rows.json", "{}")
    assert app_archive([tmp_path / "in"], where=tmp_path) is None
