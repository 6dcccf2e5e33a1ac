"""The examples in the pipeline pages and the Spark runtime's pages still match the code they
describe.

YAML blocks of the pipeline pages (docs/pipeline-yaml.md, docs/pipeline-fields.md,
docs/pipeline-operators.md, docs/pipeline-errors.md) are complete pipelines. A block whose first
line is `# invalid: MESSAGE` must fail to load with MESSAGE in the error; `# file: PATH` must hold
the same data as that file of the repository; any other block must load. Python blocks of
the pipeline pages and docs/python.md are executed (each as a module of its own, so that the
functions it defines are importable as operators), except one whose first line is
`# starts Spark`: its imports are executed and the rest only compiled (the blocks of the Spark
runtime's pages, docs/runtime.md, docs/runtime-internals.md, docs/runtime-control.md and
docs/runtime-store.md, are compiled). The tables and columns those pages name must exist in the
queue store's schema, and their worked `admission_cap` figures must be what the function returns.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
import yaml
from support.docs import blocks, marker, run_block
from support.paths import ROOT

from elastream.model.pipeline import Pipeline, TopologyError, pipeline_from_dict
from elastream.prediction.batching import admission_cap
from elastream.runtime.queues.sqlite_file import SCHEMA

# writing a pipeline, and its three reference pages (fields, operator fields, error messages)
PIPELINE_DOCS = [ROOT / "docs" / name for name in ("pipeline-yaml.md", "pipeline-fields.md",
                                                    "pipeline-operators.md",
                                                    "pipeline-errors.md")]  # fmt: skip
# the Spark runtime: using it, and how it works inside (three pages)
RUNTIME_DOCS = [ROOT / "docs" / name for name in ("runtime.md", "runtime-internals.md",
                                                   "runtime-control.md",
                                                   "runtime-store.md")]  # fmt: skip
PYTHON_DOC = ROOT / "docs" / "python.md"
ORIGIN = "pipeline.yaml"  # the file name the quoted messages assume


def block_id(block: tuple) -> str:
    """`line12` for a (line, text) block, `pipeline-fields-line12` for a (doc, line, text) one."""
    return f"{block[0].stem}-line{block[1]}" if len(block) == 3 else f"line{block[0]}"


def pipeline_blocks(lang: str) -> list[tuple[Path, int, str]]:
    return [(doc, line, text) for doc in PIPELINE_DOCS for line, text in blocks(doc, lang)]


YAML_BLOCKS = pipeline_blocks("yaml")
PYTHON_BLOCKS = pipeline_blocks("python")
API_BLOCKS = blocks(PYTHON_DOC, "python")


def load(text: str) -> Pipeline:
    return pipeline_from_dict(yaml.safe_load(text), ORIGIN)


def test_the_doc_has_valid_invalid_and_file_examples():
    kinds = [
        "invalid" if marker(t, "invalid") else "file" if marker(t, "file") else "valid"
        for *_, t in YAML_BLOCKS
    ]
    assert kinds.count("valid") >= 5, kinds
    assert kinds.count("invalid") >= 20, kinds
    assert kinds.count("file") == 2, kinds
    assert len(PYTHON_BLOCKS) >= 4


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=block_id)
def test_yaml_example(block):
    doc, line, text = block
    expected = marker(text, "invalid")
    if expected is None:
        pipeline = load(text)
        assert pipeline.operators, f"docs/{doc.name}:{line}"
        return
    with pytest.raises(TopologyError) as caught:
        load(text)
    assert expected in str(caught.value), f"docs/{doc.name}:{line}"


@pytest.mark.parametrize("block", [b for b in YAML_BLOCKS if marker(b[2], "file")], ids=block_id)
def test_file_examples_are_the_files(block):
    *_, text = block
    path = ROOT / str(marker(text, "file"))
    assert yaml.safe_load(text) == yaml.safe_load(path.read_text())


def test_file_examples_import():
    for *_, text in YAML_BLOCKS:
        if marker(text, "file"):
            load(text).check_imports()


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=block_id)
def test_python_example(block, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_block(*block, monkeypatch)


@pytest.mark.parametrize("block", API_BLOCKS, ids=block_id)
def test_python_api_example(block, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_block(PYTHON_DOC, *block, monkeypatch)


def test_the_python_api_doc_runs_and_import_checks_its_examples():
    spark = [t for _, t in API_BLOCKS if t.startswith("# starts Spark")]
    assert len(spark) >= 3 and len(API_BLOCKS) - len(spark) >= 4


def runtime_text() -> str:
    return "\n".join(doc.read_text() for doc in RUNTIME_DOCS)


def test_runtime_python_blocks_compile():
    found = [(doc, *block) for doc in RUNTIME_DOCS for block in blocks(doc, "python")]
    assert found
    for doc, line, text in found:
        compile(text, f"docs/{doc.name}:{line}", "exec")


def test_every_queue_store_table_is_documented():
    tables = re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)\(", SCHEMA)
    assert len(tables) >= 8
    doc = runtime_text()
    missing = [t for t in tables if not re.search(rf"`{t}[`(]", doc)]
    assert not missing, f"the Spark runtime's pages do not describe table(s) {missing}"


def test_documented_columns_exist():
    """Every `table(col, ...)` written in the Spark runtime's pages names real columns."""
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    doc = runtime_text()
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    found = re.findall(r"`(\w+)\(([\w, ]+)\)`", doc)
    checked = 0
    for table, cols in found:
        if table not in tables:
            continue  # a call such as `commit(end)`, not a table
        checked += 1
        real = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
        unknown = [c.strip() for c in cols.split(",") if c.strip() not in real]
        assert not unknown, f"{table}: no column(s) {unknown}"
    assert checked >= 8


def test_runtime_doc_cap_examples():
    """The worked admission-cap figures quoted in the Spark runtime's pages."""
    doc = runtime_text()
    quoted = re.findall(r"admission_cap\((\d+), ([\d.]+), ([\d.]+)\) = (\d+)", doc)
    assert len(quoted) >= 2
    for r, et, batch, cap in quoted:
        assert admission_cap(int(r), float(et), float(batch)) == int(cap)
