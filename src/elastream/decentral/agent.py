"""The per-instance agent a runtime drives: its own load and view in, the protocol's effects out.

One `Agent` per operator instance (per active replica on a real runtime). Each step the runtime
calls `observe(now, load, n_view)` with the instance's measured load l_t (tuples per step) and its
local view of n_t (the number of siblings its predecessor routes to); every protocol message
addressed to it goes through `receive(env, now)`. Both return `Effects`: the messages to put on
FIFO channels, the sibling ids to create (createNode: an idle replica to host, which must get its
own Agent via `Agent.spawn`), and whether this instance became active or terminated."""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field

from pydantic import Field

from elastream.base.settings import Settings
from elastream.decentral.decision import Action, DecisionConfig, decide
from elastream.decentral.messages import Envelope, NodeId
from elastream.decentral.node import Effects, Node


class AgentConfig(Settings):
    """How often and with which rule an agent decides (Section 5.1 defaults)."""

    decision: DecisionConfig = Field(
        default_factory=DecisionConfig, description="the local rule (C, r, thresholds, damping)"
    )
    period: int = Field(5, ge=1, description="steps between two decisions of one instance")
    seed: int = Field(0, description="seed of every agent's own random draws")
    leave_guards: bool = Field(
        True,
        description="the leave guards (Close, awaited deletions) against the two deletion races "
        "the paper misses; False = the protocol as written",
    )


@dataclass(slots=True)
class Agent:
    """Alg. 11, triggered every `period` steps from the step the instance became active."""

    node: Node
    config: AgentConfig
    phase: int = 0
    rng: random.Random = field(init=False)
    _view: int | None = None
    _view_since: int = 0
    _recent: deque[int] = field(default_factory=deque)  # own views of n_t, newest last

    def __post_init__(self) -> None:
        self.rng = random.Random(f"{self.config.seed}:{self.node.id}")

    @classmethod
    def spawn(cls, nid: NodeId, n_ops: int, config: AgentConfig) -> Agent:
        """The agent of a sibling just created by createNode(): idle until its `start`."""
        return cls(Node.idle(nid, n_ops, guards=config.leave_guards), config)

    def observe(self, now: int, load: float, n_view: int, free: int | None = None) -> Effects:
        """One step: this instance's load l_t and view n_t in; `free` caps the siblings it may
        create now (free replica slots on a bounded pool; None = unbounded, as in the paper)."""
        if free is not None and free < 0:
            raise ValueError(f"free replica slots must be >= 0, got {free} at {self.node.id}")
        if n_view != self._view:
            self._view, self._view_since = n_view, now
        pending = self.config.decision.pending_steps
        self._recent.append(n_view)
        while len(self._recent) > pending + 1:
            self._recent.popleft()
        node = self.node
        due = now > self.phase and (now - self.phase) % self.config.period == 0
        if not due or not node.can_decide():
            return Effects()
        stays = node.is_keeper or not node.can_scale_in()
        age = now - self._view_since
        shared = min(self._recent) if pending else None
        d = decide(self.config.decision, load, n_view, stays, self.rng.random(), age, shared)
        if d.action is Action.SCALE_OUT:
            count = d.count if free is None else min(d.count, free)
            return node.scale_out(count) if count else Effects()
        if d.action is Action.SCALE_IN:
            return node.scale_in()
        return Effects()

    def receive(self, env: Envelope, now: int) -> Effects:
        fx = self.node.receive(env)
        if fx.activated:
            self.phase = now
        return fx


def n_view(node: Node, agents: dict[NodeId, Agent]) -> int:
    """n_t as a neighbour knows it (Section 4.1.1): the first predecessor's successor count."""
    if node.preds:
        return len(agents[min(node.preds)].node.succs)
    if node.succs:
        return len(agents[min(node.succs)].node.preds)
    return sum(1 for a in agents.values() if a.node.id.op == node.id.op and not a.node.terminated)
