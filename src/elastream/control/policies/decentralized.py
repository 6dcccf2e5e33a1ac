"""`decentralized`: one Belkhiria–Tedeschi agent per active replica decides locally (seed 003).

No central formula: each interval, every active replica's agent (`decentral.swarm`) sees only
its own load and its view n_t (from its neighbours' protocol messages), decides by Alg. 11 to
duplicate itself or leave, and the protocol runs over the message transport until it is quiet;
an operator's replica count is then its number of active agents, enacted as any decision is.

A replica's load, in units of its own capacity over the interval (so C = 1), is its utilization
plus its even share of the operator's backlog:

    l_ij(t) / C_ij = U_ij(t) + (|q_i(t)| / r_i(t)) · et_i / td,     U_ij = μ_ij(t) · et_i / td

i.e. (its processed events + its share of the waiting ones) / (events it can process in td =
μ_ij / U_ij). With the backlog a saturated replica sees a load above 1 and scales out (from
U alone, capped at 1, one replica could never double). The transport is a registered name: the
run session passes the engine's (TCP in the Spark driver, in memory in the simulator); the
policy never opens a connection itself. `close` closes it when the run ends."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import Field

from elastream.base.registry import UnknownNameError
from elastream.base.settings import Settings
from elastream.control.policy import POLICIES, Decision, Policy, PolicyConfigError, plural
from elastream.decentral.agent import AgentConfig
from elastream.decentral.decision import DecisionConfig
from elastream.decentral.swarm import Pool, Swarm
from elastream.decentral.transport import TRANSPORTS
from elastream.model.pipeline import DEFAULT_ET_S
from elastream.model.snapshot import OperatorStats, Snapshot


class DecentralizedConfig(Settings):
    """Options of the decentralized policy (Section 5.1's ratios; one decision per interval)."""

    transport: str = Field(
        "memory",
        description="message transport of the agents: 'memory', or 'tcp' (registered by the "
        "Spark runtime); the run session sets the engine's own unless this is given",
    )
    target_ratio: float = Field(0.7, gt=0, le=1, description="r: desired load / capacity")
    thres_up: float = Field(0.8, gt=0, description="a replica duplicates when load >= this")
    thres_down: float = Field(
        0.6, ge=0, description="a replica leaves (probably) when load <= this; keepers excepted"
    )
    damping_age: int = Field(
        0, ge=0, description="damp scale-out by the age of the n_t view (decentralized.md); 0: off"
    )
    pending_steps: int = Field(
        0, ge=0, description="pending-aware L_t over this many intervals (decentralized.md); 0: off"
    )
    period: int = Field(1, ge=1, description="intervals between two decisions of one agent")
    seed: int = Field(0, description="seed of every agent's own random draws")
    leave_guards: bool = Field(
        True, description="the leave guards against the paper's two deletion races"
    )
    et_default_s: float = Field(
        DEFAULT_ET_S, gt=0, description="et_i before anything is measured, s"
    )

    def agent_config(self) -> AgentConfig:
        decision = DecisionConfig(
            capacity=1.0,
            target_ratio=self.target_ratio,
            thres_up=self.thres_up,
            thres_down=self.thres_down,
            damping_age=self.damping_age,
            pending_steps=self.pending_steps,
        )
        return AgentConfig(
            decision=decision, period=self.period, seed=self.seed, leave_guards=self.leave_guards
        )


@dataclass(frozen=True, slots=True)
class DecentralizedState:
    """The run's swarm (None before the first interval) and the last measured et_i."""

    swarm: Swarm | None = None
    et: tuple[tuple[str, float], ...] = field(default=())


def replica_loads(stats: OperatorStats, td: float, service_time_s: float) -> list[float]:
    """Each active replica's load in units of its capacity: U_ij + its share of the backlog."""
    backlog = stats.queue / max(1, stats.replicas) * service_time_s / td
    utilization = list(stats.utilization[: stats.replicas])
    utilization += [0.0] * (stats.replicas - len(utilization))
    return [u + backlog for u in utilization]


def start_swarm(snapshot: Snapshot, config: DecentralizedConfig) -> Swarm:
    """One agent per active replica as the run starts, on the configured transport."""
    try:
        make_transport = TRANSPORTS.get(config.transport)
    except UnknownNameError as exc:
        raise PolicyConfigError(
            f"policy 'decentralized': option transport: {exc}; an I/O transport registers "
            "when its module is imported (the Spark runtime imports runtime.tcp.transport)"
        ) from None
    pools = [
        Pool(o.name, max(o.min_replicas, o.replicas), o.min_replicas, o.max_replicas)
        for o in snapshot.operators
    ]
    transport = make_transport()
    try:
        return Swarm(pools, transport, config.agent_config())
    except Exception:  # not started: close its connections and thread, then report
        transport.close()
        raise


def decide(
    snapshot: Snapshot, state: DecentralizedState, config: DecentralizedConfig
) -> tuple[Decision, DecentralizedState]:
    swarm = state.swarm or start_swarm(snapshot, config)
    ets = dict(state.et)
    ets.update({o.name: o.service_time_s for o in snapshot.operators if o.service_time_s})
    loads = {
        o.name: replica_loads(o, snapshot.interval_s, ets.get(o.name, config.et_default_s))
        for o in snapshot.operators
    }
    before = swarm.messages_sent()
    counts = swarm.step(loads)
    sent = swarm.messages_sent() - before
    details = {
        name: f"{n} agents; loads {' '.join(f'{x:.2f}' for x in loads[name])}; {sent} msgs"
        for name, n in counts.items()
    }
    reasons = {
        name: f"{plural(n, 'replica')} agreed by their agents (busiest at "
        f"{max(loads[name], default=0.0):.0%} of its capacity, {plural(sent, 'message')})"
        for name, n in counts.items()
    }
    decision = Decision.of(counts, reasons, details)
    return decision, DecentralizedState(swarm, tuple(ets.items()))


def messages_sent(state: DecentralizedState) -> int:
    """The protocol messages the agents have sent since the run started."""
    return 0 if state.swarm is None else state.swarm.messages_sent()


def close(state: DecentralizedState) -> None:
    """Close the swarm's transport (connections and threads of an I/O transport)."""
    if state.swarm is not None:
        state.swarm.close()


POLICY = POLICIES.register(
    "decentralized",
    Policy(
        "decentralized",
        decide,
        DecentralizedConfig,
        DecentralizedState(),
        "one local agent per replica, Belkhiria-Tedeschi (no central decision)",
        close=close,
        messages=messages_sent,
    ),
)
