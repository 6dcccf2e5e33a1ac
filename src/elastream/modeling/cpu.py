"""CPU load ψ = CPU / input rate (Caladrius V-E) and the host's core-capacity term (beyond it)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from elastream.modeling.graph import MeasuredPoint, ModelError


def fit_psi(points: Sequence[MeasuredPoint], what: str = "component") -> float | None:
    """V-E: ψ = CPU load / input rate, least-squares slope through 0 (cores per event/s).

    None when no point carries a CPU measurement.
    """
    with_cpu = [p for p in points if p.cpu is not None]
    if not with_cpu:
        return None
    x = np.array([p.input_rate for p in with_cpu])
    y = np.array([p.cpu for p in with_cpu], dtype=float)
    denom = float(np.dot(x, x))
    if denom <= 0:
        raise ModelError(f"{what}: CPU measured only at zero input rate; ψ is undefined")
    return float(np.dot(x, y) / denom)


def predict_cpu(psi: float, input_rate: float) -> float:
    """V-E: estimated CPU load (cores) = ψ · predicted input rate."""
    return psi * input_rate


def core_capped_rate(rate: float, psi: float | None, cores: float | None) -> float:
    """Host capacity: a component alone cannot admit more than C/ψ events/s on C cores.

    Caladrius' p·T_i(t/p) assumes a core per instance; on a host with C cores the CPU-bound
    replicas beyond C add no throughput. None for ψ or C means no cap.
    """
    if psi is None or cores is None or psi <= 0:
        return rate
    if cores <= 0:
        raise ModelError(f"host cores must be > 0, got {cores}")
    return min(rate, cores / psi)


def effective_servers(
    parallelism: int, psi: float | None, service_time: float | None, cores: float | None
) -> float:
    """Replicas that can run at once: p, or C / (share of a busy replica spent on the CPU)."""
    if psi is None or service_time is None or cores is None or service_time <= 0:
        return float(parallelism)
    cpu_share = min(1.0, psi / service_time)
    if cpu_share <= 0:
        return float(parallelism)
    return min(float(parallelism), cores / cpu_share)
