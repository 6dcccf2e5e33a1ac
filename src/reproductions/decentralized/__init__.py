"""Belkhiria–Tedeschi decentralized scaling: the Section 5 simulation and a TCP host process."""
