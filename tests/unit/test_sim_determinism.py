"""The simulator is deterministic for a given seed with its default settings: the CPU time it adds
to each operator's per-event time is modelled from counted interpreter calls (Eq. C1), not timed,
so two runs in two processes write byte-identical outputs (docs/simulator.md, "CPU time")."""

import os
import subprocess
import sys

import pytest
from support.paths import ROOT

from elastream.config.files import load_pipeline
from elastream.runtime.sim import SimSettings
from elastream.runtime.sim.profile import _CACHE, profile_pipeline

TWEETS = ROOT / "src" / "elastream" / "examples" / "tweets.yaml"
OUTPUTS = ("summary.json", "timeseries.csv", "intervals.csv")
# a spike that makes psps scale classify_content up and down: queues, latency, every figure moves
TRACE = "spike:peak=150,magnitude=3,onset=20,ramp=5,hold=20,decay=5,duration=80"


def simulate_in_a_new_process(out, hash_seed: str) -> dict[str, bytes]:
    """`elastream simulate` of the tweets example with every simulator setting at its default;
    the outputs' bytes."""
    command = [
        sys.executable, "-m", "elastream.cli", "simulate", str(TWEETS), "--trace", TRACE,
        "--quiet", "--out", str(out),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    subprocess.run(command, check=True, env=env, capture_output=True, cwd=ROOT)
    return {name: (out / name).read_bytes() for name in OUTPUTS}


@pytest.mark.slow
def test_two_runs_of_the_same_seed_write_identical_outputs(tmp_path):
    out = tmp_path / "run"  # the same folder for both: summary.json names it
    first = simulate_in_a_new_process(out, "1")
    second = simulate_in_a_new_process(out, "2")
    assert b'"latency_ms_mean"' in first["summary.json"]
    assert first == second


def calls_per_event(pipeline) -> dict[str, float]:
    profile = profile_pipeline(pipeline, SimSettings(cpu_ns_per_call=1.0), seed=0)
    return {op.name: op.cpu_s * 1e9 for op in profile.operators}  # Eq. C1 with 1 ns per call


def test_the_cpu_model_counts_the_same_calls_whatever_ran_before():
    """The counted pass follows a warm-up pass, so what a function does once per process (its
    imports, compiled patterns, caches) is never counted; a process that ran other pipelines
    before counts the same."""
    tweets = load_pipeline(TWEETS)
    _CACHE.clear()
    first = calls_per_event(tweets)
    _CACHE.clear()
    profile_pipeline(load_pipeline(TWEETS.with_name("wordcount.yaml")), SimSettings(), seed=3)
    assert calls_per_event(tweets) == first
    assert all(calls > 10 for calls in first.values()), first  # every function does real work


def test_cpu_time_per_event_is_calls_times_the_cost_of_a_call():
    tweets = load_pipeline(TWEETS)
    calls = calls_per_event(tweets)
    profile = profile_pipeline(tweets, SimSettings(cpu_ns_per_call=400.0), seed=0)
    for op in profile.operators:
        assert op.cpu_s == pytest.approx(calls[op.name] * 400e-9, rel=1e-12)
        service_s = tweets.operator(op.name).service_time_ms / 1000
        assert op.service_time_s == pytest.approx(service_s + op.cpu_s, rel=1e-12)
    unmeasured = profile_pipeline(tweets, SimSettings(measure_cpu=False), seed=0)
    assert {op.cpu_s for op in unmeasured.operators} == {0.0}
