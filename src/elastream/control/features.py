"""The optional features an engine may offer beside the `Engine` interface, and the one way to ask
for one: an engine lists what it offers in its `features`; `feature(engine, Kind)` returns the
engine as a `Kind` when it lists `Kind`, else None."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from elastream.control.policy import Lease, Placement
    from elastream.leasing.hosts import Host
    from elastream.model.snapshot import Snapshot
    from elastream.placement.model import Infrastructure


@runtime_checkable
class FastForward(Protocol):
    """Skips a steady stretch in one go (the simulator): constant input, empty queues, nothing
    changing. The MAPE loop asks for it only when the policy's decision changes nothing, and
    the stretch's figures are reported as one snapshot (`Snapshot.intervals`)."""

    def steady_intervals(self) -> int:
        """How many of the coming intervals would repeat the last one (0: none or unsure)."""
        ...

    def skip(self, intervals: int) -> Snapshot:
        """Run `intervals` steady intervals at once; their metrics as one stretch snapshot."""
        ...


@runtime_checkable
class Hosts(Protocol):
    """Leases hosts and places replicas on them: the first two steps of a `Plan` (plan.py)."""

    def lease(self, leases: tuple[Lease, ...]) -> None: ...

    def place(self, placement: tuple[Placement, ...]) -> None: ...


@runtime_checkable
class LeasedHosts(Hosts, Protocol):
    """Also lists its leased hosts, with their BTU clocks, for the host planner (`SlotHosts`)."""

    def hosts(self) -> tuple[Host, ...]: ...


@runtime_checkable
class Network(Protocol):
    """Places replicas on the nodes of a network whose links delay the streams between them
    (the simulator): S-ODRP's placement (control/sodrp.py) gives it the nodes and links."""

    def set_network(self, network: Infrastructure) -> None: ...


@runtime_checkable
class GracefulStop(Protocol):
    """Stops on request (SIGINT, SIGTERM): its sources stop reading, its queues drain; or at
    once (a second signal), losing nothing committed: a resumed run carries on."""

    def request_stop(self) -> None: ...

    def abort(self) -> None: ...


@runtime_checkable
class Preflight(Protocol):
    """Checks before it starts what it can (e.g. Java, the sources and sinks, the functions),
    so that a run that cannot work fails in one line having created nothing: the run session
    calls `check` before it opens any output, endpoint or queue. It says what it checked, a
    line each (`elastream check` prints them)."""

    def check(self) -> list[str]: ...


@runtime_checkable
class MessageTransport(Protocol):
    """Offers the decentralized policy's agents a message transport: the name it is registered
    under in `decentral.transport.TRANSPORTS` (TCP in the Spark driver, memory in the
    simulator). The run path hands it to the policy (`runner.engines`)."""

    message_transport: str


FEATURES: tuple[type, ...] = (
    FastForward,
    Hosts,
    LeasedHosts,
    Network,
    GracefulStop,
    Preflight,
    MessageTransport,
)

F = TypeVar("F")


def feature(engine: object, kind: type[F]) -> F | None:
    """`engine` as a `kind` if its `features` list `kind`, else None. An engine that lists a
    feature it does not implement is an error (TypeError naming both), never silently ignored."""
    if kind not in FEATURES:
        raise TypeError(f"{kind.__name__} is no engine feature (known: {_names(FEATURES)})")
    offered = getattr(engine, "features", None)
    if offered is None:
        raise TypeError(f"{type(engine).__name__} has no `features` (see control.mape.Engine)")
    if kind not in offered:
        return None
    if not isinstance(engine, kind):
        raise TypeError(f"{type(engine).__name__} lists the feature {kind.__name__} but lacks it")
    return engine


def _names(kinds: tuple[type, ...]) -> str:
    return ", ".join(k.__name__ for k in kinds)
