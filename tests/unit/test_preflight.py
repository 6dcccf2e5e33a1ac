"""A new user's first run: the pipeline's folder and the working directory importable, and
everything checkable before Spark starts checked before anything is created — Java, the
sources, the sinks, the functions — one line each; `elastream check` says what would run."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from support.first_pipeline import input_words, setup

MIN_JAVA = 17  # Spark 4's

ELASTREAM = str(Path(sys.executable).parent / "elastream")  # the console script, as users run it


def elastream(cwd: Path, *args: str, env: dict[str, str] | None = None):
    """`elastream ARGS` run from `cwd` (not `python -m`, which would put `cwd` on the path)."""
    return subprocess.run(
        [ELASTREAM, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def without_java(tmp_path: Path) -> dict[str, str]:
    """The environment with no `java` on the PATH (the interpreter's folder only) nor JAVA_HOME."""
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    return env | {"PATH": str(Path(sys.executable).parent)}


def fake_java(tmp_path: Path, version: str) -> dict[str, str]:
    """JAVA_HOME pointing at a `java` that says it is `version` (beside it, the real Java of
    this machine is checked by test_this_machines_java_passes)."""
    java = tmp_path / "old-jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2023-10-17' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IXUSR)
    return {**os.environ, "JAVA_HOME": str(java.parents[1])}


def one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_this_machines_java_passes():
    from elastream.runtime.spark.java import check_java, java_major

    assert check_java().startswith("Java ")
    assert java_major('openjdk version "17.0.15" 2025-04-15') == 17
    assert java_major('java version "1.8.0_392"') == 8 < MIN_JAVA


def test_the_readme_pipeline_from_a_new_folder_imports_then_stops_at_a_missing_java(tmp_path):
    """Its `myapp` is found (the folder is the working directory and the pipeline's), and the
    run stops at the first thing that cannot work, before anything is created."""
    setup(tmp_path)
    before = sorted(os.listdir(tmp_path))
    done = elastream(
        tmp_path, "run", "pipeline.yaml", "--out", "runs/words", env=without_java(tmp_path)
    )
    line = one_error_line(done)
    assert line.startswith("elastream run: error: Spark needs Java, and there is no java on"), line
    assert sorted(os.listdir(tmp_path)) == before  # no runs/, no results/, no history


def test_an_old_java_is_named_before_anything_is_created(tmp_path):
    setup(tmp_path / "app")
    env = fake_java(tmp_path, "11.0.21")
    before = sorted(os.listdir(tmp_path / "app"))
    done = elastream(tmp_path / "app", "run", "pipeline.yaml", env=env)
    line = one_error_line(done)
    assert f"Spark needs Java {MIN_JAVA} or newer; " in line and "is Java 11" in line, line
    assert sorted(os.listdir(tmp_path / "app")) == before


def test_a_schema_less_source_with_no_file_fails_before_spark(tmp_path):
    setup(tmp_path)
    for file in (tmp_path / "incoming").iterdir():
        file.unlink()
    (tmp_path / "incoming" / ".hidden.json").write_text('{"text": "not read by Spark"}\n')
    before = sorted(os.listdir(tmp_path))
    line = one_error_line(elastream(tmp_path, "run", "pipeline.yaml", "--out", "runs/words"))
    assert "source 'lines': no `schema` given and no file in incoming" in line, line
    assert sorted(os.listdir(tmp_path)) == before


def test_an_unwritable_sink_fails_before_the_source_folder_is_made(tmp_path):
    """The source declares its schema (its folder would be made) but the sink's folder cannot be:
    the run fails on the sink, and the source's folder was not made either."""
    setup(tmp_path)
    text = (tmp_path / "pipeline.yaml").read_text()
    text = text.replace("path: incoming/,", 'path: later/, schema: "text STRING",')
    (tmp_path / "pipeline.yaml").write_text(text.replace("path: results/", "path: myapp.py/out"))
    before = sorted(os.listdir(tmp_path))
    line = one_error_line(elastream(tmp_path, "run", "pipeline.yaml"))
    assert line.startswith("elastream run: error: sink 'out': cannot create myapp.py/out"), line
    assert sorted(os.listdir(tmp_path)) == before  # no later/


def test_an_import_error_names_the_module_and_the_folders_searched(tmp_path):
    setup(tmp_path)
    text = (tmp_path / "pipeline.yaml").read_text().replace("myapp:words", "mypap:words")
    (tmp_path / "pipeline.yaml").write_text(text)
    line = one_error_line(elastream(tmp_path, "run", "pipeline.yaml"))
    assert "operator 'split' function: cannot import module 'mypap'" in line, line
    assert f"searched: {tmp_path}" in line, line  # the pipeline's folder first
    assert not (tmp_path / "runs").exists()


def test_check_says_what_would_run_and_starts_nothing(tmp_path):
    """From another folder: the pipeline's folder is importable too; the schema is read from
    the first file by pyarrow (no Spark), as Spark would infer it."""
    app = tmp_path / "app"
    setup(app)
    shutil.move(app / "incoming", tmp_path / "incoming")  # its paths are the working directory's
    before = sorted(os.listdir(tmp_path))
    done = elastream(tmp_path, "check", "app/pipeline.yaml", "--recommend-only")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "pipeline 'words' (app/pipeline.yaml): valid" in out
    first = sorted((tmp_path / "incoming").iterdir())[0]
    assert f"schema (inferred from incoming/{first.name}): text STRING" in out
    assert f"operator split: myapp:words from {app / 'myapp.py'}, replicas 1-4" in out
    assert "until stopped" in out and "decisions reported but never enacted" in out
    assert "Java 1" in out and "results is created when the run starts" in out
    assert sorted(os.listdir(tmp_path)) == before
    assert sum(input_words(tmp_path).values()) > 0  # the input is still there, unread


@pytest.mark.parametrize(
    ("schema", "ddl"),
    [
        (None, "n BIGINT, tags ARRAY<STRING>, text STRING, where STRUCT<x: DOUBLE, y: DOUBLE>"),
        ("text STRING, n INT", "text STRING, n INT"),
    ],
)
def test_check_reads_a_declared_or_inferred_schema(tmp_path, schema, ddl):
    import json

    from elastream.model.pipeline import pipeline_from_dict
    from elastream.runtime.schemas import source_schema

    (tmp_path / "in").mkdir()
    row = {"text": "a b", "n": 3, "where": {"y": 1.5, "x": 2.0}, "tags": ["t"]}
    (tmp_path / "in" / "a.json").write_text(json.dumps(row) + "\n")
    source = {"name": "s", "kind": "files", "path": str(tmp_path / "in"), "format": "json"}
    if schema is not None:
        source["schema"] = schema
    pipeline = pipeline_from_dict(
        {
            "sources": [source],
            "operators": [{"name": "o", "function": "elastream.examples.synthetic:passthrough"}],
            "sinks": [{"name": "k"}],
            "streams": [{"from": "s", "to": "o"}, {"from": "o", "to": "k"}],
        }
    )
    assert source_schema(pipeline.sources[0])[0] == ddl
