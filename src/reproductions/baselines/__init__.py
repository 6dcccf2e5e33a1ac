"""Baselines the benchmarks measure elastream against (a plain Structured Streaming query)."""
