"""CPU load ψ = CPU / input rate (Caladrius V-E), its per-micro-batch term and the host's
core-capacity term (both beyond the paper)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from elastream.prediction.graph import MeasuredPoint, ModelError


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


@dataclass(frozen=True)
class BatchCpuModel:
    """Eq. C1: CPU = κ · batches/s + ψ · input rate (cores). A micro-batch costs its replica κ
    CPU seconds whatever it holds (reading the plan and the share, the commit's preparation),
    each event ψ more. V-E's ψ alone is Eq. C1 with κ = 0."""

    kappa: float  # CPU seconds per micro-batch with events
    psi: float  # CPU seconds per event

    def cpu(self, input_rate: float, batch_rate: float) -> float:
        """Eq. C1 at a replica's input rate (events/s) and micro-batch rate (batches/s)."""
        return self.kappa * batch_rate + self.psi * input_rate


def _nonnegative_fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least squares y ≈ x·(a, b) for two columns; a coefficient that comes out negative is
    set to 0 and the other refitted alone (a cost is never negative)."""
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    if coef.min() >= 0:
        return float(coef[0]), float(coef[1])
    keep = int(np.argmax(coef))
    column = x[:, keep]
    alone = float(np.dot(column, y) / np.dot(column, column))
    return (alone, 0.0) if keep == 0 else (0.0, alone)


def fit_batch_cpu(points: Sequence[MeasuredPoint], what: str = "component") -> BatchCpuModel | None:
    """Eq. C1 by least squares through 0 over the points that carry both CPU and a batch rate
    (κ, ψ ≥ 0). None when fewer than two such points."""
    usable = [p for p in points if p.cpu is not None and p.batch_rate is not None]
    if len(usable) < 2:
        return None
    x = np.array([[p.batch_rate, p.input_rate] for p in usable], dtype=float)
    if not np.any(x[:, 1] > 0):
        raise ModelError(f"{what}: CPU measured only at zero input rate; ψ is undefined")
    kappa, psi = _nonnegative_fit(x, np.array([p.cpu for p in usable], dtype=float))
    return BatchCpuModel(kappa=kappa, psi=psi)


def platform_psi(run_cores: float, operator_cores: float, source_rate: float) -> float:
    """Eq. C2: the CPU a run spends outside its operators' code (the engine's JVM, the Python
    workers' plumbing and store writes, the driver) per event entering the pipeline, ψ_P =
    (its processes' CPU − its operators' measured CPU) / source rate, in CPU seconds. With it
    the host's cap on the source rate is C / (Σ_c ψ_c·g_c + ψ_P) (Eq. C3, `core_capped_rate`)."""
    if not source_rate > 0:
        raise ModelError(f"platform CPU: the source rate must be > 0, got {source_rate}")
    return max(0.0, run_cores - operator_cores) / source_rate


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
