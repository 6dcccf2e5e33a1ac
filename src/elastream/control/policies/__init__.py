"""Scaling policies, each a pure function registered by name in `POLICIES` on import."""

from elastream.control.policies import (
    dabs,
    decentralized,
    ds2,
    lagaware,
    objective,
    proactive,
    psps,
    static,
    threshold,
)
from elastream.control.policy import POLICIES

REGISTERED = (dabs, decentralized, ds2, lagaware, objective, proactive, psps, static, threshold)

__all__ = ["POLICIES", "REGISTERED"]
