"""Queueing, ψ, host cores and whole-pipeline prediction (fit at p = 3, predict p = 2 and 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from elastream.history.rows import points_by_operator
from elastream.prediction.cpu import core_capped_rate, effective_servers, fit_psi, predict_cpu
from elastream.prediction.graph import (
    ANY_STREAM,
    Edge,
    Grouping,
    MeasuredPoint,
    ModelError,
    PipelineGraph,
)
from elastream.prediction.performance import Host, fit_component, fit_pipeline, predict
from elastream.prediction.queueing import erlang_c, ggc_wait, mmc_wait, sojourn_time
from reproductions.caladrius.synthetic import WORDCOUNT, wordcount_history

GRAPH = PipelineGraph(
    "wordcount",
    ("spout", "splitter", "counter"),
    (
        Edge("spout", "splitter", Grouping.SHUFFLE, "sentences"),
        Edge("splitter", "counter", Grouping.KEY_HASH, "words"),
    ),
)


def test_mmc_hand_worked():
    # M/M/1, λ = 0.5, μ = 1: W_q = ρ/(μ − λ) = 1
    assert mmc_wait(0.5, 1.0, 1) == pytest.approx(1.0)
    # M/M/2, λ = 1, μ = 1: a = 1, C(2, 1) = 1/3, W_q = (1/3)/(2 − 1)
    assert erlang_c(1.0, 1.0, 2) == pytest.approx(1 / 3)
    assert mmc_wait(1.0, 1.0, 2) == pytest.approx(1 / 3)
    assert mmc_wait(2.0, 1.0, 2) == math.inf
    assert sojourn_time(0.5, 1.0, 1) == pytest.approx(2.0)


def test_kingman_scales_mmc_by_variability():
    # deterministic service (c_s² = 0), Poisson arrivals: half the M/M/1 wait (Kingman)
    assert ggc_wait(0.5, 1.0, 1, 1.0, 0.0) == pytest.approx(0.5)
    assert ggc_wait(1.0, 1.0, 2, 1.0, 1.0) == pytest.approx(mmc_wait(1.0, 1.0, 2))
    assert sojourn_time(0.5, 1.0, 1, 1.0, 0.0) == pytest.approx(1.5)
    with pytest.raises(ModelError, match="service rate"):
        mmc_wait(1.0, 0.0, 1)


def test_psi_and_cpu_prediction():
    pts = [MeasuredPoint(1, r, r, cpu=0.004 * r) for r in (10, 50, 100)]
    psi = fit_psi(pts)
    assert psi == pytest.approx(0.004)
    assert predict_cpu(psi, 250) == pytest.approx(1.0)
    assert fit_psi([MeasuredPoint(1, 1, 1)]) is None


def test_host_cores_cap_cpu_bound_replicas():
    # ψ = 0.01 core per event/s: 2 cores admit at most 200/s whatever the replicas
    assert core_capped_rate(400, 0.01, 2) == pytest.approx(200)
    assert core_capped_rate(150, 0.01, 2) == pytest.approx(150)
    assert core_capped_rate(400, 0.01, None) == 400
    # busy 10 ms per event, all of it on the CPU: 4 replicas on 2 cores → 2 at once
    assert effective_servers(4, 0.01, 0.01, 2) == pytest.approx(2)
    # sleeping half the time: 4 replicas fit on 2 cores
    assert effective_servers(4, 0.005, 0.01, 2) == pytest.approx(4)


@pytest.fixture(scope="module")
def p3_models():
    rates = np.linspace(30, 700, 45)  # crosses the splitter's 3·100/s saturation point
    rows = wordcount_history("fit", rates, {"spout": 1, "splitter": 3, "counter": 4}, seed=3)
    return fit_pipeline(GRAPH, points_by_operator(rows))


def test_fit_at_p3_recovers_the_truth(p3_models):
    split = p3_models["splitter"].instance
    assert split.alpha == pytest.approx(WORDCOUNT["splitter"].alpha, rel=1e-6)
    assert split.sp == pytest.approx(WORDCOUNT["splitter"].sp, rel=0.01)
    assert p3_models["splitter"].psi == pytest.approx(WORDCOUNT["splitter"].psi, rel=1e-6)
    assert p3_models["splitter"].service_scv == pytest.approx(0.25, rel=1e-6)
    assert not p3_models["spout"].instance.saturation_seen


@pytest.mark.parametrize("p", [2, 4])
def test_predict_other_parallelism_matches_a_measured_run(p3_models, p):
    """Section V-C on synthetic truth: predict p = 2 and 4 from p = 3, then 'measure' them."""
    rate = 600.0  # saturates the splitter at p = 2 and 4 (SP 200/s, 400/s)
    pred = predict(GRAPH, p3_models, {"spout": 1, "splitter": p, "counter": 4}, rate)
    split = pred.components["splitter"]
    truth_sp = p * WORDCOUNT["splitter"].sp
    assert split.saturation_point == pytest.approx(truth_sp, rel=0.01)
    assert split.saturation_throughput == pytest.approx(7.6 * truth_sp, rel=0.01)
    measured = wordcount_history("check", [rate] * 5, {"spout": 1, "splitter": p, "counter": 4})
    out = np.mean([sum(r.output_rates.values()) * p for r in measured if r.operator == "splitter"])
    assert split.output_rates["words"] == pytest.approx(out, rel=0.03)
    assert split.cpu == pytest.approx(WORDCOUNT["splitter"].psi * truth_sp, rel=0.01)
    assert pred.bottleneck == "splitter"
    assert pred.risk == "high"
    assert pred.saturation_point == pytest.approx(truth_sp, rel=0.01)
    assert pred.critical_path == ("spout", "splitter", "counter")
    assert pred.latency is None  # the splitter is overloaded: no steady state


def test_prediction_below_saturation_is_low_risk_with_latency(p3_models):
    pred = predict(GRAPH, p3_models, {"spout": 1, "splitter": 4, "counter": 4}, 100.0)
    assert pred.risk == "low"
    assert pred.critical_path_output == pytest.approx(760.0, rel=1e-6)  # Eq. 12: 7.6·100
    assert pred.latency is not None
    assert pred.latency > WORDCOUNT["splitter"].service_time
    assert pred.components["counter"].basis.startswith("Eq. 10-11")
    other = predict(GRAPH, p3_models, {"spout": 1, "splitter": 4, "counter": 6}, 100.0)
    assert "new parallelism" in other.components["counter"].basis


def test_host_is_the_bottleneck_on_two_cores(p3_models):
    # splitter ψ 0.008 + counter 7.6·0.001 → 0.0156 cores per event/s: 2 cores ≈ 128/s
    pred = predict(GRAPH, p3_models, {"spout": 1, "splitter": 4, "counter": 4}, 150.0, Host(2))
    assert pred.bottleneck == "host"
    assert pred.saturation_point == pytest.approx(2 / (0.008 + 7.6 * 0.001), rel=0.01)
    assert pred.risk == "high"


def test_cpu_bound_replicas_beyond_the_cores_add_nothing():
    # a replica busy 10 ms per event, all on the CPU: one core does 100/s
    pts = [
        MeasuredPoint(
            2,
            s,
            min(s, 100.0),
            {"o": min(s, 100.0)},
            r,
            cpu=0.01 * min(s, 100.0),
            busy=0.01 * min(s, 100.0),
        )
        for s in (20.0, 60.0, 150.0, 200.0)
        for r in range(2)
    ]
    graph = PipelineGraph("one", ("op",), ())
    model = {"op": fit_component("op", Grouping.SHUFFLE, pts)}
    two = predict(graph, model, {"op": 2}, 1000.0, Host(cores=2))
    eight = predict(graph, model, {"op": 8}, 1000.0, Host(cores=2))
    assert two.components["op"].saturation_point == pytest.approx(200.0)
    assert eight.components["op"].saturation_point == pytest.approx(200.0)
    assert eight.components["op"].core_limited
    unbounded = predict(graph, model, {"op": 8}, 1000.0)
    assert unbounded.components["op"].saturation_point == pytest.approx(800.0)


def test_prediction_errors_name_the_component(p3_models):
    with pytest.raises(ModelError, match="'counter' must be ≥ 1"):
        predict(GRAPH, p3_models, {"spout": 1, "splitter": 2}, 10.0)
    with pytest.raises(ModelError, match="unknown component"):
        predict(GRAPH, p3_models, {"spout": 1, "splitter": 2, "counter": 1, "x": 1}, 10.0)
    with pytest.raises(ModelError, match="no history for component 'counter'"):
        fit_pipeline(
            GRAPH, {"spout": [MeasuredPoint(1, 1, 1)], "splitter": [MeasuredPoint(1, 1, 1)]}
        )


def test_graph_validation():
    with pytest.raises(ModelError, match="cycle"):
        PipelineGraph("c", ("a", "b"), (Edge("a", "b"), Edge("b", "a")))
    with pytest.raises(ModelError, match="unknown component 'z'"):
        PipelineGraph("u", ("a",), (Edge("a", "z"),))
    with pytest.raises(ModelError, match="duplicate component"):
        PipelineGraph("d", ("a", "a"), ())
    assert GRAPH.paths() == (("spout", "splitter", "counter"),)


def test_a_pipeline_file_is_read_as_the_models_graph(tmp_path):
    import yaml

    from elastream.model.pipeline import Grouping as PipelineGrouping
    from elastream.service.graphs import load_graph_yaml

    data = {
        "name": "wc",
        "sources": [{"name": "src", "generator": "elastream.examples.synthetic:generate"}],
        "operators": [
            {"name": "split", "function": "elastream.examples.synthetic:passthrough"},
            {
                "name": "count",
                "function": "elastream.examples.synthetic:passthrough",
                "grouping": "key_hash",
                "stateless": False,
            },
        ],
        "sinks": [{"name": "out"}],
        "streams": [
            {"from": "src", "to": "split"},
            {"from": "split", "to": "count"},
            {"from": "count", "to": "out"},
        ],
    }
    path = tmp_path / "wc.yaml"
    path.write_text(yaml.safe_dump(data))
    graph = load_graph_yaml(path)
    assert graph.name == "wc"
    assert graph.components == ("split", "count")
    assert graph.sources() == ("split",) and graph.sinks() == ("count",)
    (edge,) = graph.edges
    assert (edge.source, edge.target, edge.grouping) == (
        "split",
        "count",
        PipelineGrouping.KEY_HASH,
    )


def _measured_over_all_streams(alpha: float) -> list[MeasuredPoint]:
    """A component's points as the runtime records them: outputs over all streams together."""
    return [
        MeasuredPoint(1, rate, min(rate, 50.0), {ANY_STREAM: alpha * min(rate, 50.0)})
        for rate in (10.0, 20.0, 30.0, 80.0, 90.0)
    ]


def test_outputs_measured_over_all_streams_feed_the_one_output_stream():
    models = {
        "splitter": fit_component("splitter", Grouping.SHUFFLE, _measured_over_all_streams(5)),
        "counter": fit_component("counter", Grouping.KEY_HASH, _measured_over_all_streams(0)),
    }
    two = PipelineGraph(
        "wc", ("splitter", "counter"), (Edge("splitter", "counter", Grouping.KEY_HASH, "words"),)
    )
    pred = predict(two, models, {"splitter": 1, "counter": 4}, 20.0)
    assert pred.components["counter"].source_rate == pytest.approx(100.0)  # 5 · 20, via "*"
    # the counter emits nothing: the path's output is what it processes (Caladrius V-D)
    assert pred.critical_path_output == pytest.approx(100.0)

    split = PipelineGraph(
        "wc2",
        ("splitter", "counter", "other"),
        (
            Edge("splitter", "counter", Grouping.KEY_HASH, "words"),
            Edge("splitter", "other", Grouping.SHUFFLE, "rest"),
        ),
    )
    models["other"] = models["counter"]
    with pytest.raises(ModelError, match="measured over all streams together"):
        predict(split, models, {"splitter": 1, "counter": 1, "other": 1}, 20.0)
