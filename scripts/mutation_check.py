"""Mutation check: flip one comparison, arithmetic or boolean operator (or swap min and max) at a
time in the given modules (or functions of them) and run the given tests against each mutant; a
mutant the tests pass is a survivor (a change no test notices). Prints each and the kill rate.

The mutants are written to a copy of src/ put first on PYTHONPATH (the worktree is not touched;
subprocesses the tests start see the mutant too); with --jobs N, N mutants run at once.

    .venv/bin/python scripts/mutation_check.py \\
        src/elastream/control/guards.py \\
        src/elastream/runtime/queues/records.py:build_audit \\
        --tests tests/unit/test_guards_and_policies.py tests/unit/test_queue_contract.py \\
        [--pytest-args "-k audit"] [--jobs 2] [--json OUT.json]

A target is PATH (every function in it) or PATH:NAME[,NAME...] (those functions or methods,
nested ones included). Exit status: 0, or 1 when the unmutated tests fail (no verdict then).
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# operator -> its mutant: boundaries moved, tests negated, arithmetic inverted, and/or swapped
FLIPS = {
    "<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==",
    "is": "is not", "is not": "is", "in": "not in", "not in": "in",
    "+": "-", "-": "+", "*": "/", "/": "*", "//": "*", "%": "*", "**": "*",
    "+=": "-=", "-=": "+=", "*=": "/=", "/=": "*=",
    "and": "or", "or": "and", "not": "", "u-": "", "min": "max", "max": "min",
}  # fmt: skip


@dataclass(frozen=True)
class Mutant:
    """One operator flipped: where (path, line, column span), from what to what."""

    path: str
    line: int
    start: int  # column of the operator's first token
    end: int  # column just past its last token (on `line`)
    before: str
    after: str
    function: str
    text: str  # the source line, unmutated


@dataclass
class Outcome:
    mutant: Mutant
    killed: bool
    seconds: float
    how: str  # the tests failed / timed out / passed (survived)


def functions(tree: ast.AST, names: set[str] | None) -> list[ast.AST]:
    """The (async) functions of `tree` named in `names` (all of them when None), outermost."""
    found: list[ast.AST] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) and (
                names is None or child.name in names
            ):
                found.append(child)
            else:
                visit(child)

    visit(tree)
    return found


def operator_tokens(source: str) -> list[tokenize.TokenInfo]:
    return [
        t for t in tokenize.generate_tokens(io.StringIO(source).readline)
        if t.type in (tokenize.OP, tokenize.NAME)
    ]  # fmt: skip


def pos(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset


def end(node: ast.AST) -> tuple[int, int]:
    return node.end_lineno, node.end_col_offset


def between(tokens: list[tokenize.TokenInfo], a: tuple[int, int], b: tuple[int, int]) -> list:
    """Operator tokens that start at or after position `a` and end at or before `b`."""
    return [t for t in tokens if t.start >= a and t.end <= b]


def mutants(path: Path, names: set[str] | None) -> list[Mutant]:
    """Every operator of the chosen functions of `path` with a flip in FLIPS."""
    source = path.read_text()
    tree = ast.parse(source)
    tokens = operator_tokens(source)
    lines = source.splitlines()
    found: dict[tuple[int, int], Mutant] = {}

    def add(function: str, toks: list[tokenize.TokenInfo], op: str) -> None:
        toks = [t for t in toks if t.string not in ("(", ")")]
        if not toks or op not in FLIPS or toks[0].start[0] != toks[-1].end[0]:
            return
        line, start = toks[0].start
        text = lines[line - 1]
        before = text[start : toks[-1].end[1]]
        after = FLIPS[op]
        found[(line, start)] = Mutant(
            str(path.relative_to(ROOT)), line, start, toks[-1].end[1], before, after, function,
            text.strip(),
        )  # fmt: skip

    for fn in functions(tree, names):
        for node in ast.walk(fn):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                for left, right in pairwise(operands):
                    toks = between(tokens, end(left), pos(right))
                    add(fn.name, toks, " ".join(t.string for t in toks if t.string not in "()"))
            elif isinstance(node, ast.BinOp):
                toks = between(tokens, end(node.left), pos(node.right))
                add(fn.name, toks, "".join(t.string for t in toks if t.string not in "()"))
            elif isinstance(node, ast.AugAssign):
                toks = between(tokens, end(node.target), pos(node.value))
                add(fn.name, toks, "".join(t.string for t in toks))
            elif isinstance(node, ast.BoolOp):
                for left, right in pairwise(node.values):
                    toks = between(tokens, end(left), pos(right))
                    add(fn.name, toks, "".join(t.string for t in toks if t.string not in "()"))
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
                toks = between(tokens, pos(node), pos(node.operand))
                op = "not" if isinstance(node.op, ast.Not) else "u-"
                add(fn.name, toks[:1], op)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                add(fn.name, between(tokens, pos(node.func), end(node.func)), node.func.id)
    return sorted(found.values(), key=lambda m: (m.path, m.line, m.start))


def mutated(source: str, m: Mutant) -> str:
    """`source` with mutant `m` in place (a removed `not` takes its space along)."""
    lines = source.splitlines(keepends=True)
    text = lines[m.line - 1]
    end = m.end + (m.before == "not" and text[m.end : m.end + 1] == " ")
    lines[m.line - 1] = text[: m.start] + m.after + text[end:]
    return "".join(lines)


class Worker:
    """A copy of src/ whose one file at a time holds a mutant."""

    def __init__(self, folder: Path) -> None:
        self.src = folder / "src"
        shutil.copytree(ROOT / "src", self.src, ignore=shutil.ignore_patterns("__pycache__"))

    def run(self, m: Mutant | None, tests: list[str], timeout_s: float) -> tuple[bool, str, float]:
        """(tests passed, how, seconds) with mutant `m` in place (None: unmutated)."""
        target = self.src / Path(m.path).relative_to("src") if m else None
        original = target.read_text() if target else ""
        if target:
            target.write_text(mutated(original, m))
        env = {**os.environ, "PYTHONPATH": str(self.src), "PYTHONDONTWRITEBYTECODE": "1"}
        # `-o pythonpath=`: pyproject's `pythonpath = ["src"]` would put the unmutated src/ before
        # PYTHONPATH (the first version of this script ran its tests against no mutant at all)
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
        cmd += ["-o", "pythonpath=", *tests]
        began = time.monotonic()
        try:
            done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, timeout=timeout_s)
            passed, how = done.returncode == 0, f"exit {done.returncode}"
            if done.returncode not in (0, 1):  # not a test failure: collection, usage, internal
                how += ": " + done.stdout.decode()[-300:].strip().replace("\n", " | ")
        except subprocess.TimeoutExpired:
            passed, how = False, f"timed out after {timeout_s:.0f} s"
        finally:
            if target:
                target.write_text(original)
        return passed, how, time.monotonic() - began


def targets(specs: list[str]) -> list[tuple[Path, set[str] | None]]:
    out = []
    for spec in specs:
        path, _, names = spec.partition(":")
        out.append(((ROOT / path).resolve(), set(names.split(",")) if names else None))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("targets", nargs="+", help="PATH or PATH:FUNCTION[,FUNCTION...] under src/")
    p.add_argument("--tests", nargs="+", required=True, help="pytest paths or node ids")
    p.add_argument("--pytest-args", default="", help="more pytest arguments, one string")
    p.add_argument("--jobs", type=int, default=1, help="mutants run at once")
    p.add_argument(
        "--timeout-factor",
        type=float,
        default=5.0,
        help="a mutant's tests time out at this many times the unmutated tests",
    )
    p.add_argument("--json", type=Path, help="write every outcome here")
    args = p.parse_args(argv)
    tests = [*args.tests, *shlex.split(args.pytest_args)]
    found = [m for path, names in targets(args.targets) for m in mutants(path, names)]
    with tempfile.TemporaryDirectory(prefix="mutation-") as tmp:
        workers = [Worker(Path(tmp) / f"w{i}") for i in range(max(1, args.jobs))]
        passed, how, base_s = workers[0].run(None, tests, timeout_s=3600)
        if not passed:
            print(f"the unmutated tests fail ({how}): no verdict", file=sys.stderr)
            return 1
        print(f"{len(found)} mutants; the unmutated tests take {base_s:.1f} s", flush=True)
        timeout_s = max(30.0, args.timeout_factor * base_s)
        free = list(workers)

        def one(m: Mutant) -> Outcome:
            worker = free.pop()
            try:
                ok, how, seconds = worker.run(m, tests, timeout_s)
            finally:
                free.append(worker)
            outcome = Outcome(m, killed=not ok, seconds=seconds, how="survived" if ok else how)
            mark = "killed  " if outcome.killed else "SURVIVED"
            print(f"{mark} {m.path}:{m.line} ({m.function}) {m.before!r} -> {m.after!r}: "
                  f"{m.text}  [{outcome.how}, {seconds:.1f} s]", flush=True)  # fmt: skip
            return outcome

        with ThreadPoolExecutor(len(workers)) as pool:
            outcomes = list(pool.map(one, found))
    killed = sum(o.killed for o in outcomes)
    print(f"\nkilled {killed} of {len(outcomes)} mutants "
          f"({100 * killed / max(len(outcomes), 1):.1f} %)")  # fmt: skip
    for o in outcomes:
        if not o.killed:
            m = o.mutant
            print(f"  survivor: {m.path}:{m.line} {m.before!r} -> {m.after!r}: {m.text}")
    if args.json:
        args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
