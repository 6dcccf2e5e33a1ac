"""Engine-independent model: topology, events, snapshots, policies, guards (no Spark here)."""
