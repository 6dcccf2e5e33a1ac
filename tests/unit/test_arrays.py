"""Distinct values by sorting (base/arrays.py) give what `np.unique` gives, on random integer
arrays with repeats, sorted input, empty and one-element arrays; with weights, the sum per value;
and the latency histograms built on them."""

import numpy as np
import pytest

from elastream.base.arrays import distinct, distinct_counts

CASES = [
    np.random.default_rng(1).integers(0, 50, 1_000),  # many repeats
    np.random.default_rng(2).permutation(10_000),  # none
    np.arange(-5, 5),  # sorted already, negative values
    np.array([7]),
    np.array([], np.int64),
    np.array([3.5, 1.0, 3.5, 2.0]),  # bin edges (floats) too
]


@pytest.mark.parametrize("values", CASES, ids=range(len(CASES)))
def test_distinct_is_numpys_unique(values):
    assert np.array_equal(distinct(values), np.unique(values))


@pytest.mark.parametrize("values", CASES, ids=range(len(CASES)))
def test_distinct_counts_are_numpys(values):
    expected_values, expected_counts = np.unique(values, return_counts=True)
    got_values, got_counts = distinct_counts(values)
    assert np.array_equal(got_values, expected_values)
    assert np.array_equal(got_counts, expected_counts)
    assert got_counts.sum() == len(values)


@pytest.mark.parametrize("values", CASES, ids=range(len(CASES)))
def test_weighted_counts_are_sums_per_value(values):
    weights = np.random.default_rng(3).integers(1, 9, len(values))
    expected: dict = {}
    for value, weight in zip(values.tolist(), weights.tolist(), strict=True):
        expected[value] = expected.get(value, 0) + weight
    got_values, got_sums = distinct_counts(values, weights)
    assert got_values.tolist() == sorted(expected)
    assert got_sums.tolist() == [expected[v] for v in sorted(expected)]


def test_latencies_with_counts_fold_into_the_bins_of_single_latencies():
    """latency_histogram_of (seconds with counts) folds as latency_histogram folds each latency
    repeated its count of times (in ms), and as a hand-written ceiling per bin."""
    import math

    from elastream.model.metrics import latency_histogram, latency_histogram_of

    rng = np.random.default_rng(4)
    seconds = np.round(rng.uniform(0, 3, 200), 4).tolist()
    counts = dict(zip(seconds, rng.integers(1, 5, len(seconds)).tolist(), strict=False))
    for resolution in (1.0, 10.0, 250.0):
        by_hand: dict[float, int] = {}
        for s, n in counts.items():
            edge = math.ceil(s * 1000.0 / resolution) * resolution
            by_hand[edge] = by_hand.get(edge, 0) + n
        repeated = [s * 1000.0 for s, n in counts.items() for _ in range(n)]
        assert latency_histogram_of(counts, resolution) == tuple(sorted(by_hand.items()))
        assert latency_histogram(repeated, resolution) == tuple(sorted(by_hand.items()))
    assert latency_histogram_of({}) == ()
