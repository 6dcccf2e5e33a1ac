"""The Python API: a light `import elastream`, the pipeline builder, settings, elastream.testing,
simulate, the graceful-stop signals and the unbounded-run rules (without Spark)."""

import os
import signal
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

import elastream
from elastream.config import ConfigError, make_config
from elastream.control.features import GracefulStop
from elastream.examples.synthetic import drop_odd, generate, passthrough, split_by_value
from elastream.model.pipeline import pipeline_from_dict
from elastream.runtime.signals import stop_on_signals
from elastream.runtime.spark.feeder import TraceIntegral
from elastream.testing import InMemorySource, run_in_memory
from elastream.workloads import Trace


def filter2() -> elastream.PipelineBuilder:
    b = elastream.PipelineBuilder("filter2")
    b.source("src", generate, rate=40)
    b.operator("ingest", passthrough, inputs="src")
    b.operator("enrich", drop_odd, inputs="ingest", replicas=(1, 4), service_time_ms=40)
    b.sink("out", inputs="enrich")
    return b


def loaded_after(code: str) -> list[str]:
    """The top-level packages among pyspark, py4j, pandas that `code` leaves imported."""
    probe = f"import sys\n{code}\nprint(sorted({{m.split('.')[0] for m in sys.modules}}))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return [m for m in ("pyspark", "py4j", "pandas") if f"'{m}'" in done.stdout]


def test_import_elastream_is_light():
    assert loaded_after("import elastream; elastream.PipelineBuilder; elastream.testing") == []
    assert "pyspark" not in loaded_after("import elastream; elastream.run; elastream.simulate")


def test_the_builder_makes_the_yaml_model():
    pipeline = filter2().build()
    assert pipeline.source_names == ("src",)
    assert pipeline.operator("ingest").function == "elastream.examples.synthetic:passthrough"
    assert pipeline.operator("enrich").replicas.min == 1
    assert pipeline.operator("enrich").replicas.max == 4
    assert pipeline.predecessors("out") == ("enrich",)
    assert elastream.PipelineBuilder("x").operator("a", passthrough, replicas=3) == "a"


def test_the_builder_wires_named_streams_and_passes_options_through():
    b = elastream.PipelineBuilder("split")
    b.source("src", generate)
    b.operator("split", split_by_value, inputs="src", params={}, grouping="round_robin")
    b.sink("low")
    b.sink("high")
    b.stream("split", "low", "low").stream("split", "high", "high")
    pipeline = b.build()
    assert pipeline.routes("split") == {"low": ("low",), "high": ("high",)}
    assert pipeline.operator("split").grouping == "round_robin"
    run = run_in_memory(pipeline, {"src": [{"i": i, "v": v} for i, v in enumerate([5, 900, 1])]})
    assert run["low"].payloads == [{"i": 0, "v": 5}, {"i": 2, "v": 1}]
    assert run["high"].payloads == [{"i": 1, "v": 900}]


def test_the_builder_names_what_is_wrong():
    b = filter2()
    b.operator("bad", passthrough, inputs="enrich", colour="red")
    with pytest.raises(elastream.TopologyError, match=r"operators\.2\.colour"):
        b.build()
    with pytest.raises(elastream.TopologyError, match="not a module-level function"):
        elastream.PipelineBuilder().operator("f", lambda events: events)
    b = filter2()
    b.operator("ghost", "elastream.examples.synthetic:nothing", inputs="enrich")
    b.sink("end", inputs="ghost")
    with pytest.raises(elastream.TopologyError, match="operator 'ghost' function"):
        b.build()
    assert b.build(check_imports=False).operator("ghost")


def test_in_memory_run_needs_every_source():
    with pytest.raises(elastream.TopologyError, match=r"missing for \['src'\], unknown \['x'\]"):
        run_in_memory(filter2().build(), {"x": [1]})
    with pytest.raises(ValueError, match="2 keys for 1 payloads"):
        run_in_memory(filter2().build(), {"src": InMemorySource([{"i": 0}], keys=["a", "b"])})


def test_settings_from_a_mapping_a_file_and_a_config(tmp_path):
    file = tmp_path / "run.yaml"
    file.write_text("interval_s: 7\nevent_timeout_s: 30\n")
    assert elastream.settings(file, duration=5).interval_s == 7
    assert elastream.settings(file).event_timeout_s == 30
    assert elastream.settings({"interval_s": 2}, interval_s=3).interval_s == 3
    base = make_config(interval_s=4, queue_capacity=1000)
    assert elastream.settings(base, duration=9).queue_capacity == 1000
    assert elastream.settings().event_timeout_s is None
    assert elastream.settings().queue_capacity is None
    with pytest.raises(ConfigError, match="interval_s"):
        elastream.settings(interval_s=-1)


def test_an_old_setting_name_is_an_error_naming_the_new_one(tmp_path):
    """One name per setting: a settings file or a Python call with an old name is refused
    with the new name (line and file for a file); the pipeline's r_over is still accepted
    for one release, with a warning."""
    file = tmp_path / "run.yaml"
    file.write_text("policy: psps\ntd: 7\n")
    with pytest.raises(ConfigError, match=r"run.yaml:2: 'td' is an old name: .* 'interval_s'"):
        elastream.settings(file)
    with pytest.raises(ConfigError, match="'q_size' is an old name: .* 'queue_capacity'"):
        make_config(q_size=5)
    with pytest.raises(ConfigError, match="'t_out' is an old name: .* 'event_timeout_s'"):
        elastream.settings(t_out=3)
    data = filter2().build().model_dump(by_alias=True, exclude_none=True)
    with pytest.warns(FutureWarning, match="'r_over' is now called 'overprovisioned_replicas'"):
        assert pipeline_from_dict({**data, "r_over": 3}, "old").overprovisioned_replicas == 3


def test_an_unbounded_run_cannot_have_a_trace_and_a_simulation_needs_a_duration(tmp_path):
    with pytest.raises(ConfigError, match="until_stopped .* has an end"):
        make_config(until_stopped=True, trace="constant:rate=1,duration=5")
    with pytest.raises(ConfigError, match="a simulation needs an end"):
        elastream.simulate(filter2(), until_stopped=True, out=tmp_path / "sim")
    finished = elastream.simulate(
        filter2(), until_stopped=True, duration=20, interval_s=2, out=tmp_path / "sim"
    )
    assert finished.totals.events_in == 40 * 20
    assert finished.summary.events_queued == 0
    assert finished.outputs["summary"].exists()


def test_the_feeder_holds_the_last_rate_for_ever_in_an_unbounded_run():
    trace = Trace(np.array([10.0, 20.0]))
    assert TraceIntegral(trace)(5.0) == 30.0  # a bounded run stops at the trace's end
    assert TraceIntegral(trace, forever=True)(5.0) == 30.0 + 3 * 20.0


def test_the_first_signal_asks_for_a_graceful_stop_a_second_stops_at_once():
    asked = []
    engine = SimpleNamespace(
        features=frozenset({GracefulStop}),
        request_stop=lambda: asked.append("stop"),
        abort=lambda: asked.append("abort"),
    )
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt, match="twice"), stop_on_signals(engine, 5.0):
        os.kill(os.getpid(), signal.SIGTERM)
        assert asked == ["stop"]
        os.kill(os.getpid(), signal.SIGINT)
    assert asked == ["stop", "abort"]  # the second stops at once
    assert signal.getsignal(signal.SIGTERM) is before  # restored
    with stop_on_signals(SimpleNamespace(features=frozenset()), 5.0):  # cannot stop early
        assert signal.getsignal(signal.SIGTERM) is before


def test_a_run_says_and_returns_where_its_metrics_and_live_view_are_served(tmp_path, capsys):
    finished = elastream.simulate(filter2(), duration=10, out=tmp_path / "a")
    said = capsys.readouterr().err
    assert finished.metrics_url is not None and finished.live_url is not None
    assert finished.metrics_url == finished.live_url + "metrics"
    assert finished.live_url.startswith("http://127.0.0.1:")
    assert f"metrics {finished.metrics_url}  live view {finished.live_url}" in said
    quiet = elastream.simulate(filter2(), duration=10, out=tmp_path / "b", metrics={"port": 0})
    assert (quiet.metrics_url, quiet.live_url) == (None, None)
    assert "live view" not in capsys.readouterr().err
