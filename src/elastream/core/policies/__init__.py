"""Scaling policies, each a pure function registered by name in `POLICIES`."""

from elastream.core.policies import psps, static, threshold  # noqa: F401  (registers them)
from elastream.core.policy import POLICIES

__all__ = ["POLICIES"]
