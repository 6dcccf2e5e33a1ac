"""The commands docs/results.md and README.md give for their figures run as written: each with
small arguments appended (the figure is not checked, the exit status is), or, where even a
small run takes minutes or a cluster, parsed as written: the script runs until its arguments
are parsed, then stops with exit 0 (an unknown option, a bad value or an import error fails)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import ROOT, SHARED_DATA

DOCS = ("docs/results.md", "README.md")
# a code span that is a command: [nice -n N] [.venv/bin/python] benchmarks/NAME.py ..., or
# elastream bench|demo ... (run from the repository's root); scripts/*.sh and pytest commands
# are CI's own
COMMAND = re.compile(
    r"^(?:nice -n \d+ )?(?:\.venv/bin/python )?(benchmarks/\w+\.py|elastream (?:bench|demo))\b"
)
# One Python process that runs each command of a JSON list (argv lists) until its argparse
# parser has parsed it, then goes on to the next: {command: [exit status, what it wrote to
# stderr]} on stdout (the scripts' imports are paid once)
PARSE_ONLY = """
import argparse, contextlib, io, json, os, runpy, sys
parse = argparse.ArgumentParser.parse_args
def parsed(self, args=None, namespace=None):
    parse(self, args, namespace)
    raise SystemExit(0)
argparse.ArgumentParser.parse_args = parsed
results = {}
for argv in json.loads(sys.argv[1]):
    sys.argv, err = list(argv), io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            if argv[0] == "elastream":
                runpy.run_module("elastream.cli", run_name="__main__", alter_sys=True)
            else:
                sys.path.insert(0, os.path.dirname(argv[0]))
                runpy.run_path(argv[0], run_name="__main__")
        code = "returned without parsing its arguments"
    except SystemExit as stop:
        code = stop.code or 0
    except BaseException as exc:
        code = repr(exc)
    results[" ".join(argv)] = [code, err.getvalue()[-2000:]]
print(json.dumps(results))
"""
# How each documented script is run: ("run", small arguments appended, the last value of an
# option winning) or ("parse", why a small run is not made). Spark's start alone is 10-20 s
# here, and each Spark benchmark runs several pipelines: those are parsed, not run, to keep CI
# within its time.
WAYS: dict[str, tuple[str, tuple[str, ...] | str]] = {
    "benchmarks/io_speed.py": ("parse", "Spark: ingest and pass-through runs, minutes"),
    "benchmarks/layouts.py": ("parse", "Spark: several pipelines per part, minutes"),
    "benchmarks/long_traces.py": ("parse", "a month-long trace per case, minutes even --quick"),
    "benchmarks/leasing_reproduce.py": ("parse", "360 simulated runs, minutes even at 1 seed"),
    "benchmarks/unbounded_stop.py": ("parse", "Spark: a run, a SIGTERM and a resume"),
    "benchmarks/backpressure.py": ("parse", "Spark with Redis, an overload and its recovery"),
    "benchmarks/chaos_soak.py": (
        "parse",
        "Spark on a cluster for 30 min; CI runs its short form (test_spark_chaos_soak.py)",
    ),
    "benchmarks/modeling_backtests.py": ("parse", "every real trace, minutes even at 1 origin"),
    "benchmarks/spark_objective.py": ("parse", "Spark: two runs of the demo trace"),
    "benchmarks/objective_table.py": ("parse", "every policy on 8 day-long traces at two bounds"),
    "benchmarks/objective_diagnose.py": ("parse", "a trace's objective runs and misses, 2 min"),
    "benchmarks/plain_vs_elastream.py": (
        "parse",
        "Spark: five cases over a million rows, minutes; CI runs a small one "
        "(test_spark_plain_vs_elastream.py)",
    ),
    "benchmarks/spark_policies.py": ("parse", "Spark: three policies on the demo trace"),
    "benchmarks/sim_speed.py": ("parse", "an hour of a 10-operator pipeline per case"),
    "benchmarks/psps_reproduce.py": ("parse", "43 simulated runs (7 min), no smaller form"),
    "benchmarks/placement_speed.py": ("parse", "repeated solves of a 55,813-variable ILP"),
    "benchmarks/decentral_reproduce.py": ("parse", "the paper's four runs, no smaller form"),
    "benchmarks/throughput.py": ("parse", "Spark: a rate ladder, 10-40 min"),
    "benchmarks/spark_floor.py": ("parse", "Spark: 45 s per case"),
    "benchmarks/task_cost.py": ("parse", "Spark: probes of a Python source, 2 min"),
    "benchmarks/long_run_memory.py": ("parse", "Spark: 30 minutes"),
    "benchmarks/executor_leasing.py": ("parse", "Spark on a standalone cluster"),
    "benchmarks/dynamic_allocation.py": ("parse", "Spark on a standalone cluster, 2 x 22 min"),
    "benchmarks/caladrius_gatsby.py": ("parse", "Spark: word-count runs, 25 min"),
    "benchmarks/state_rescale.py": ("parse", "Spark: rescales at 10^4 and 10^6 keys"),
    "benchmarks/run_startup.py": ("parse", "Spark: three starts per round, 5 min"),
    "elastream demo": ("parse", "Spark: the 180 s demo trace, about 4 min"),
    "elastream bench": ("parse", "four policies on six simulated workloads, minutes"),
}


def documented() -> list[str]:
    """Every command of DOCS (code spans outside fenced blocks, joined across line breaks), once,
    in order."""
    found: dict[str, None] = {}
    for doc in DOCS:
        text = re.sub(r"^```.*?^```$", "", (ROOT / doc).read_text(), flags=re.M | re.S)
        for span in re.findall(r"`([^`]+)`", text):
            command = " ".join(span.split())
            if COMMAND.match(command) and not command.startswith("elastream run: error"):
                found[command] = None
    return list(found)


def way(command: str) -> str:
    """The WAYS key of a command: its script, or `elastream SUBCOMMAND`."""
    words = shlex.split(COMMAND.sub(lambda m: m.group(1), command, count=1))
    return " ".join(words[:2]) if words[0] == "elastream" else words[0]


def test_every_documented_command_has_a_way_and_every_way_a_command():
    ways = {way(c) for c in documented()}
    assert ways == set(WAYS)


def argv(command: str, tmp: Path | None = None) -> list[str]:
    """The command's words from its script (or `elastream`) on, the shared data's path as this
    checkout finds it; with `tmp`, its small arguments of WAYS appended."""
    words = shlex.split(COMMAND.sub(lambda m: m.group(1), command, count=1))
    words = [w.replace("../shared/data", str(SHARED_DATA)) for w in words]
    kind, extra = WAYS[way(command)]
    if kind == "run" and tmp is not None:
        words += [w.replace("{tmp}", str(tmp)) for w in extra]
    return words


@pytest.fixture(scope="module")
def parsed() -> dict[str, list]:
    """Each command of WAYS' "parse" kind, parsed as written in one process."""
    commands = [argv(c) for c in documented() if WAYS[way(c)][0] == "parse"]
    done = subprocess.run(
        [sys.executable, "-c", PARSE_ONLY, json.dumps(commands)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("command", documented())
def test_a_documented_command_runs_as_written(command, parsed, tmp_path):
    words = argv(command, tmp_path)
    if WAYS[way(command)][0] == "parse":
        code, stderr = parsed[" ".join(words)]
        assert code == 0, (command, code, stderr)
        return
    if words[0] == "elastream":
        words = ["-m", "elastream.cli", *words[1:]]
    done = subprocess.run([sys.executable, *words], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])


def test_every_benchmark_script_and_scenario_is_in_the_benchmarks_index():
    """benchmarks/README.md names every script and scenario file of benchmarks/ as a code span,
    and names none that is gone."""
    index = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    files = {p.name for p in (ROOT / "benchmarks").iterdir() if p.suffix in (".py", ".yaml")}
    named = set(re.findall(r"`(\w+\.(?:py|yaml))`", index))
    assert files - named == set(), "not in benchmarks/README.md"
    gone = {name for name in named - files if name != "placement_spike.py"}  # said removed
    assert gone == set(), "named in benchmarks/README.md, not in benchmarks/"
