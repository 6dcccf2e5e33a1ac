"""Every fenced snippet of the README and the docs site is checked against the code it shows.

Python blocks are executed, each as a module of its own (a `# starts Spark` block: its imports;
a `# sketch` block, an outline with elisions, is not run, and must say so on its first line).
YAML blocks are read by the reader the document is written for: a pipeline, run settings, a
planning file, a bench file, a graph, or a pipeline's parts. Command lines that call `elastream`
are parsed by the CLI's own parser; scripts, benchmarks and test paths they name must exist.
The pipeline pages (docs/pipeline*.md), docs/python.md and the Spark runtime's pages
(docs/runtime*.md) have their own, stricter checks (test_docs_examples.py).
"""

from __future__ import annotations

import contextlib
import glob
import io
import re
import shlex
from pathlib import Path

import pytest
import yaml
from support.docs import blocks, run_block
from support.paths import ROOT

from elastream.cli import build_parser
from elastream.config import RunConfig
from elastream.experiments.bench.scenario import BenchFile
from elastream.model.endpoints import SinkSpec, SourceSpec
from elastream.model.pipeline import OperatorSpec, pipeline_from_dict
from elastream.placement.yaml_io import parse_planning
from elastream.service.graphs import load_graph_yaml

CHECKED_ELSEWHERE = {
    "pipeline-yaml.md",
    "pipeline-fields.md",
    "pipeline-operators.md",
    "pipeline-errors.md",
    "python.md",
    "runtime.md",
    "runtime-internals.md",
    "runtime-control.md",
    "runtime-store.md",
}
DOCS = sorted(
    p
    for p in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    if p.name not in CHECKED_ELSEWHERE
)
SKETCH = "# sketch"


def collect(*langs: str) -> list[tuple[Path, int, str]]:
    return [(doc, line, text) for doc in DOCS for lang in langs for line, text in blocks(doc, lang)]


def where(block: tuple[Path, int, str]) -> str:
    return f"{block[0].relative_to(ROOT)}:{block[1]}"


PYTHON = collect("python")
YAML = collect("yaml")
SHELL = collect("bash", "sh")


@pytest.mark.parametrize("block", PYTHON, ids=where)
def test_python_snippet_runs(block, tmp_path, monkeypatch):
    doc, line, text = block
    if text.startswith(SKETCH):
        return
    monkeypatch.chdir(tmp_path)
    run_block(doc, line, text, monkeypatch)


def read_yaml_snippet(text: str, tmp_path: Path) -> object:
    """Read a YAML snippet with the reader its document is for; returns what it read."""
    data = yaml.safe_load(text)
    if isinstance(data, list):  # a list of operators
        return [OperatorSpec.model_validate(op) for op in data]
    assert isinstance(data, dict), data
    if "nodes" in data:
        return parse_planning(data, "planning.yaml")
    if "operators" in data and "streams" in data:
        return pipeline_from_dict(data, "snippet.yaml")
    if set(data) == {"operators"}:
        return [OperatorSpec.model_validate(op) for op in data["operators"]]
    if "components" in data:
        path = tmp_path / "graph.yaml"
        path.write_text(text)
        return load_graph_yaml(path)
    if "scenarios" in data:
        return BenchFile.model_validate(data)
    if "scrape_configs" in data:  # Prometheus' own file: only its YAML is ours to check
        return data
    if set(data) <= {"sources", "sinks"}:
        return [SourceSpec.model_validate(s) for s in data.get("sources", [])] + [
            SinkSpec.model_validate(s) for s in data.get("sinks", [])
        ]
    return RunConfig.model_validate(data)


@pytest.mark.parametrize("block", YAML, ids=where)
def test_yaml_snippet_reads(block, tmp_path):
    _, _, text = block
    if text.startswith(SKETCH):
        return
    assert read_yaml_snippet(text, tmp_path)


def command_lines(text: str) -> list[str]:
    """The block's commands: continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    lines = []
    for raw in joined.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def elastream_args(line: str) -> list[str] | None:
    """The arguments of an `elastream ...` command line, optional `[...]` parts included."""
    words = shlex.split(line.replace("[", " ").replace("]", " "))
    while words and "=" in words[0] and not words[0].startswith("-"):
        words.pop(0)  # VAR=value prefixes
    if not words or not words[0].endswith("elastream"):
        return None
    return [w for w in words[1:] if w != "..."]


def named_paths(line: str) -> list[str]:
    """Scripts, benchmarks and tests of this repository a command line names."""
    return re.findall(r"(?<![\w/])((?:scripts|benchmarks|tests)/[\w*./-]+\.(?:py|sh|yaml))", line)


@pytest.mark.parametrize("block", SHELL, ids=where)
def test_command_lines_parse(block):
    _, _, text = block
    parser = build_parser()
    for line in command_lines(text):
        for path in named_paths(line):
            assert glob.glob(str(ROOT / path)), f"{where(block)}: {path} does not exist"
        args = elastream_args(line)
        if args is None:
            continue
        with contextlib.redirect_stderr(io.StringIO()) as err:
            try:
                parser.parse_args(args)
            except SystemExit as exc:
                pytest.fail(f"{where(block)}: `elastream {' '.join(args)}`: {err.getvalue()}")
                raise AssertionError from exc


def test_the_snippets_are_found_and_most_run():
    sketches = [b for b in PYTHON + YAML if b[2].startswith(SKETCH)]
    assert len(PYTHON) >= 8 and len(YAML) >= 15 and len(SHELL) >= 10
    assert len(sketches) <= (len(PYTHON) + len(YAML)) // 3, [where(b) for b in sketches]
