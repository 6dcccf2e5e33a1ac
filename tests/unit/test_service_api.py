"""The modelling service on a real uvicorn server on 127.0.0.1, driven over HTTP with httpx."""

from __future__ import annotations

import time

import httpx
import numpy as np
import pytest
import yaml
from pydantic import BaseModel, ConfigDict, Field

from elastream.history import HistoryStore
from elastream.service.app import Planner, create_app
from elastream.service.graphs import GraphDirectory
from elastream.service.jobs import JobManager
from elastream.service.operations import Modeller
from elastream.service.planners import PLANNERS
from elastream.service.schemas import HistorySelection
from elastream.service.server import BackgroundServer
from reproductions.caladrius.synthetic import WORDCOUNT_GRAPH, wordcount_history


class FitRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    pipeline: str = Field(..., description="pipeline in the history")
    component: str = Field(..., description="component to report")


class FitResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    alpha: float = Field(..., description="fitted α")
    sp: float = Field(..., description="fitted per-replica SP")


def fit_planner(modeller: Modeller, req: BaseModel) -> BaseModel:
    assert isinstance(req, FitRequest)
    graph = modeller.graph(req.pipeline, None)
    models = modeller.fit(HistorySelection(pipeline=req.pipeline), graph)
    inst = models[req.component].instance
    return FitResult(alpha=inst.alpha, sp=inst.sp)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("service")
    graphs = root / "graphs"
    graphs.mkdir()
    (graphs / "wordcount.yaml").write_text(yaml.safe_dump({"name": "wordcount", **WORDCOUNT_GRAPH}))
    ghost = {**WORDCOUNT_GRAPH, "components": [*WORDCOUNT_GRAPH["components"], "ghost"]}
    (graphs / "ghosted.yaml").write_text(yaml.safe_dump(ghost))
    store = HistoryStore(root / "history.db")
    days = 3
    t = np.arange(days * 48)
    rates = 300 + 250 * np.sin(2 * np.pi * t / 48)  # crosses the splitter's 300/s at p = 3
    par = {"spout": 1, "splitter": 3, "counter": 4}
    store.record(wordcount_history("r1", rates, par, interval_s=1800.0, seed=1))
    store.record(wordcount_history("r1", rates, par, interval_s=1800.0, seed=1, pipeline="ghosted"))
    planners = {
        "fit": Planner("fit", "report one component's fit", FitRequest, FitResult, fit_planner),
        **PLANNERS,
    }
    app = create_app(Modeller(store, GraphDirectory(graphs)), planners)
    with BackgroundServer(app) as srv:
        yield srv
    store.close()


@pytest.fixture
def client(server):
    with httpx.Client(base_url=server.url, timeout=10) as c:
        yield c


def wait(client: httpx.Client, location: str, timeout_s: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        body = client.get(location).json()
        if body["status"] != "pending":
            return body
        time.sleep(0.05)
    raise AssertionError(f"job {location} still pending after {timeout_s} s")


PREDICT = {"pipeline": "wordcount", "parallelism": {"splitter": 2}, "source_rate": 600.0}


def test_server_binds_loopback(server):
    assert server.host == "127.0.0.1"
    assert httpx.get(f"{server.url}/openapi.json").json()["info"]["title"]


def test_prediction_202_poll_result(client):
    resp = client.post("/predictions", json=PREDICT)
    assert resp.status_code == 202
    accepted = resp.json()
    assert resp.headers["location"] == f"/jobs/{accepted['job_id']}" == accepted["location"]
    assert accepted["status"] in {"pending", "done"}
    job = wait(client, resp.headers["location"])
    assert job["status"] == "done", job["error"]
    res = job["result"]
    split = next(c for c in res["components"] if c["name"] == "splitter")
    assert split["saturation_point"] == pytest.approx(200.0, rel=0.02)  # 2 × 100/s
    assert split["output_per_input"] == pytest.approx(7.6)
    assert split["replica_saturation_point"] == pytest.approx(100.0, rel=0.02)
    assert split["replica_saturation_throughput"] == pytest.approx(760.0, rel=0.02)
    assert split["points_below"] > 0 and split["points_above"] > 0
    assert res["bottleneck"] == "splitter"
    assert res["risk"] == "high"
    counter = next(c for c in res["components"] if c["name"] == "counter")
    assert counter["parallelism"] == 4  # left out: keeps the last measured parallelism


def test_identical_request_is_served_from_cache(client):
    body = {**PREDICT, "source_rate": 123.0}
    first = client.post("/predictions", json=body).json()
    wait(client, first["location"])
    second = client.post("/predictions", json=body)
    assert second.status_code == 202
    assert second.json()["job_id"] == first["job_id"]
    assert second.json()["cached"] is True
    assert second.json()["status"] == "done"
    other = client.post("/predictions", json={**body, "source_rate": 124.0}).json()
    assert other["job_id"] != first["job_id"]
    assert other["cached"] is False


def test_forecast_job(client):
    body = {"pipeline": "wordcount", "forecast": {"model": "seasonal-profile", "horizon_s": 7200}}
    job = wait(client, client.post("/forecasts", json=body).json()["location"])
    assert job["status"] == "done", job["error"]
    res = job["result"]
    assert res["step_s"] == 1800.0
    assert len(res["point"]) == len(res["lower"]) == len(res["upper"]) == 4
    bounds = zip(res["lower"], res["point"], res["upper"], strict=True)
    assert all(lo <= p <= hi for lo, p, hi in bounds)


def test_prediction_at_the_forecast(client):
    body = {
        "pipeline": "wordcount",
        "parallelism": {"splitter": 8},
        "forecast": {"model": "summary", "horizon_s": 3600},
    }
    job = wait(client, client.post("/predictions", json=body).json()["location"])
    assert job["status"] == "done", job["error"]
    assert job["result"]["source_rate"] == pytest.approx(550.0, rel=0.05)  # the 95 % quantile


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({**PREDICT, "source_rate": -1}, ["body", "source_rate"]),
        ({**PREDICT, "parallelism": {"splitter": 0}}, ["body", "parallelism"]),
        ({**PREDICT, "cores": 0}, ["body", "cores"]),
        ({**PREDICT, "typo": 1}, ["body", "typo"]),
        (
            {**PREDICT, "source_rate": None, "forecast": {"model": "nope", "horizon_s": 60}},
            ["body", "forecast", "model"],
        ),
        ({k: v for k, v in PREDICT.items() if k != "pipeline"}, ["body", "pipeline"]),
    ],
)
def test_bad_prediction_requests_are_422_naming_the_field(client, body, loc):
    resp = client.post("/predictions", json=body)
    assert resp.status_code == 422
    assert any(err["loc"][: len(loc)] == loc for err in resp.json()["detail"])


def test_neither_rate_nor_forecast_is_422(client):
    resp = client.post("/predictions", json={**PREDICT, "source_rate": None})
    assert resp.status_code == 422
    assert "exactly one of source_rate and forecast" in resp.text


def test_failing_model_gives_a_failed_job_with_the_error(client):
    resp = client.post("/predictions", json={**PREDICT, "pipeline": "ghosted"})
    job = wait(client, resp.json()["location"])
    assert job["status"] == "failed"
    assert "ModelError" in job["error"]
    assert "no history for component 'ghost'" in job["error"]
    assert job["result"] is None


def test_unknown_job_is_404(client):
    assert client.get("/jobs/nope").status_code == 404


def test_models_are_listed_with_descriptions(client):
    models = {m["name"]: m for m in client.get("/models").json()}
    assert {"summary", "holt-winters", "seasonal-profile", "prophet"} <= set(models)
    assert {"caladrius-throughput", "cpu-psi", "queueing-latency"} <= set(models)
    assert all(m["description"] for m in models.values())
    assert "season_length" in models["holt-winters"]["params"]["properties"]


def test_planner_is_mounted_as_a_job_endpoint(client):
    resp = client.post("/plans/fit", json={"pipeline": "wordcount", "component": "splitter"})
    assert resp.status_code == 202
    job = wait(client, resp.headers["location"])
    assert job["status"] == "done", job["error"]
    assert job["result"]["sp"] == pytest.approx(100.0, rel=0.02)
    assert client.post("/plans/fit", json={"pipeline": "wordcount"}).status_code == 422
    assert "/plans/fit" in client.get("/openapi.json").json()["paths"]


def test_proactive_planner_sizes_for_the_forecast_peak(client):
    body = {
        "pipeline": "wordcount",
        "forecast": {"model": "seasonal-profile", "horizon_s": 86400},
        "max_parallelism": {"spout": 1, "splitter": 16, "counter": 16},
    }
    job = wait(client, client.post("/plans/proactive", json=body).json()["location"])
    assert job["status"] == "done", job["error"]
    res = job["result"]
    # three identical synthetic days: the profile's peak is the sampled peak, 300 + 250
    assert res["rate"] == pytest.approx(550, rel=1e-6)
    split = next(c for c in res["components"] if c["name"] == "splitter")
    assert split["parallelism"] == int(res["rate"] // (0.9 * 100)) + 1
    assert split["feasible"] is True
    assert res["risk"] == "low", res


def test_job_manager_forgets_the_oldest_finished_jobs():
    manager = JobManager(workers=1, keep=3)
    ids = []
    for k in range(5):
        job, hit = manager.submit(
            "t", FitResult(alpha=k, sp=1), 0, lambda k=k: FitResult(alpha=k, sp=1)
        )
        assert not hit
        ids.append(job.job_id)
        deadline = time.monotonic() + 5
        while manager.status(job.job_id).status == "pending":
            assert time.monotonic() < deadline
            time.sleep(0.01)
    assert [manager.status(i) is None for i in ids] == [True, True, False, False, False]
    assert manager.status(ids[-1]).result == {"alpha": 4.0, "sp": 1.0}
    manager.shutdown()


def test_odrp_planner_answers_like_elastream_plan(client):
    from elastream.placement.generator import random_instance
    from elastream.placement.service import plan

    app, infra = random_instance(nodes=3, operators=3, seed=4)
    body = {
        "application": app.model_dump(mode="json", by_alias=True),
        "infrastructure": infra.model_dump(mode="json", by_alias=True),
        "weights": {"r": 0.25, "a": 0.25, "c": 0.25, "z": 0.25},
        "solver": "compact",
    }
    resp = client.post("/plans/odrp", json=body)
    assert resp.status_code == 202
    job = wait(client, resp.json()["location"])
    assert job["status"] == "done", job
    direct = plan(body)
    assert job["result"]["replicas"] == direct["replicas"]
    assert job["result"]["objective"] == pytest.approx(direct["objective"], rel=1e-6)
    bad = client.post("/plans/odrp", json={**body, "weights": {"r": 2.0, "a": 0, "c": 0, "z": 0}})
    assert bad.status_code == 422
    assert "odrp" in str(client.get("/openapi.json").json()["paths"])
