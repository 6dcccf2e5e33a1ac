"""The `--infra INFRA.yaml` options of `run` and `simulate`: S-ODRP (Alg. 1), a plan stage
(control/sodrp.py), replaces the scaling policy's counts (docs/placement.md)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from elastream.cli._renamed import add_old_option
from elastream.cli.plan import SOLVER_CHOICES, parse_weights


def add_sodrp_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("S-ODRP (ODRP Alg. 1 instead of --policy)")
    group.add_argument(
        "--infra",
        help="planning YAML (nodes, links, operator attributes, as `plan --infra`): enact the "
        "minimum-cost plan, measure a window, re-plan with the measured rates, enact it",
    )
    add_old_option(group, "--placement", "--infra", "infra")
    add_old_option(group, "--window", "--replan-window", "replan_window", type=float)
    group.add_argument(
        "--plan-weights",
        default="r=1",
        help="weights of the re-plan (as `plan --weights`; default r=1: fewest replicas)",
    )
    group.add_argument(
        "--plan-solver",
        choices=SOLVER_CHOICES,
        default="compact",
        help="solver of each re-plan (as `plan --solver`; default compact: the compact ILP on "
        "HiGHS)",
    )
    group.add_argument(
        "--replan-window",
        type=float,
        default=10.0,
        help="seconds measured before the re-plan (default 10)",
    )


def sodrp_stages(args: argparse.Namespace, place: bool) -> tuple[tuple[Any, ...], Any]:
    """(the run's plan stages, S-ODRP's report) for `--infra`; ((), None) without it."""
    if not args.infra:
        return (), None
    from elastream.control.sodrp import SodrpStage
    from elastream.placement.yaml_io import load_request

    request = load_request(
        args.infra,
        args.pipeline,
        parse_weights(args.plan_weights),
        solver=args.plan_solver,
    )
    stage = SodrpStage(request, args.replan_window, place)
    return (stage,), stage.report


def print_sodrp(report: Any, out: Path) -> None:
    """The two plans and what was measured, on stdout and in OUT/sodrp.json."""
    if report is None:
        return
    data = report.as_dict()
    path = out / "sodrp.json"
    path.write_text(json.dumps(data, indent=2))
    for stage in ("early", "final"):
        plan = data[stage]
        if plan is None:
            print(f"S-ODRP {stage} plan: none (the run ended within the measurement window)")
            continue
        print(f"S-ODRP {stage} plan (F = {plan['objective']:.4f}): {plan['placement']}")
    print(f"measured: {json.dumps(data['measured'])}")
    if data["saturated"]:
        print(f"saturated (demand above k x mu, planned at k): {json.dumps(data['saturated'])}")
    print(f"    sodrp: {path}")
