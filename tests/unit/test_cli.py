"""CLI errors: every bad input is named, with exit code 2 and no traceback."""

import json

import pytest

from elastream.cli import main
from elastream.cli.demo import demo_pipeline_path
from elastream.config.files import load_pipeline


def simulate_demo(tmp_path, *flags):
    """`elastream simulate` on the demo pipeline with `flags`; returns the exit code."""
    return main(
        ["simulate", str(demo_pipeline_path()), *flags, "--quiet", "--out", str(tmp_path / "o")]
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ("- just\n- a list\n", "expected a mapping of settings"),
        ("interval_s: [unclosed\n", "cannot read settings"),
        ("interval_s: -3\n", "interval_s: Input should be greater than 0"),
        ("policy: magic\n", "unknown policy 'magic'"),
        ("colour: blue\n", "colour: Extra inputs are not permitted"),
    ],
)
def test_bad_settings_file_is_named(tmp_path, capsys, settings, message):
    path = tmp_path / "settings.yaml"
    path.write_text(settings)
    code = simulate_demo(tmp_path, "--config", str(path))
    assert code == 2
    assert message in capsys.readouterr().err


def test_bad_sim_settings_file_is_named(tmp_path, capsys):
    path = tmp_path / "sim.yaml"
    path.write_text("[1, 2]\n")
    code = simulate_demo(tmp_path, "--sim-config", str(path))
    assert code == 2
    assert f"{path}: expected a mapping of simulator settings" in capsys.readouterr().err


def test_negative_rate_trace_and_missing_pipeline(tmp_path, capsys):
    trace = tmp_path / "rates.txt"
    trace.write_text("5\n-2\n")
    code = simulate_demo(tmp_path, "--trace", str(trace))
    assert code == 2
    assert "rates.txt" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml does not exist" in capsys.readouterr().err


def test_old_option_names_still_work_with_a_one_line_warning(tmp_path, capsys):
    code = simulate_demo(
        tmp_path, "--td", "2", "--q-size", "none", "--duration", "4", "--drain", "3",
        "--event-timeout", "3", "--sim-step", "0.5", "--no-fast-forward",
    )  # fmt: skip
    err = capsys.readouterr().err.splitlines()
    assert code == 0, err
    notices = [line for line in err if "is now called" in line]
    renamed = [
        ("--td", "--interval-s"),
        ("--q-size", "--queue-capacity"),
        ("--drain", "--drain-s"),
        ("--event-timeout", "--event-timeout-s"),
        ("--sim-step", "--sim-step-s"),
        ("--no-fast-forward", "--no-sim-fast-forward"),
    ]
    assert notices == [
        f"elastream: warning: option '{old}' is now called '{new}'; the old name is accepted "
        "until the next release"
        for old, new in renamed
    ]
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())["settings"]
    assert (summary["interval_s"], summary["drain_s"], summary["event_timeout_s"]) == (2, 3, 3)


@pytest.mark.parametrize(("old", "new"), [("td", "interval_s"), ("t_out", "event_timeout_s")])
def test_an_old_name_in_a_settings_file_is_an_error_naming_the_new_one(tmp_path, capsys, old, new):
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"policy: psps\n{old}: 3\n")
    assert simulate_demo(tmp_path, "--duration", "4", "--config", str(settings)) == 2
    error = capsys.readouterr().err
    assert f"{settings}:2: '{old}' is an old name: the setting is now called '{new}'" in error
    assert not (tmp_path / "o").exists()


def test_the_options_are_the_settings_names(tmp_path):
    """One name per setting: --interval-s is interval_s, --spark-master is spark.master and
    --objective-latency-p99-s is objective.latency_p99_s; an objective option replaces the
    settings file's bound, whichever statistic that had."""
    from elastream.cli import build_parser
    from elastream.cli._common import config_from_args

    settings = tmp_path / "settings.yaml"
    settings.write_text("objective: {latency_mean_s: 5}\ndrain_s: 9\n")
    flags = "--interval-s 3 --spark-master local[2] --objective-latency-p99-s 2 --drain-s 7"
    args = build_parser().parse_args(["run", "p.yaml", "--config", str(settings), *flags.split()])
    config = config_from_args(args)
    assert (config.interval_s, config.spark.master, config.drain_s) == (3, "local[2]", 7)
    assert config.objective is not None
    assert (config.objective.latency_p99_s, config.objective.latency_mean_s) == (2, None)


def run_parser():
    from elastream.cli import build_parser

    parser = build_parser()
    return parser._subparsers._group_actions[0].choices  # command -> its parser


def options_of(parser):
    return {o: a for a in parser._actions for o in a.option_strings if o.startswith("--")}


def test_every_run_setting_has_an_option_whose_help_is_its_description():
    from pydantic import BaseModel

    from elastream.base.settings import describe
    from elastream.cli._common import FILE_ONLY, NESTED_SETTINGS, SIM_SETTINGS, nested_field
    from elastream.config import RunConfig
    from elastream.runtime.sim.settings import SimSettings

    described = {o.path: o.description for o in describe(RunConfig)}
    described |= {f"sim.{o.path}": o.description for o in describe(SimSettings)}
    described |= {".".join(p): nested_field(*p).description for p in NESTED_SETTINGS}
    paths = [n for n in RunConfig.model_fields if n not in FILE_ONLY]
    paths += [".".join(p) for p in NESTED_SETTINGS] + [f"sim.{n}" for n in SIM_SETTINGS]
    # the option is the setting's path, '.' and '_' written '-'
    expected = {"--" + p.replace(".", "-").replace("_", "-"): p for p in paths}
    assert {"--interval-s", "--spark-master", "--objective-latency-p99-s"} <= set(expected)
    for command in ("run", "simulate", "demo"):
        options = options_of(run_parser()[command])
        for option, setting in expected.items():
            assert option in options, f"{command}: {setting} has no option {option}"
            assert options[option].help.replace("%%", "%") == described[setting], option
    # Only mappings of settings of their own are left to the --config file.
    for name in FILE_ONLY:
        annotation = RunConfig.model_fields[name].annotation
        kinds = [annotation, *getattr(annotation, "__args__", ())]
        assert any(
            k is dict
            or getattr(k, "__origin__", None) is dict
            or (isinstance(k, type) and issubclass(k, BaseModel))
            for k in kinds
        ), name


def test_an_option_name_means_one_thing_in_every_command():
    kinds = {}
    for command, parser in run_parser().items():
        for option, action in options_of(parser).items():
            if option == "--help" or action.help == "==SUPPRESS==":
                continue
            kind = (getattr(action.type, "__name__", "str"), action.nargs, type(action).__name__)
            kinds.setdefault(option, {})[command] = kind
    mixed = {o: k for o, k in kinds.items() if len(set(k.values())) > 1}
    assert mixed == {}


def test_run_engine_sim_is_simulate_and_simulator_options_need_it(tmp_path, capsys):
    pipeline = str(demo_pipeline_path())
    flags = ["--duration", "4", "--quiet", "--policy", "static", "--replicas", "1"]
    for command in (["run", "--engine", "sim"], ["simulate"]):
        out = tmp_path / command[0]
        assert main([*command, pipeline, *flags, "--out", str(out)]) == 0
    run = (tmp_path / "run" / "summary.json").read_text()
    assert run == (tmp_path / "simulate" / "summary.json").read_text().replace(
        str(tmp_path / "simulate"), str(tmp_path / "run")
    )
    capsys.readouterr()
    assert main(["run", pipeline, "--sim-step-s", "0.2", "--duration", "4"]) == 2
    assert "--sim-step-s: simulator options, for --engine sim only" in capsys.readouterr().err
    assert main(["simulate", pipeline, "--resume", "--duration", "4"]) == 2
    assert "--resume continues a Spark run" in capsys.readouterr().err


def test_dry_run_is_gone_naming_recommend_only_and_check(tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        simulate_demo(tmp_path, "--dry-run")
    assert done.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--recommend-only" in err[0] and "elastream check" in err[0], err
    settings = tmp_path / "settings.yaml"
    settings.write_text("dry_run: true\n")
    assert simulate_demo(tmp_path, "--config", str(settings)) == 2
    err = capsys.readouterr().err
    assert "recommend_only" in err and "elastream check" in err
    assert not (tmp_path / "o").exists()


def test_recommend_only_runs_the_pipeline_and_never_enacts(tmp_path):
    import pandas as pd

    assert simulate_demo(tmp_path, "--recommend-only", "--duration", "60", "--interval", "2") == 0
    series = pd.read_csv(tmp_path / "o" / "timeseries.csv")
    starts = {op.name: op.replicas.start for op in load_pipeline(demo_pipeline_path()).operators}
    for name, rows in series.groupby("operator"):
        assert set(rows["replicas"]) == {starts[name]}, name  # never enacted
    assert (series["target"] != series["replicas"]).any()  # though decided
    assert series["processed"].sum() > 0


def test_engine_sim_on_a_files_pipeline_is_one_line_naming_the_source(tmp_path, capsys):
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(
        "name: words\n"
        f"sources: [{{name: lines, kind: files, path: {tmp_path / 'in'}, format: json, "
        "schema: 'text STRING'}]\n"
        "operators: [{name: split, function: 'elastream.examples.synthetic:passthrough'}]\n"
        "sinks: [{name: out}]\n"
        "streams: [{from: lines, to: split}, {from: split, to: out}]\n"
    )
    out = tmp_path / "run"
    assert main(["run", str(pipeline), "--engine", "sim", "--out", str(out), "--quiet"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert error == [
        "elastream run: error: source 'lines' is of kind 'files': the simulator runs generator "
        "sources only (a files source runs on Spark: --engine spark)"
    ]
    assert not out.exists()
