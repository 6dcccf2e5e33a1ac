"""ODRP: optimal operator replication and placement (Cardellini et al.) as ILPs on HiGHS."""
