"""Properties of the equations over generated inputs (hypothesis), and the docs' graph example."""

from __future__ import annotations

import math
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from support.paths import ROOT

from elastream.prediction.queueing import erlang_c, mmc_wait
from elastream.prediction.throughput import (
    chain_output,
    chain_saturation_point,
    component_output,
    component_output_even,
    component_output_keyed,
    even_shares,
)
from elastream.service.graphs import load_graph_yaml

rates = st.floats(0, 1e6, allow_nan=False)
alphas = st.floats(0.01, 100, allow_nan=False)
caps = st.floats(0.01, 1e7, allow_nan=False)
FAST = settings(max_examples=200, deadline=None)


@FAST
@given(rates, st.integers(1, 64), alphas, caps)
def test_eq9_is_eq7_with_even_shares(t, p, alpha, cap):
    even = component_output_even(t, p, alpha, cap)
    assert math.isclose(even, component_output([t / p] * p, alpha, cap), rel_tol=1e-9)
    assert math.isclose(even, component_output_keyed(t, even_shares(p), alpha, cap), rel_tol=1e-9)
    assert even <= p * cap * (1 + 1e-12)


@FAST
@given(st.lists(st.tuples(alphas, caps), min_size=1, max_size=6))
def test_eq13_inverts_eq12(stages):
    t_sat, where = chain_saturation_point(stages)
    gain = math.prod(a for a, _ in stages)
    below = 0.999 * t_sat
    assert math.isclose(chain_output(below, stages), gain * below, rel_tol=1e-6)
    # at t'_0 the bottleneck stage emits exactly its ST
    rate = t_sat
    for alpha, cap in stages[: where + 1]:
        rate = min(alpha * rate, cap)
    assert math.isclose(rate, stages[where][1], rel_tol=1e-6)
    # past t'_0 the chain's output stops growing
    assert chain_output(2 * t_sat, stages) <= chain_output(t_sat, stages) * (1 + 1e-9)


@FAST
@given(st.floats(0.01, 0.98), st.integers(1, 50))
def test_mmc_wait_grows_with_load_and_erlang_c_is_a_probability(rho, c):
    mu = 1.0
    low, high = mmc_wait(0.5 * rho * c * mu, mu, c), mmc_wait(rho * c * mu, mu, c)
    assert 0 <= low <= high
    assert 0 <= erlang_c(rho * c * mu, mu, c) <= 1


def test_the_docs_graph_example_loads(tmp_path):
    doc = ROOT / "docs" / "modeling.md"
    blocks = re.findall(r"^```yaml\n(.*?)^```$", doc.read_text(), re.MULTILINE | re.DOTALL)
    assert blocks
    path = tmp_path / "graph.yaml"
    path.write_text(blocks[0])
    graph = load_graph_yaml(path)
    assert graph.name == "wordcount"
    assert graph.paths() == (("spout", "splitter", "counter"),)
