"""The forecast-driven policy's pure core: smallest parallelism with low backpressure risk."""

from __future__ import annotations

import numpy as np
import pytest

from elastream.history.rows import points_by_operator
from elastream.prediction.forecasting import FitCache
from elastream.prediction.graph import Edge, Grouping, ModelError, PipelineGraph
from elastream.prediction.performance import Host, fit_pipeline, predict
from elastream.prediction.proactive import plan_from_history, plan_parallelism, provisioning_rate
from elastream.prediction.series import Forecast, Series
from reproductions.caladrius.synthetic import wordcount_history

GRAPH = PipelineGraph(
    "wordcount",
    ("spout", "splitter", "counter"),
    (
        Edge("spout", "splitter", Grouping.SHUFFLE, "sentences"),
        Edge("splitter", "counter", Grouping.KEY_HASH, "words"),
    ),
)
MAX_P = {"spout": 1, "splitter": 16, "counter": 16}


@pytest.fixture(scope="module")
def models():
    rows = wordcount_history(
        "fit", np.linspace(30, 700, 45), {"spout": 1, "splitter": 3, "counter": 1}, seed=4
    )
    return fit_pipeline(GRAPH, points_by_operator(rows))


def test_plan_is_the_smallest_low_risk_parallelism(models):
    # splitter: 100/s per replica, headroom 10 %: 460/s needs p with 0.9·100·p > 460 → p = 6
    plan = plan_parallelism(GRAPH, models, 460.0, MAX_P)
    assert plan.parallelism["splitter"] == 6
    # counter: 900/s per replica, it sees 7.6·460 = 3496/s → 0.9·900·p > 3496 → p = 5
    assert plan.parallelism["counter"] == 5
    assert plan.prediction.risk == "low"
    assert all(c.feasible for c in plan.components.values())
    for comp in ("splitter", "counter"):
        fewer = dict(plan.parallelism, **{comp: plan.parallelism[comp] - 1})
        assert predict(GRAPH, models, fewer, 460.0).components[comp].risk == "high"


def test_scales_out_before_a_forecast_spike(models):
    steps = 12
    point = np.full(steps, 150.0)
    point[8:] = 600.0  # a spike 8 steps ahead
    forecast = Forecast(point, point * 0.9, point * 1.1, 0.9, 60.0, 0.0)
    calm = plan_parallelism(GRAPH, models, provisioning_rate(forecast, lead_steps=4), MAX_P)
    ahead = plan_parallelism(GRAPH, models, provisioning_rate(forecast), MAX_P)
    assert provisioning_rate(forecast, lead_steps=4) == pytest.approx(165.0)
    assert provisioning_rate(forecast, bound="point") == pytest.approx(600.0)
    assert calm.parallelism["splitter"] == 2  # 165/s < 0.9·200
    assert ahead.parallelism["splitter"] == 8  # 660/s < 0.9·800
    with pytest.raises(ModelError, match="lead_steps"):
        provisioning_rate(forecast, lead_steps=0)


def test_infeasible_plans_say_why(models):
    plan = plan_parallelism(GRAPH, models, 5000.0, MAX_P)
    split = plan.components["splitter"]
    assert not split.feasible
    assert split.parallelism == 16
    assert "more than 16 replicas" in split.reason
    on_two_cores = plan_parallelism(GRAPH, models, 400.0, MAX_P, Host(cores=2))
    assert not on_two_cores.components["splitter"].feasible
    assert on_two_cores.prediction.bottleneck in {"host", "splitter"}


def test_bad_inputs(models):
    with pytest.raises(ModelError, match="max parallelism missing or < 1 for: counter"):
        plan_parallelism(GRAPH, models, 10.0, {"spout": 1, "splitter": 2})
    with pytest.raises(ModelError, match="finite rate"):
        plan_parallelism(GRAPH, models, float("nan"), MAX_P)


def test_a_never_saturated_component_beyond_its_measured_range_is_flagged(models):
    # the spout was measured up to 700/s and never saturated: at 800/s nothing is known
    plan = plan_parallelism(GRAPH, models, 800.0, MAX_P)
    spout = plan.components["spout"]
    assert not spout.feasible
    assert "beyond the measured range" in spout.reason
    assert plan.prediction.risk in {"unknown", "high"}


def test_plan_from_history_scales_out_before_the_daily_peak(models):
    # two days of a daily cycle at 30-min steps, peak 460/s at 06:00 (phase 12 of 48)
    t = np.arange(96)
    rates = 260 + 200 * np.sin(2 * np.pi * t / 48)
    cache = FitCache()
    # the last sample (23:30) is 234/s, but the next 8 h hold the 460/s peak
    ahead = plan_from_history(
        Series(rates, 1800.0), GRAPH, models, MAX_P, horizon=16, lead_steps=16, cache=cache
    )
    now_only = plan_parallelism(GRAPH, models, float(rates[-1]), MAX_P)
    assert ahead.rate == pytest.approx(460.0, rel=1e-6)
    assert ahead.parallelism["splitter"] == 6  # 0.9·100·5 = 450 < 460 < 0.9·100·6
    assert now_only.parallelism["splitter"] == 3  # 234/s: 0.9·100·2 = 180 < 234 < 270
    # a short lead window sees only the coming hour: no early scale-out
    soon = plan_from_history(
        Series(rates, 1800.0), GRAPH, models, MAX_P, horizon=16, lead_steps=1, cache=cache
    )
    assert soon.parallelism["splitter"] == 3
    assert cache.hits == 1
