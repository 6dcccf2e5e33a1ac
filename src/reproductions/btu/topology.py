"""The paper's manufacturing topology: Table 1 sensors, Table 2 operator types, Fig. 1 streams."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from elastream.leasing.hosts import LeasingError
from reproductions.btu.cluster import Demand


@dataclass(frozen=True)
class OperatorType:
    """One row of Table 2: o_slo (processing duration), o_cpu, o_memory, image size, ratio."""

    name: str
    slo_s: float  # processing duration in the over-provisioned case: the SLO o_slo
    cpu_shares: float
    memory_mb: float
    image_mb: float
    stateful: bool
    items_in: int  # outgoing ratio items_in : items_out (1:3 for O1, 50:1 for O2, ...)
    items_out: int

    @property
    def demand(self) -> Demand:
        return Demand(self.cpu_shares, self.memory_mb)

    @property
    def ratio(self) -> float:
        return self.items_out / self.items_in


@dataclass(frozen=True)
class Topology:
    """Operator types, per-machine source rates into them (items/s) and the streams between them."""

    operators: tuple[OperatorType, ...]
    source_rates: dict[str, float]  # items/s per machine entering each operator
    edges: tuple[tuple[str, str], ...]  # (upstream, downstream); the output splits evenly

    def __post_init__(self) -> None:
        names = {o.name for o in self.operators}
        for a, b in self.edges:
            if a not in names or b not in names:
                raise LeasingError(f"edge {a}->{b} names an unknown operator")
        for s in self.source_rates:
            if s not in names:
                raise LeasingError(f"source feeds unknown operator {s!r}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.operators)

    def index(self, name: str) -> int:
        return self.names.index(name)

    def routing(self) -> np.ndarray:
        """R[i, j] = items entering operator j per item processed by operator i: the outgoing
        ratio split evenly over i's outgoing streams (O1's 1:3 sends one item to each of O3-O5)."""
        n = len(self.operators)
        r = np.zeros((n, n))
        for a, b in self.edges:
            fan = sum(1 for x, _ in self.edges if x == a)
            r[self.index(a), self.index(b)] = self.operators[self.index(a)].ratio / fan
        return r

    def source_vector(self) -> np.ndarray:
        return np.array([self.source_rates.get(n, 0.0) for n in self.names])

    def steady_rates(self, machines: float) -> np.ndarray:
        """Arrival rate (items/s) at every operator in steady state for `machines` machines."""
        r = self.routing()
        return np.linalg.solve(np.eye(len(self.operators)) - r.T, self.source_vector() * machines)

    def demands(self) -> dict[str, Demand]:
        return {o.name: o.demand for o in self.operators}


# Table 1 emissions per machine and real-time minute, replayed every 480 ms (paper, "Data
# arrival pattern"): one real-time minute of data every 0.48 s of the run.
REPLAY_PERIOD_S = 0.48
SENSOR_PER_MINUTE = {"S1": 5.0, "S2": 1.0, "S3": 10.0}

# Table 2 (processing duration ms, CPU shares, memory MB, storage MB, stateful, outgoing ratio).
_TABLE2 = (
    ("O1", 1500, 660, 452, 89, False, 1, 3),
    ("O2", 600, 131, 524, 68, False, 50, 1),
    ("O3", 750, 100, 430, 68, True, 1, 1),
    ("O4", 750, 83, 502, 68, True, 1, 1),
    ("O5", 750, 77, 527, 68, True, 1, 1),
    ("O6", 600, 65, 440, 68, False, 100, 1),
    ("O7", 700, 46, 464, 68, True, 3, 1),
    ("O8", 500, 74, 466, 68, False, 1, 0),
    ("O9", 1300, 47, 452, 70, True, 300, 1),
)
# The "State" column of Table 2 lost its marks in the text we have; O3-O5, O7 and O9 keep
# per-machine aggregates (performance, availability, quality, OEE, report) and are marked stateful.

# Fig. 1: S1 -> O2 -> O8; S2 -> O1 -> {O3, O4, O5} -> O7 -> O9 -> O8; S3 -> O6 -> O8.
_EDGES = (
    ("O1", "O3"),
    ("O1", "O4"),
    ("O1", "O5"),
    ("O3", "O7"),
    ("O4", "O7"),
    ("O5", "O7"),
    ("O7", "O9"),
    ("O2", "O8"),
    ("O6", "O8"),
    ("O9", "O8"),
)


def manufacturing() -> Topology:
    """The CREMA manufacturing topology of the paper (Fig. 1, Tables 1 and 2)."""
    ops = tuple(
        OperatorType(n, d / 1000.0, cpu, mem, img, st, a, b)
        for n, d, cpu, mem, img, st, a, b in _TABLE2
    )
    per_s = {k: v / REPLAY_PERIOD_S for k, v in SENSOR_PER_MINUTE.items()}
    sources = {"O2": per_s["S1"], "O1": per_s["S2"], "O6": per_s["S3"]}
    return Topology(ops, sources, _EDGES)
