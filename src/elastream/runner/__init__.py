"""The one run path: a run session (workload, engine, MAPE loop, outputs) and what goes with it."""
