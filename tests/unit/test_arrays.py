"""Distinct values by sorting (base/arrays.py) give what `np.unique` gives, on random integer
arrays with repeats, sorted input, empty and one-element arrays."""

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
