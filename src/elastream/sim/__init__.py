"""The fast simulator: a second Engine (discrete simulated time, cohorts of events) for the MAPE
loop and policies the Spark runtime uses; docs/simulator.md describes the model."""

from elastream.sim.engine import SimEngine, simulate
from elastream.sim.profile import SimProfileError, profile_pipeline
from elastream.sim.settings import SimSettings, SimSettingsError, sim_settings_from_dict

__all__ = [
    "SimEngine",
    "SimProfileError",
    "SimSettings",
    "SimSettingsError",
    "profile_pipeline",
    "sim_settings_from_dict",
    "simulate",
]
