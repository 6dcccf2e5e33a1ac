"""The agents of a pipeline's replica pools, one per active replica, stepped once per interval.

Operators are the protocol's layers in the order given (topological: each operator's neighbours
are the operators before and after it, exact for a chain). Operator i starts with `initial`
agents; the first `min` of them are keepers (they never leave, so the pool never drops below
its minimum). Each step, every active agent observes its own load and its view n_t (its first
predecessor's successor count, `agent.n_view`), with an even share of its pool's free slots, so
that concurrent siblings can never create more replicas than the pool holds. The operator's
replica count is its number of active agents once the protocol is quiet."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from elastream.decentral.agent import Agent, AgentConfig, n_view
from elastream.decentral.messages import NodeId
from elastream.decentral.node import Node
from elastream.decentral.transport import Observation, Transport


@dataclass(frozen=True, slots=True)
class Pool:
    """One operator's replica pool as the swarm sees it."""

    name: str
    initial: int
    min: int
    max: int

    def __post_init__(self) -> None:
        if not 1 <= self.min <= self.initial <= self.max:
            raise ValueError(
                f"pool of {self.name!r}: need 1 <= min <= initial <= max, "
                f"got {self.min}, {self.initial}, {self.max}"
            )


def even_shares(total: int, parts: int) -> list[int]:
    """`total` split into `parts` shares differing by at most one (the first ones larger)."""
    base, extra = divmod(total, parts)
    return [base + (1 if k < extra else 0) for k in range(parts)]


class Swarm:
    """One agent per active replica of every pool, on a message transport."""

    def __init__(self, pools: Sequence[Pool], transport: Transport, config: AgentConfig) -> None:
        if not pools:
            raise ValueError("a swarm needs at least one operator pool")
        self.pools = tuple(pools)
        self.transport = transport
        self.now = 0
        layers = [[NodeId(i, (j,)) for j in range(p.initial)] for i, p in enumerate(pools)]
        nodes = {
            nid: Node.initial(
                nid, layers, keeper=nid.path[0] < pools[nid.op].min, guards=config.leave_guards
            )
            for layer in layers
            for nid in layer
        }
        transport.start(nodes, config)

    def active(self, op: int) -> list[NodeId]:
        """The active agents of operator `op`, in id order (agent k serves replica slot k)."""
        agents = self.transport.agents()
        return sorted(n for n, a in agents.items() if n.op == op and a.node.active)

    def counts(self) -> dict[str, int]:
        """Active agents per operator: the replica counts to enact."""
        return {pool.name: len(self.active(i)) for i, pool in enumerate(self.pools)}

    def step(self, loads: Mapping[str, Sequence[float]]) -> dict[str, int]:
        """One interval: agent k of an operator sees `loads[name][k]` (its own load in units of
        its capacity; 0 beyond the list) and decides; the protocol settles; the new counts."""
        unknown = sorted(set(loads) - {p.name for p in self.pools})
        if unknown:
            raise KeyError(f"loads for operators the swarm does not know: {', '.join(unknown)}")
        self.now += 1
        agents = self.transport.agents()
        observations: list[Observation] = []
        for i, pool in enumerate(self.pools):
            observations += self._observations(i, pool, loads.get(pool.name, ()), agents)
        self.transport.step(self.now, observations)
        return self.counts()

    def _observations(
        self, op: int, pool: Pool, loads: Sequence[float], agents: dict[NodeId, Agent]
    ) -> list[Observation]:
        active = sorted(n for n, a in agents.items() if n.op == op and a.node.active)
        live = sum(1 for n, a in agents.items() if n.op == op and not a.node.terminated)
        shares = even_shares(max(0, pool.max - live), len(active))
        return [
            Observation(
                nid,
                loads[k] if k < len(loads) else 0.0,
                n_view(agents[nid].node, agents),
                shares[k],
            )
            for k, nid in enumerate(active)
        ]

    def messages_sent(self) -> int:
        return self.transport.messages_sent()

    def close(self) -> None:
        self.transport.close()
