"""Seeded random ODRP instances, and the `random:nodes=...,operators=...,seed=...` spec."""

from __future__ import annotations

import numpy as np

from elastream.placement.model import (
    Application,
    Infrastructure,
    LinkOverride,
    LinkSpec,
    NodeSpec,
    OperatorSpec,
    PlacementError,
    StreamSpec,
)

SPEC_KEYS = {
    "nodes": int,
    "operators": int,
    "seed": int,
    "candidates": int,
    "kmax": int,
    "resources": int,
    "rate": float,
}


def parse_spec(spec: str) -> dict[str, float]:
    """`random:nodes=6,operators=5,seed=1[,candidates=4,kmax=3,resources=8,rate=50]`."""
    kind, _, body = spec.partition(":")
    if kind != "random":
        raise PlacementError(f"unknown generator {kind!r} in {spec!r}: use random:nodes=..,..")
    params: dict[str, float] = {}
    for item in filter(None, body.split(",")):
        key, eq, value = item.partition("=")
        if not eq or key.strip() not in SPEC_KEYS:
            raise PlacementError(f"{spec!r}: bad item {item!r}; keys: {', '.join(SPEC_KEYS)}")
        try:
            params[key.strip()] = SPEC_KEYS[key.strip()](value)
        except ValueError as exc:
            raise PlacementError(f"{spec!r}: {key} must be a number, got {value!r}") from exc
    for key in ("nodes", "operators"):
        if key not in params:
            raise PlacementError(f"{spec!r}: {key}=... is required")
    return params


def random_instance(
    nodes: int,
    operators: int,
    seed: int = 0,
    candidates: int | None = None,
    kmax: int = 3,
    resources: int = 8,
    rate: float = 50.0,
) -> tuple[Application, Infrastructure]:
    """A random DAG (one pinned source) on a random heterogeneous fully connected cluster."""
    if nodes < 1 or operators < 1:
        raise PlacementError("random instance: nodes and operators must be >= 1")
    rng = np.random.default_rng(seed)
    names = [f"n{u}" for u in range(nodes)]
    node_specs = tuple(
        NodeSpec(
            name=names[u],
            resources=float(rng.integers(max(1, resources // 2), resources + 1)),
            speedup=float(np.round(rng.uniform(0.7, 1.5), 2)),
            availability=float(rng.choice([1.0, 0.999, 0.99, 0.98])),
        )
        for u in range(nodes)
    )
    links = tuple(
        LinkOverride(
            src=names[u],
            dst=names[v],
            delay_ms=float(np.round(rng.uniform(1.0, 30.0), 1)),
            availability=float(rng.choice([1.0, 1.0, 0.999])),
            cost=float(np.round(rng.uniform(0.0, 0.02), 4)),
        )
        for u in range(nodes)
        for v in range(u + 1, nodes)
    )
    infra = Infrastructure(nodes=node_specs, default_link=LinkSpec(delay_ms=20.0), links=links)
    return _random_app(rng, operators, names, candidates, kmax, rate), infra


def _random_app(
    rng: np.random.Generator,
    operators: int,
    names: list[str],
    candidates: int | None,
    kmax: int,
    rate: float,
) -> Application:
    """Operator 0 is a pinned source; each later operator reads one or two earlier ones."""
    streams, loads = [], [rate]
    for j in range(1, operators):
        parents = {int(rng.integers(0, j))}
        if j > 1 and rng.random() < 0.3:
            parents.add(int(rng.integers(0, j)))
        load = 0.0
        for i in sorted(parents):
            sel = float(np.round(rng.uniform(0.5, 1.5), 2))
            streams.append(
                StreamSpec(
                    src=f"op{i}",
                    dst=f"op{j}",
                    selectivity=sel,
                    bytes_per_tuple=float(rng.integers(1, 10)),
                )
            )
            load += sel * loads[i]
        loads.append(load)
    ops = []
    for i, load in enumerate(loads):
        pinned = i == 0
        k = 1 if pinned else kmax
        need = float(rng.uniform(0.4, 1.6)) if not pinned else 0.5
        mu = max(load / need, 1.15 * load / k)
        if candidates is None and not pinned:
            cand = None
        else:
            size = 1 if pinned else min(candidates or len(names), len(names))
            cand = tuple(str(n) for n in rng.choice(names, size=size, replace=False))
        ops.append(
            OperatorSpec(
                name=f"op{i}",
                service_rate=float(np.round(mu, 3)),
                max_replicas=k,
                candidates=cand,
                source_rate=rate if i == 0 else None,
            )
        )
    return Application(operators=tuple(ops), streams=tuple(streams))
