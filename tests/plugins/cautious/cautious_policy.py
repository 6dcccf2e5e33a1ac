"""A policy installed as a plugin, as a user's package would add one: this file and its
distribution's entry point (cautious_policy-1.0.dist-info/entry_points.txt), nothing else."""

from __future__ import annotations

from pydantic import Field

from elastream.base.settings import Settings
from elastream.control.policy import Decision, Policy
from elastream.model.snapshot import Snapshot


class CautiousConfig(Settings):
    """Options of the cautious policy."""

    extra: int = Field(1, ge=0, description="replicas kept above each operator's pool minimum")


def decide(snapshot: Snapshot, state: int, config: CautiousConfig) -> tuple[Decision, int]:
    """Each operator at its pool minimum + `extra` (within the pool); the state counts calls."""
    targets = {
        o.name: min(o.min_replicas + config.extra, o.max_replicas) for o in snapshot.operators
    }
    reasons = {name: f"cautious: pool minimum + {config.extra}" for name in targets}
    return Decision.of(targets, reasons), state + 1


POLICY = Policy("cautious", decide, CautiousConfig, 0, "pool minimum + extra (a test plugin)")
