"""Experiments: the bench, simulator calibration and its comparison with Spark."""
