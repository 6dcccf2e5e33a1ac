"""The pipeline model: topology, events, snapshots, grouping and the one metrics table."""
