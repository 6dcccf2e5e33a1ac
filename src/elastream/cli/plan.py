"""`elastream plan [PIPELINE] --infra INFRA.yaml`: optimal replication and placement (ODRP)."""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from elastream.placement.model import METRICS, PlacementError, Weights

SOLVER_CHOICES = ("exact", "compact", "heuristic", "brute")


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pipeline", type=Path, nargs="?", help="pipeline YAML file (topology)")
    parser.add_argument(
        "--infra",
        required=True,
        help="planning YAML (nodes, links, operator attributes) "
        "or random:nodes=N,operators=M,seed=S",
    )
    parser.add_argument(
        "--weights",
        default="r=1",
        help="SAW weights summing to 1, e.g. r=0.25,a=0.25,c=0.25,z=0.25",
    )
    parser.add_argument("--metric", choices=METRICS, default="T", help="network metric Z")
    parser.add_argument(
        "--solver",
        choices=SOLVER_CHOICES,
        default="compact",
        help="exact = the paper's ILP (Eq. 22-32); compact; heuristic; brute",
    )
    parser.add_argument("--time-limit", type=float, default=60.0, help="solver limit, seconds")
    parser.add_argument("--gap", type=float, default=1e-6, help="relative MIP gap accepted")
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object (the only output on stdout)"
    )
    parser.set_defaults(handler=handle)


def parse_weights(text: str) -> Weights:
    """`r=0.5,c=0.5` -> Weights; unnamed weights are 0."""
    values: dict[str, float] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = item.partition("=")
        if not eq or key not in ("r", "a", "c", "z"):
            raise PlacementError(f"--weights: bad item {item!r}; use r=..,a=..,c=..,z=..")
        try:
            values[key] = float(value)
        except ValueError as exc:
            raise PlacementError(f"--weights: {key} must be a number, got {value!r}") from exc
    try:
        return Weights(**values)
    except ValueError as exc:
        raise PlacementError(f"--weights: {exc}") from exc


def handle(args: argparse.Namespace) -> int:
    from elastream.placement.service import plan
    from elastream.placement.yaml_io import load_request

    request = load_request(
        args.infra,
        args.pipeline,
        parse_weights(args.weights),
        metric=args.metric,
        solver=args.solver,
        time_limit_s=args.time_limit,
        gap=args.gap,
    )
    with native_stdout_to_stderr():
        result = plan(request, clock=time.perf_counter)
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


@contextmanager
def native_stdout_to_stderr() -> Iterator[None]:
    """Send what native code writes to file descriptor 1 to stderr while the body runs.

    HiGHS prints its banner to stdout when a process makes its first `Highs()`, before any
    option (`output_flag`, set off in milp.py) can be set; so stdout holds only our output.
    C's stdout buffer is flushed before fd 1 is restored, so nothing it held leaks out later.
    """
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        ctypes.CDLL(None).fflush(None)
        os.dup2(saved, 1)
        os.close(saved)


def render(result: dict[str, Any]) -> str:
    """The plan as text: replicas and nodes per operator, every metric, F and the solve time."""
    width = max(len(op) for op in result["placement"])
    lines = [f"{'operator':<{width}}  replicas  nodes"]
    for op, nodes in result["placement"].items():
        lines.append(f"{op:<{width}}  {len(nodes):>8}  {', '.join(nodes)}")
    m = result["metrics"]
    lines += [
        "",
        f"R  = {m['R']:.3f} ms   C  = {m['C']:.4g}   A  = {m['A']:.6f}",
        f"T  = {m['T']:.4g}   N  = {m['N']:.4g}   EE = {m['EE']:.4g}",
        f"F  = {result['objective']:.6f}  ({result['solver']}, {result['status']}, "
        + (f"{result['variables']} variables, " if result["variables"] else "")
        + f"solved in {result['solve_s']:.3f} s)",
    ]
    return "\n".join(lines)
