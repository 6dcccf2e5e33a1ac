"""Synthetic workloads: determinism per seed and the statistical shape each generator promises."""

from __future__ import annotations

import numpy as np
import pytest

from elastream.workloads import GENERATORS, TraceError, demo_trace
from elastream.workloads.generators import (
    brownian,
    constant,
    randomwalk,
    sinusoid,
    spike,
    stepwise,
    twolevel,
)

RANDOM = {
    "spike": {"noise": 0.1},
    "sinusoid": {"noise": 0.1},
    "randomwalk": {},
    "brownian": {},
    "demo": {},
}


def test_every_generator_is_registered():
    assert set(GENERATORS) == {
        "brownian",
        "constant",
        "covid",
        "demo",
        "randomwalk",
        "sinusoid",
        "spike",
        "stepwise",
        "twolevel",
    }
    for name in GENERATORS:
        assert GENERATORS.get(name)().peak > 0  # defaults make a usable trace


@pytest.mark.parametrize("name", sorted(RANDOM))
def test_same_seed_same_trace_other_seed_other_trace(name):
    make = GENERATORS.get(name)
    a, b, c = (make(seed=s, **RANDOM[name]) for s in (7, 7, 8))
    np.testing.assert_array_equal(a.rates, b.rates)
    assert not np.array_equal(a.rates, c.rates)


@pytest.mark.parametrize("name", ["constant", "stepwise", "twolevel"])
def test_deterministic_generators_repeat(name):
    make = GENERATORS.get(name)
    np.testing.assert_array_equal(make().rates, make().rates)


def test_constant():
    trace = constant(rate=12.5, duration=30, step=0.5)
    assert trace.rates.size == 60 and trace.step_s == 0.5
    assert np.all(trace.rates == 12.5)


def test_spike_shape_follows_its_parameters():
    trace = spike(peak=400, magnitude=8, onset=20, ramp=10, hold=15, decay=25, duration=100)
    r, base = trace.rates, 400 / 8
    assert r.max() / r.min() == pytest.approx(8)  # magnitude = peak over baseline
    np.testing.assert_allclose(r[:21], base)  # flat until the onset (t = 0..20)
    np.testing.assert_allclose(r[30:46], 400)  # at the peak from onset+ramp for `hold` s
    assert np.all(r[46:70] < 400) and np.all(np.diff(r[45:70]) < 0)  # decaying
    np.testing.assert_allclose(r[70:], base)  # back to normal after `decay` s
    slope = np.diff(r[20:31])
    np.testing.assert_allclose(slope, (400 - base) / 10)  # steepness = (peak − base) / ramp


def test_instant_spike_and_noisy_spike():
    sharp = spike(peak=100, magnitude=4, onset=5, ramp=0, hold=5, decay=0, duration=20)
    np.testing.assert_allclose(sharp.rates, np.where((sharp.rates > 25), 100, 25))
    assert int((sharp.rates == 100).sum()) == 5
    noisy = spike(noise=0.05, duration=600, onset=400, seed=3).rates[:400]
    assert noisy.std() / noisy.mean() == pytest.approx(0.05, rel=0.2)


def test_stepwise_and_two_level_follow_the_visp_patterns():
    steps = stepwise(low=2, mid=5, high=8, unit=10, hold=60, duration=480).rates
    levels = steps[::60]
    np.testing.assert_array_equal(levels, [20, 50, 80, 50, 20, 50, 80, 50])
    assert np.all(steps.reshape(8, 60) == levels[:, None])  # constant within each hold
    two = twolevel(low=2, high=8, unit=10, hold=120, duration=480).rates
    np.testing.assert_array_equal(two[::120], [20, 80, 20, 80])


def test_random_walk_moves_by_one_machine_within_bounds():
    trace = randomwalk(start=4, low=1, high=8, unit=10, interval=30, duration=30 * 400, seed=1)
    r = trace.rates
    assert r[0] == 40 and r.min() >= 10 and r.max() <= 80
    assert r.min() == 10 and r.max() == 80  # a long walk reaches both bounds
    changes = np.flatnonzero(np.diff(r)) + 1
    assert np.all(changes % 30 == 0)  # moves only on the interval
    assert set(np.abs(np.diff(r[::30]))) <= {0.0, 10.0}  # ±1 machine or stay (Eq. 6)


def test_random_walk_move_probabilities_match_eq_6():
    n = 20_000
    walk = randomwalk(start=n, low=0, high=2 * n, unit=1, interval=1, duration=n, seed=5).rates
    moves = np.diff(walk)
    assert np.mean(moves < 0) == pytest.approx(0.4, abs=0.015)
    assert np.mean(moves == 0) == pytest.approx(0.2, abs=0.015)
    assert np.mean(moves > 0) == pytest.approx(0.4, abs=0.015)


def test_brownian_increments_and_variance_growth():
    one = brownian(start=1e6, sigma=3, step=0.25, duration=2000, seed=2).rates
    assert np.diff(one).std() == pytest.approx(3 * 0.5, rel=0.05)  # sigma·√dt
    paths = np.array([brownian(start=1e6, sigma=2, duration=400, seed=s).rates for s in range(300)])
    v100, v400 = paths[:, 100].var(), paths[:, 399].var()
    assert v100 == pytest.approx(4 * 100, rel=0.25)  # Var = sigma²·t
    assert v400 / v100 == pytest.approx(399 / 100, rel=0.3)


def test_brownian_stays_non_negative_by_reflection():
    trace = brownian(start=0, sigma=5, duration=500, seed=4)
    assert trace.rates.min() >= 0 and trace.rates.max() > 0


def test_sinusoid_period_mean_and_amplitude():
    trace = sinusoid(mean=100, amplitude=40, period=50, duration=1000)
    r = trace.rates
    spectrum = np.abs(np.fft.rfft(r - r.mean()))
    freqs = np.fft.rfftfreq(r.size, d=trace.step_s)
    assert freqs[np.argmax(spectrum)] == pytest.approx(1 / 50)
    assert r.mean() == pytest.approx(100, abs=0.5)
    assert r.max() == pytest.approx(140, abs=0.1) and r.min() == pytest.approx(60, abs=0.1)
    clipped = sinusoid(mean=10, amplitude=30, period=20, duration=100).rates
    assert clipped.min() == 0


def _spikes(rates: np.ndarray, quiet_s: int = 10) -> int:
    """Separate spikes: runs above 4× the median after at least `quiet_s` samples below it."""
    above = rates > 4 * np.median(rates)
    return sum(1 for i in np.flatnonzero(above) if not above[max(0, i - quiet_s) : i].any())


@pytest.mark.parametrize(("duration", "expected"), [(300, 3), (600, 3), (120, 2)])
def test_demo_trace_has_clear_spikes(duration, expected):
    for seed in range(5):
        trace = demo_trace(duration, 300, seed)
        assert trace.duration_s == duration and trace.peak == pytest.approx(300)
        assert _spikes(trace.rates) == expected
        assert trace.stats().peak_to_median > 7  # 10×-ish over the baseline
        top = trace.rates > 0.6 * 300
        assert top.sum() >= 0.1 * duration  # long enough near the top for replicas to follow


@pytest.mark.parametrize(
    ("make", "kwargs", "message"),
    [
        (constant, {"duration": 0}, "constant: duration must be > 0"),
        (constant, {"rate": -1}, "constant: rate"),
        (sinusoid, {"period": 0}, "sinusoid: period"),
        (spike, {"ramp": -1}, "spike: ramp"),
        (spike, {"noise": -0.1}, "spike: noise"),
        (stepwise, {"hold": 0}, "stepwise: hold"),
        (twolevel, {"unit": 0}, "twolevel: unit"),
        (randomwalk, {"start": 9}, "randomwalk: need low <= start <= high"),
        (brownian, {"step": 0}, "brownian: step"),
        (demo_trace, {"duration_s": 10}, "demo: duration"),
    ],
)
def test_bad_parameters_name_generator_and_parameter(make, kwargs, message):
    with pytest.raises(TraceError, match=message):
        make(**kwargs)
