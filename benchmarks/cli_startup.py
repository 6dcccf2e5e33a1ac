"""How long does `elastream --version` take, against the interpreter starting and doing nothing?

Runs each command `--repeat` times in turn (from a temporary folder, so the tree's files play no
part) and prints the median wall time of each, their ratio and the load average (no asserts; the
target is ≤ 0.3 s for `elastream --version`). Usage:
    .venv/bin/python benchmarks/cli_startup.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from elastream.report.progress import add_quiet, steps

BIN = Path(sys.executable).parent


def wall_s(command: list[str], cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each command (default 5)")
    add_quiet(parser)
    args = parser.parse_args()
    commands = {
        "python -c pass (baseline)": [sys.executable, "-c", "pass"],
        "elastream --version": [str(BIN / "elastream"), "--version"],
        "elastream run --help": [str(BIN / "elastream"), "run", "--help"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory() as cwd:
        # interleaved: a burst of load hits every command alike
        for _ in steps(range(args.repeat), "rounds", quiet=args.quiet, label=False):
            for name, command in commands.items():
                times[name].append(wall_s(command, cwd))
    baseline = statistics.median(times["python -c pass (baseline)"])
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {args.repeat} runs each")
    for name, runs in times.items():
        median = statistics.median(runs)
        spread = ", ".join(f"{t:.3f}" for t in sorted(runs))
        print(f"{name:28} median {median:.3f} s  ({median / baseline:.1f}× baseline; {spread})")


if __name__ == "__main__":
    main()
