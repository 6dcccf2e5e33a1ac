"""The simulator against the Spark runtime: workloads, calibration, comparison (docs)."""
