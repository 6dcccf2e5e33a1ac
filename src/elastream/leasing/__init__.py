"""Cost-aware host leasing: hosts billed per BTU under the replicas (VISP, PeerJ CS 2018)."""
