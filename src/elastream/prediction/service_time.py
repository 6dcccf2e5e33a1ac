"""Per-event service-time variance from micro-batch shares (our estimator, not the paper's)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from elastream.prediction.graph import ModelError


@dataclass(frozen=True)
class ShareSums:
    """The sums Eq. V3 needs over the shares with at least one event: their count k, Σ n_j,
    Σ b_j (s) and Σ b_j²/n_j (s²)."""

    shares: int
    events: int
    busy_s: float
    busy_sq_per_event: float

    @classmethod
    def of(cls, shares: Iterable[tuple[int, float]]) -> ShareSums:
        """From (n_j, b_j) pairs; shares without events are left out (m_j is undefined)."""
        k = n_sum = 0
        b_sum = q_sum = 0.0
        for j, (n, b) in enumerate(shares):
            if n < 0 or not b >= 0:
                raise ModelError(f"share {j}: events must be ≥ 0 and busy_s ≥ 0, got ({n}, {b})")
            if n > 0:
                k += 1
                n_sum += n
                b_sum += b
                q_sum += b * b / n
        return cls(k, n_sum, b_sum, q_sum)


def service_time_variance(sums: ShareSums) -> float | None:
    """σ̂², the variance of one event's service time in s², from a window's shares; None with
    fewer than 2 shares. Our estimator, not Caladrius' (docs/modeling-models.md, "The metrics
    history").

    A micro-batch runtime does not time single events: it records per share j (one replica's
    part of one micro-batch) its events n_j and busy seconds b_j. The share's per-event mean is
    m_j = b_j/n_j; if events take independent times of mean μ and variance σ², then
    Var(m_j) = σ²/n_j (Eq. V1). Weighting each share by n_j (its inverse variance, up to σ²),
        μ̂ = Σ b_j / Σ n_j,  σ̂² = Σ n_j (m_j − μ̂)² / (k − 1)                     (Eq. V2)
    is unbiased for σ² over k ≥ 2 shares (the between-groups mean square of a one-way analysis
    of variance). Since Σ n_j (m_j − μ̂)² = Σ b_j²/n_j − (Σ b_j)²/Σ n_j (Eq. V3), a store keeps
    k, Σ n_j, Σ b_j and Σ b_j²/n_j per replica and window instead of every share.
    """
    if sums.shares < 2:
        return None
    between = sums.busy_sq_per_event - sums.busy_s**2 / sums.events  # Eq. V3
    return max(between, 0.0) / (sums.shares - 1)  # Eq. V2 (≥ 0: rounding can dip below)
