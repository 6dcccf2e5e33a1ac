"""`elastream plan`: text and --json output, random instances, clear errors; plan() as a service."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.paths import ROOT

from elastream.cli import main
from elastream.placement.generator import random_instance
from elastream.placement.model import PlanRequest, Weights
from elastream.placement.service import plan
from elastream.placement.yaml_io import load_request

PIPELINE = ROOT / "src/elastream/examples/tweets.yaml"
INFRA = ROOT / "docs/placement/tweets-plan.yaml"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["plan", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_output_has_the_documented_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(PIPELINE), "--infra", str(INFRA), "--weights", "r=1", "--json")
    assert code == 0
    result = json.loads(out)
    assert {"replicas", "placement", "objective", "metrics", "solve_s"} <= set(result)
    assert set(result["metrics"]) == {"R", "C", "A", "T", "N", "EE"}
    ops = ["tweets", "parse", "classify_content", "classify_author", "store"]
    assert list(result["replicas"]) == ops
    for op in ops:
        assert len(result["placement"][op]) == result["replicas"][op]
    assert result["placement"]["tweets"] == ["edge"]  # pinned
    assert set(result["placement"]["classify_author"]) <= {"rack1", "rack2"}
    assert result["replicas"]["classify_content"] >= 2  # 50 tuples/s at 40 per replica
    assert result["solve_s"] > 0


def test_text_output_and_every_solver_agree(capsys: pytest.CaptureFixture[str]) -> None:
    values = {}
    for solver in ("exact", "compact", "brute"):
        code, out, _ = run(
            capsys,
            "--infra",
            "random:nodes=3,operators=3,seed=4",
            "--weights",
            "r=.5,z=.5",
            "--metric",
            "N",
            "--solver",
            solver,
            "--json",
        )
        assert code == 0
        values[solver] = json.loads(out)["objective"]
    assert values["exact"] == pytest.approx(values["brute"], abs=1e-6)
    assert values["compact"] == pytest.approx(values["brute"], abs=1e-6)
    code, out, _ = run(capsys, "--infra", "random:nodes=3,operators=3,seed=4")
    assert code == 0 and "F  = " in out and "op0" in out and "solved in" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--infra", "random:nodes=3", "--weights", "r=1"], "operators=... is required"),
        (["--infra", "random:nodes=3,operators=2", "--weights", "r=0.5"], "sum to 0.5, not 1"),
        (["--infra", "random:nodes=3,operators=2", "--weights", "q=1"], "bad item 'q=1'"),
        (["--infra", "nowhere.yaml"], "nowhere.yaml: no such file"),
        ([str(PIPELINE), "--infra", "random:nodes=2,operators=2"], "omit PIPELINE"),
    ],
)
def test_errors_are_reported_not_raised(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert message in err


def test_plan_accepts_the_json_form_of_a_request() -> None:
    app, infra = random_instance(4, 4, seed=2)
    req = PlanRequest(application=app, infrastructure=infra, weights=Weights(c=0.5, a=0.5))
    body = json.loads(req.model_dump_json())
    ticks = iter([10.0, 10.25])
    result = plan(body, clock=lambda: next(ticks))
    assert result["solve_s"] == pytest.approx(0.25)
    assert result == {**plan(req), "solve_s": result["solve_s"]}
    json.dumps(result)  # JSON-ready


def test_the_planning_file_example_in_the_docs_plans(tmp_path: Path) -> None:
    text = (ROOT / "docs/placement.md").read_text()
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    infra = tmp_path / "infra.yaml"
    infra.write_text(block)
    request = load_request(str(infra), PIPELINE, Weights(r=0.5, c=0.5))
    result = plan(request)
    assert result["placement"]["tweets"] == ["n0"]
    assert result["optimal"]
