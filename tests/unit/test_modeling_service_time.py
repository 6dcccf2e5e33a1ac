"""The service-time variance estimator (Eq. V1–V3): hand-worked sums, bad input, and synthetic
shares with a known per-event variance."""

from __future__ import annotations

import numpy as np
import pytest

from elastream.prediction.graph import ModelError
from elastream.prediction.service_time import ShareSums, service_time_variance


def test_hand_worked_shares():
    # m = 0.1 and 0.15 s per event; μ̂ = 0.8/6; Σ n (m − μ̂)² = 2·(1/30)² + 4·(1/60)² = 1/300.
    sums = ShareSums.of([(2, 0.2), (4, 0.6), (0, 0.05)])  # a share without events is left out
    assert sums == ShareSums(2, 6, pytest.approx(0.8), pytest.approx(0.11))
    assert service_time_variance(sums) == pytest.approx(1 / 300)
    # three shares, k − 1 = 2: m = 0.1, 0.1, 0.4; μ̂ = 0.7/4 = 0.175;
    # Σ n (m − μ̂)² = 3·0.075² + 0.225² = 0.0675
    three = ShareSums.of([(1, 0.1), (2, 0.2), (1, 0.4)])
    assert service_time_variance(three) == pytest.approx(0.0675 / 2)


def test_equal_per_event_times_give_zero_and_one_share_gives_none():
    assert service_time_variance(ShareSums.of([(5, 0.05), (10, 0.1), (1, 0.01)])) == 0.0
    assert service_time_variance(ShareSums.of([(5, 0.05)])) is None
    assert service_time_variance(ShareSums.of([])) is None


def test_bad_shares_are_named():
    with pytest.raises(ModelError, match=r"share 1: .*got \(-1, 0.1\)"):
        ShareSums.of([(2, 0.2), (-1, 0.1)])
    with pytest.raises(ModelError, match="share 0"):
        ShareSums.of([(2, float("nan"))])


def synthetic_shares(rng, k, shape=4.0, scale=0.0025):
    """k shares of 1..50 events; each event takes a Gamma(shape, scale) time (independent), so
    a share of n events is busy Gamma(n·shape, scale) seconds. σ² = shape·scale²."""
    n = rng.integers(1, 51, size=k)
    return list(zip(n.tolist(), rng.gamma(n * shape, scale).tolist(), strict=True))


def test_recovers_a_known_variance_from_many_shares():
    rng = np.random.default_rng(7)
    sigma2 = 4.0 * 0.0025**2  # 2.5e-5 s²: a 10 ms mean with CV 0.5
    estimate = service_time_variance(ShareSums.of(synthetic_shares(rng, 20_000)))
    # relative standard error about sqrt(2 / k) = 1 %
    assert estimate == pytest.approx(sigma2, rel=0.05)


def test_is_unbiased_with_few_shares():
    # With k = 3 one estimate's standard deviation is about σ² itself: the mean of 2000 of
    # them is within 10 % (4.5 standard errors); dividing by k instead of k − 1 gives 2/3 of σ².
    rng = np.random.default_rng(11)
    sigma2 = 4.0 * 0.0025**2
    estimates = [service_time_variance(ShareSums.of(synthetic_shares(rng, 3))) for _ in range(2000)]
    assert np.mean(estimates) == pytest.approx(sigma2, rel=0.10)
