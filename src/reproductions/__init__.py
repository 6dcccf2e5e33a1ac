"""The papers' experiment apparatus (instances, simulators, generators, baselines): used by the
benchmarks and tests that reproduce the papers, never by elastream itself (an import contract)."""
