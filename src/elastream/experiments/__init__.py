"""Experiments: the one run session, benchmarks, simulator calibration and comparison."""
