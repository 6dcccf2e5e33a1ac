"""The fast simulator: a second Engine (discrete simulated time, cohorts of events) for the MAPE
loop and policies the Spark runtime uses; docs/simulator.md describes the model."""

from elastream.runtime.sim.profile import SimProfileError, profile_pipeline
from elastream.runtime.sim.settings import SimSettings, SimSettingsError, sim_settings_from_dict
from elastream.runtime.sim.simulator import SimEngine

__all__ = [
    "SimEngine",
    "SimProfileError",
    "SimSettings",
    "SimSettingsError",
    "profile_pipeline",
    "sim_settings_from_dict",
]
