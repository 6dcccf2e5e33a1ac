"""The DEBS 2015 trips the tests read (skipped when ../shared/data is absent) and the pipeline."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from elastream.config.files import load_pipeline
from elastream.examples import debs
from elastream.model.pipeline import Pipeline, ReplicaPool
from support.paths import ROOT

FILE = "shared/data/debs2015/taxi_trips_2013-01-01_first10k.csv"


TRIPS = Path(os.environ.get(debs.TRIPS_ENV) or ROOT.parent / FILE)


needs_trips = pytest.mark.skipif(not TRIPS.exists(), reason=f"no DEBS 2015 trips at {TRIPS}")


DEBS_PIPELINE = Path(debs.__file__).with_name("debs.yaml")


def debs_pipeline(**pools: int) -> Pipeline:
    """debs.yaml with the operators' pools (1..n) as given, the others at one replica, no
    emulated service time."""
    pipeline = load_pipeline(DEBS_PIPELINE)
    ops = [
        op.model_copy(
            update={
                "replicas": ReplicaPool(min=1, max=pools.get(op.name, 1)),
                "service_time_ms": 0.0,
            }
        )
        for op in pipeline.operators
    ]
    return pipeline.model_copy(update={"operators": tuple(ops)})
