"""The paper's evaluation instance (Sec. 6.1, Table 2): DEBS 2015 Query 1 on 6 nodes x 8 slots.

The paper gives the service rates, k_i, the pinning, the slots, the delay range and the Eq. 21
normalization; it does not print Fig. 3's edges nor the per-stream rates. Assumed here:
- edges: source -> parser -> filterByCoordinates -> {computeRouteID, metronome} ->
  countByWindow -> partialRank -> globalRank (8 streams: with k_i = 3 on 6 nodes and no pinning
  this gives 55,813 variables, the paper's "about 55.8 K");
- rates, for a source rate s: s on every stream except metronome -> countByWindow (1 pulse/s)
  and countByWindow -> partialRank (31.25 s: "2500 tuples/s" at s = 80, Sec. 6.3);
- one tuple is one data unit (b = 1), so T is in tuples/s like the paper's Z_max = 3400 tps;
- delays: one symmetric d_(u,v) per node pair drawn uniformly in [12, 32] ms (seeded).
"""

from __future__ import annotations

import numpy as np

from elastream.placement.model import (
    Application,
    Bounds,
    Infrastructure,
    LinkOverride,
    LinkSpec,
    NodeSpec,
    OperatorSpec,
    StreamSpec,
)

SERVICE_RATES = {  # Table 2, tuples/s
    "source": 284.0,
    "parser": 233.0,
    "filterByCoordinates": 253.0,
    "computeRouteID": 253.0,
    "metronome": 190.0,
    "countByWindow": 335.0,
    "partialRank": 2371.0,
    "globalRank": 185.0,
}
NOT_REPLICATED = ("source", "metronome", "globalRank")  # Sec. 6.1: pinned ones and metronome
PINNED = ("source", "globalRank")
STREAMS = (  # (from, to, rate per source tuple)
    ("source", "parser", 1.0),
    ("parser", "filterByCoordinates", 1.0),
    ("filterByCoordinates", "computeRouteID", 1.0),
    ("filterByCoordinates", "metronome", 1.0),
    ("computeRouteID", "countByWindow", 1.0),
    ("countByWindow", "partialRank", 31.25),
    ("partialRank", "globalRank", 1.0),
)
METRONOME_PULSES = 1.0  # tuples/s on metronome -> countByWindow
TABLE2_BOUNDS = Bounds(
    r_min_ms=5.0,
    r_max_ms=450.0,
    a_min=0.95,
    a_max=1.0,
    c_min=8.0,
    c_max=18.0,
    z_min=0.0,
    z_max=3400.0,
)
# Table 3: replicas per operator chosen by S-ODRP_R for each source rate (S-ODP: all ones).
PAPER_TABLE3 = {
    rate: {
        "source": 1,
        "parser": p,
        "filterByCoordinates": f,
        "computeRouteID": c,
        "metronome": 1,
        "countByWindow": w,
        "partialRank": r,
        "globalRank": 1,
    }
    for rates, (p, f, c, w, r) in (
        ((20, 40, 60), (1, 1, 1, 1, 1)),
        ((80, 100), (1, 1, 2, 1, 2)),
        ((120,), (3, 2, 2, 3, 3)),
    )
    for rate in rates
}


def debs_application(
    source_rate: float,
    pinned_node: str = "n0",
    max_replicas: int = 3,
    metronome_share: float = 1.0,
) -> Application:
    """The DEBS 2015 Q1 application of Fig. 3 with Table 2's service rates.

    `metronome_share`: fraction of the filtered tuples the metronome reads (1: all of them).
    """
    ops = tuple(
        OperatorSpec(
            name=name,
            service_rate=mu,
            max_replicas=1 if name in NOT_REPLICATED else max_replicas,
            candidates=(pinned_node,) if name in PINNED else None,
            source_rate=source_rate if name == "source" else None,
        )
        for name, mu in SERVICE_RATES.items()
    )
    streams = [
        StreamSpec(
            src=a, dst=b, rate=k * source_rate * (metronome_share if b == "metronome" else 1.0)
        )
        for a, b, k in STREAMS
    ]
    streams.append(StreamSpec(src="metronome", dst="countByWindow", rate=METRONOME_PULSES))
    return Application(operators=ops, streams=tuple(streams))


def debs_infrastructure(
    seed: int = 0, nodes: int = 6, slots: int = 8, half_available: bool = False
) -> Infrastructure:
    """6 worker nodes x 8 executor slots, delays in [12, 32] ms; optionally half at 99 %."""
    rng = np.random.default_rng(seed)
    names = [f"n{u}" for u in range(nodes)]
    specs = tuple(
        NodeSpec(
            name=name,
            resources=float(slots),
            availability=0.99 if half_available and u >= nodes - nodes // 2 else 1.0,
        )
        for u, name in enumerate(names)
    )
    links = tuple(
        LinkOverride(src=names[u], dst=names[v], delay_ms=float(np.round(rng.uniform(12, 32), 2)))
        for u in range(nodes)
        for v in range(u + 1, nodes)
    )
    return Infrastructure(nodes=specs, default_link=LinkSpec(delay_ms=22.0), links=links)
