"""I/O: read a planning (infra) YAML file and a pipeline YAML file into a PlanRequest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from elastream.base import settings
from elastream.base.settings import SettingsError
from elastream.placement.generator import parse_spec, random_instance
from elastream.placement.model import Metric, PlacementError, PlanRequest, SolverName, Weights
from elastream.placement.spec import application_from, parse_planning


def read_yaml(path: Path, what: str) -> Any:
    """One YAML file through the settings reader: a missing file, bad YAML or a duplicate key is
    a PlacementError naming the file (and the line)."""
    if not path.is_file():
        raise PlacementError(f"{path}: no such file")
    try:
        return settings.read_yaml(path, what)
    except SettingsError as exc:
        raise PlacementError(str(exc)) from None


def load_request(
    infra: str,
    pipeline: Path | None,
    weights: Weights,
    *,
    metric: Metric = "T",
    solver: SolverName = "compact",
    time_limit_s: float = 60.0,
    gap: float = 1e-6,
) -> PlanRequest:
    """`infra` is a planning YAML path or a `random:nodes=..,operators=..,seed=..` spec."""
    common = {
        "weights": weights,
        "metric": metric,
        "solver": solver,
        "time_limit_s": time_limit_s,
        "gap": gap,
    }
    if infra.startswith("random:"):
        if pipeline is not None:
            raise PlacementError("a random infra generates its own application: omit PIPELINE")
        app, resources = random_instance(**parse_spec(infra))  # type: ignore[arg-type]
        return PlanRequest(application=app, infrastructure=resources, **common)
    plan_file = parse_planning(read_yaml(Path(infra), "planning file"), infra)
    topology = read_yaml(pipeline, "pipeline file") if pipeline is not None else None
    if topology is not None and not isinstance(topology, dict):
        raise PlacementError(f"{pipeline}: a pipeline file must be a mapping")
    app = application_from(plan_file, topology, infra)
    return PlanRequest(
        application=app,
        infrastructure=plan_file.infrastructure(),
        bounds=plan_file.bounds,
        **common,
    )
