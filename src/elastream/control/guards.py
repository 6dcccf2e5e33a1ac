"""The one guard layer that wraps every policy: pool bounds, step limits, dead-band, stabilization.

Order, per operator: clamp the raw target into the pool [min, max]; scale-down stabilization
(the largest recommendation within the window wins, as Kubernetes' HPA does); scale-down delay
after a scale-up; dead-band (ignore relative changes below it); maximum step up/down; clamp again;
for a stateful operator, no change within `stateful_interval_s` of its previous one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import Field

from elastream.base.settings import Settings
from elastream.control.policy import Decision, Plan, Policy
from elastream.model.snapshot import OperatorStats, Snapshot


class GuardConfig(Settings):
    """The guard layer's settings (the same for every policy)."""

    max_step_up: int | None = Field(
        None, ge=1, description="at most this many replicas added per decision (None: no limit)"
    )
    max_step_down: int | None = Field(
        None, ge=1, description="at most this many replicas removed per decision (None: no limit)"
    )
    dead_band: float = Field(
        0.0,
        ge=0,
        lt=1,
        description="ignore changes smaller than this fraction of the current replicas",
    )
    stabilization_s: float = Field(
        0.0, ge=0, description="scale down only to the largest recommendation of this window, s"
    )
    scale_down_delay_s: float = Field(
        0.0, ge=0, description="no scale-down for this long after a scale-up, s"
    )
    stateful_interval_s: float = Field(
        0.0,
        ge=0,
        description="a stateful operator's replicas change at most once in this long, s "
        "(its key groups move at each change; docs/state.md)",
    )


@dataclass(frozen=True, slots=True)
class GuardState:
    history: tuple[tuple[str, tuple[tuple[float, int], ...]], ...] = field(default=())
    last_up: tuple[tuple[str, float], ...] = field(default=())
    last_change: tuple[tuple[str, float], ...] = field(default=())  # stateful operators only


@dataclass(frozen=True, slots=True)
class GuardedState:
    """The wrapped policy's own state beside the guards' state."""

    policy: Any
    guards: GuardState = GuardState()


def clamp(value: int, stats: OperatorStats) -> int:
    return max(stats.min_replicas, min(stats.max_replicas, value))


def guard_one(
    stats: OperatorStats,
    raw: int,
    t: float,
    history: tuple[tuple[float, int], ...],
    last_up: float | None,
    config: GuardConfig,
) -> tuple[int, tuple[tuple[float, int], ...]]:
    """The guarded target for one operator, and its updated recommendation history."""
    current = stats.replicas
    target = clamp(raw, stats)
    window = (*((ts, r) for ts, r in history if t - ts < config.stabilization_s), (t, target))
    if target < current:
        target = min(current, max(r for _, r in window))
        if last_up is not None and t - last_up < config.scale_down_delay_s:
            target = current
    if current > 0 and abs(target - current) / current < config.dead_band:
        target = current
    if config.max_step_up is not None:
        target = min(target, current + config.max_step_up)
    if config.max_step_down is not None:
        target = max(target, current - config.max_step_down)
    return clamp(target, stats), window


def apply_guards(
    snapshot: Snapshot, raw: Decision, state: GuardState, config: GuardConfig
) -> tuple[Decision, GuardState]:
    """Guard every operator's raw target; operators the policy left out keep their replicas."""
    wanted = raw.as_dict()
    histories = dict(state.history)
    last_up = dict(state.last_up)
    last_change = dict(state.last_change)
    targets: dict[str, int] = {}
    for stats in snapshot.operators:
        target, histories[stats.name] = guard_one(
            stats,
            wanted.get(stats.name, stats.replicas),
            snapshot.t,
            histories.get(stats.name, ()),
            last_up.get(stats.name),
            config,
        )
        if stats.stateful and target != stats.replicas:
            changed_at = last_change.get(stats.name)
            if changed_at is not None and snapshot.t - changed_at < config.stateful_interval_s:
                target = stats.replicas
            else:
                last_change[stats.name] = snapshot.t
        if target > stats.replicas:
            last_up[stats.name] = snapshot.t
        targets[stats.name] = target
    new_state = GuardState(
        tuple(histories.items()), tuple(last_up.items()), tuple(last_change.items())
    )
    floors = {o.name: o.min_replicas for o in snapshot.operators}
    return guarded(raw, targets, floors), new_state


def guarded(raw: Decision, targets: dict[str, int], floors: dict[str, int]) -> Decision:
    """The decision with the guarded targets; where the guards changed the policy's target
    (beyond lifting it to the pool's minimum), its reason says so."""
    wanted = raw.as_dict()
    reasons = dict(raw.reasons)
    for name, target in targets.items():
        asked = wanted.get(name, target)
        if name not in reasons or asked == target:
            continue
        if target < asked:
            reasons[name] += f"; the pool and guards allow {target}"
        elif target > floors.get(name, 0):
            reasons[name] += f"; the guards keep {target}"
    return replace(raw, replicas=tuple(targets.items()), reasons=tuple(reasons.items()))


def guarded_plan(
    policy: Policy[Any, Any],
    snapshot: Snapshot,
    state: GuardedState,
    policy_config: Any,
    guard_config: GuardConfig,
) -> tuple[Plan, GuardedState]:
    """Run `policy` then the guard layer on its replica counts: the single entry point every
    engine calls. A policy returns counts (a `Decision`) or a whole `Plan`, whose leases and
    placement pass through as it made them."""
    raw, inner = policy.decide(snapshot, state.policy, policy_config)
    planned = raw if isinstance(raw, Plan) else Plan(raw)
    decision, guards = apply_guards(snapshot, planned.replicas, state.guards, guard_config)
    return replace(planned, replicas=decision), GuardedState(inner, guards)
