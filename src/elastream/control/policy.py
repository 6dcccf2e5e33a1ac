"""The policy interface: pure `decide(snapshot, state, config) -> (decision, state)` functions,
where the decision is replica counts (`Decision`) or a whole `Plan` the Execute step applies
(control/execute.py): host leases, replica placement, then active replica counts."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from elastream.base.registry import Registry
from elastream.base.settings import plain_message
from elastream.model.snapshot import Snapshot

C = TypeVar("C")
S = TypeVar("S")


class PolicyConfigError(ValueError):
    """Options that do not fit a policy; the message names the policy and the option."""


@dataclass(frozen=True, slots=True)
class Decision:
    """Target active replicas per operator; per operator a reason for its users, in words
    ("input 461 ev/s expected, 3 replicas serve 480"), and the figures behind it in the
    policy's own symbols (`details`: a tooltip, a debug column)."""

    replicas: tuple[tuple[str, int], ...]
    reasons: tuple[tuple[str, str], ...] = ()
    details: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(
        cls,
        replicas: Mapping[str, int],
        reasons: Mapping[str, str] | None = None,
        details: Mapping[str, str] | None = None,
    ) -> Decision:
        return cls(
            tuple(replicas.items()), tuple((reasons or {}).items()), tuple((details or {}).items())
        )

    def as_dict(self) -> dict[str, int]:
        return dict(self.replicas)

    def reason(self, name: str) -> str:
        return dict(self.reasons).get(name, "")

    def detail(self, name: str) -> str:
        return dict(self.details).get(name, "")


@dataclass(frozen=True, slots=True)
class Lease:
    """Lease `count` new hosts of a kind (count > 0), or release the hosts named in `hosts`
    (count < 0, one name per host released)."""

    host_kind: str
    count: int
    hosts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.count == 0 or (self.count < 0 and len(self.hosts) != -self.count):
            raise ValueError(
                f"lease of {self.host_kind!r}: count {self.count} with hosts {self.hosts}; "
                "a release names every host it releases, a lease names none"
            )
        if self.count > 0 and self.hosts:
            raise ValueError(f"lease of {self.host_kind!r}: new hosts are named by the engine")


@dataclass(frozen=True, slots=True)
class Placement:
    """Where the replicas of one operator run: one host name per replica, in replica order."""

    operator: str
    hosts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Plan:
    """One interval's plan: host leases, replica placement, then active replica counts."""

    replicas: Decision
    leases: tuple[Lease, ...] = field(default=())
    placement: tuple[Placement, ...] = field(default=())


DecideFn = Callable[[Snapshot, Any, Any], tuple[Decision | Plan, Any]]


@dataclass(frozen=True, slots=True)
class Policy(Generic[C, S]):
    """A registered policy: its pure decide function, its config type, its initial state,
    `close(state)` for a policy whose state holds resources (called when the run ends), and
    `messages(state)` for a policy whose agents coordinate by messages: how many they have sent
    so far (the run's `messages` figure; a central policy sends none). `fast_forward_exact`:
    the policy decides nothing new while the input rate, queues and measured service times stay
    the same, so the simulator may skip such stretches in one go (docs/simulator.md): its state
    holds no per-interval series (dabs and proactive keep a window of rates, lagaware a Holt
    state updated each interval, decentralized live agents: not exact).

    What a policy needs from the run is said by its config's fields: a field `objective` gets
    the run's objective, a field `transport` the engine's message transport."""

    name: str
    decide: DecideFn
    config_type: type[C]
    initial_state: S
    summary: str
    close: Callable[[Any], None] | None = None
    messages: Callable[[Any], int] | None = None
    fast_forward_exact: bool = False

    def make_config(self, options: Mapping[str, Any] | None = None) -> C:
        """Build this policy's frozen config from plain options, naming any bad option."""
        options = dict(options or {})
        known = set(self.config_type.model_fields)  # type: ignore[attr-defined]
        unknown = sorted(set(options) - known)
        if unknown:
            raise PolicyConfigError(
                f"policy {self.name!r}: unknown option(s) {', '.join(unknown)} "
                f"(known: {', '.join(sorted(known)) or 'none'})"
            )
        try:
            return self.config_type(**options)
        except ValidationError as exc:
            problems = "; ".join(plain_message(err) for err in exc.errors())
            raise PolicyConfigError(f"policy {self.name!r}: {problems}") from None


POLICIES: Registry[Policy[Any, Any]] = Registry("policy", group="elastream.policies")


def ceil_eps(x: float) -> int:
    """ceil() that ignores floating-point dust (100 * 0.02 / 1 must give 2, not 3)."""
    return math.ceil(x - 1e-9)


def plural(n: int, word: str) -> str:
    """'1 replica', '3 replicas'."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def demand_reason(rate: float, replicas: int, per_replica: float, queued: int = 0) -> str:
    """A sizing decision in words: 'input 461 ev/s expected (102 queued), 3 replicas serve
    480 ev/s' (`rate` and `per_replica` in events per second)."""
    backlog = f" ({queued:,} queued)" if queued else ""
    serve = "serves" if replicas == 1 else "serve"
    capacity = replicas * per_replica
    return (
        f"input {rate:,.0f} ev/s expected{backlog}, "
        f"{plural(replicas, 'replica')} {serve} {capacity:,.0f} ev/s"
    )
