"""DEBS 2015 Grand Challenge Query 1: the top-10 taxi routes of the last 30 minutes (ODRP §6.1).

source (trip rows) -> parse (clean, 500 m grid, route) -> route_count (sliding 30-min window on
drop-off time, keyed by route) -> partial_top10 (per partition of the routes) -> global_top10
(one replica: emits the top-10 whenever it changes, with the delay)."""

from __future__ import annotations

import heapq
import math
import os
import random
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from elastream.model.events import Emit, Event
from elastream.model.grouping import key_group
from elastream.model.state import KeyedState
from elastream.model.windows import LatePolicy, WindowSpec, add, new_state

TRIPS_ENV = "ELASTREAM_DEBS_TRIPS"  # path of the trips file; absent: the synthetic stream
DEFAULT_TRIPS = "../shared/data/debs2015/taxi_trips_2013-01-01_first10k.csv"
FIELDS = 17  # columns of a DEBS 2015 trip row
# The challenge's grid: cell 1.1 is centred on (LAT0, LON0); cells are 500 m x 500 m, 300 x 300,
# x growing east, y growing south.
LAT0, LON0 = 41.474937, -74.913585
DLAT, DLON = 0.004491556, 0.005986  # 500 m south, 500 m east, in degrees
CELLS = 300
WINDOW_S = 1800.0  # 30 minutes of drop-off time
TOP = 10
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
# The 17 columns of a trip row, as a `files` source with a schema names them (docs/tutorial.md)
COLUMNS = (
    "medallion",
    "hack_license",
    "pickup_datetime",
    "dropoff_datetime",
    "trip_time_in_secs",
    "trip_distance",
    "pickup_longitude",
    "pickup_latitude",
    "dropoff_longitude",
    "dropoff_latitude",
    "payment_type",
    "fare_amount",
    "surcharge",
    "mta_tax",
    "tip_amount",
    "tolls_amount",
    "total_amount",
)
WINDOW = {"time_field": "dropoff", "kind": "sliding", "size_s": WINDOW_S, "lateness_s": WINDOW_S}


# -- the source ---------------------------------------------------------------------------------
@cache
def trip_rows(path: str) -> tuple[str, ...]:
    """The rows of a trips file (empty if it does not exist)."""
    file = Path(path)
    if not file.exists():
        return ()
    return tuple(file.read_text().splitlines())


def synthetic_row(index: int) -> str:
    """Trip number `index` of a seeded synthetic stream with the DEBS 2015 schema: drop-off times
    rise by 0.3 s per trip from 2013-01-01 01:00, routes cluster on 40 hotspots, 2 % zero
    coordinates, 1 % malformed."""
    rng = random.Random(index)
    if rng.random() < 0.01:
        return f"bad,row,{index}"
    dropoff = 1357002000 + index * 0.3  # from 01:00, after the file's last drop-off (00:56)
    pickup = dropoff - rng.randint(120, 1800)
    spots = [(40.70 + 0.005 * (s % 8), -74.02 + 0.006 * (s // 8)) for s in range(40)]
    (lat1, lon1), (lat2, lon2) = rng.choice(spots), rng.choice(spots)
    coords = [lon1 + rng.uniform(0, 0.004), lat1 + rng.uniform(0, 0.003)]
    coords += [lon2 + rng.uniform(0, 0.004), lat2 + rng.uniform(0, 0.003)]
    if rng.random() < 0.02:
        coords = [0.0] * 4
    stamp = [datetime.fromtimestamp(int(t), UTC).strftime(TIME_FORMAT) for t in (pickup, dropoff)]
    medallion = f"{rng.getrandbits(64):016X}"
    fare = ["CSH", "5.00", "0.50", "0.50", "0.00", "0.00", "6.00"]
    fields = [medallion, medallion[::-1], *stamp, "600", "1.00"]
    return ",".join([*fields, *(f"{c:.6f}" for c in coords), *fare])


def generate(index: int, rng: random.Random) -> tuple[str, dict[str, Any]]:
    """Trip number `index`: row `index` of the trips file ($ELASTREAM_DEBS_TRIPS, else
    ../shared/data/debs2015/...), or of the synthetic stream past its end or without it."""
    rows = trip_rows(os.environ.get(TRIPS_ENV, DEFAULT_TRIPS))
    row = rows[index] if index < len(rows) else synthetic_row(index)
    return f"t{index}", {"i": index, "row": row}


# -- parse and clean ----------------------------------------------------------------------------
def cell(lat: float, lon: float) -> tuple[int, int] | None:
    """The grid cell (x east, y south, from 1) of a point, None outside the 300 x 300 grid."""
    x = math.floor((lon - (LON0 - DLON / 2)) / DLON) + 1
    y = math.floor(((LAT0 + DLAT / 2) - lat) / DLAT) + 1
    return (x, y) if 1 <= x <= CELLS and 1 <= y <= CELLS else None


def seconds(text: str) -> float:
    """A trip's date-time (UTC) in seconds since the epoch."""
    return datetime.strptime(text, TIME_FORMAT).replace(tzinfo=UTC).timestamp()


def clean(row: str) -> tuple[str, dict[str, Any]]:
    """('ok', trip) or (reason, {}) for a malformed, zero-coordinate or out-of-grid row."""
    fields = row.split(",")
    if len(fields) != FIELDS:
        return "malformed", {}
    try:
        pickup, dropoff = seconds(fields[2]), seconds(fields[3])
        lon1, lat1, lon2, lat2 = (float(f) for f in fields[6:10])
    except ValueError:
        return "malformed", {}
    if 0.0 in (lon1, lat1, lon2, lat2):
        return "zero_coordinates", {}
    start, end = cell(lat1, lon1), cell(lat2, lon2)
    if start is None or end is None:
        return "outside_grid", {}
    route = f"{start[0]}.{start[1]}-{end[0]}.{end[1]}"
    return "ok", {"route": route, "pickup": pickup, "dropoff": dropoff}


def row_of(payload: dict[str, Any]) -> str:
    """A trip's CSV row: the generator's `row`, or a `files` source's columns (`COLUMNS`; a
    missing or null one is left empty, so the row is rejected as malformed)."""
    if "row" in payload:
        return payload["row"]
    return ",".join("" if payload.get(c) is None else str(payload[c]) for c in COLUMNS)


def parse(events: list[Event]) -> Iterable[Emit]:
    """Cleans each trip; a kept trip leaves keyed by its route, a dropped one on 'rejected'.
    A trip is the generator's {i, row} or a `files` source's row of `COLUMNS` plus `i`."""
    out = []
    for e in events:
        reason, trip = clean(row_of(e.payload))
        i = e.payload["i"]
        if reason != "ok":
            out.append(e.emit({"i": i, "reason": reason}, stream="rejected"))
        else:
            out.append(e.emit({"i": i, **trip}, key=trip["route"]))
    return out


# -- count per route over the window ------------------------------------------------------------
def partition_key(route: str, partitions: int) -> str:
    return f"p{key_group(route, partitions)}"


def in_order(events: list[Event]) -> list[Event]:
    """Trips by drop-off time, then by their place in the stream (the row index)."""
    return sorted(events, key=lambda ev: (ev.payload["dropoff"], ev.payload["i"]))


def hold(events: list[Event], state: KeyedState) -> dict[str, int]:
    """Holds each trip back until the operator-wide watermark passes its drop-off time (it comes
    back in `state.fired`); a trip already behind the previous watermark is late: dropped and
    counted per key (the source's order makes none late: docs/debs.md)."""
    late: dict[str, int] = {}
    for e in events:
        if e.payload["dropoff"] < state.late_before:
            late[e.key] = late.get(e.key, 0) + 1
        else:
            state.defer(e, until=e.payload["dropoff"])
    return late


def touched_states(
    events: list[Event], state: KeyedState, new: Callable[[], dict[str, Any]]
) -> tuple[dict[str, dict[str, Any]], list[Event]]:
    """Holds the batch's trips back (`hold`); returns the states of the keys the batch touches
    (a late key's with its late count raised, a fired trip's key's as committed, else `new()`)
    and the fired trips in drop-off order. The caller updates the states and puts them back."""
    states: dict[str, dict[str, Any]] = {}
    for key, n in hold(events, state).items():
        states[key] = state.get(key) or new()
        states[key]["late"] += n
    fired = in_order(state.fired)
    for e in fired:
        if e.key not in states:
            states[e.key] = state.get(e.key) or new()
    return states, fired


def route_count(
    events: list[Event], state: KeyedState, partitions: int = 1, window: dict | None = None
) -> Iterable[Emit]:
    """Keyed by route: the route's trips in the sliding window on drop-off time (window state,
    `elastream.model.windows`), taken in drop-off order once the watermark has passed them;
    emits each trip with the route's in-window drop-off times to the route's partition."""
    spec = WindowSpec.model_validate(window or WINDOW)
    if spec.late is not LatePolicy.DROP:
        raise ValueError("route_count drops late trips (window.late must be 'drop')")
    out: list[Emit] = []
    states, fired = touched_states(events, state, new_state)
    for e in fired:
        st = states[e.key]
        accepted, _ = add(st, e.payload[spec.time_field or "dropoff"], spec)
        if accepted:
            payload = {**e.payload, "times": st["times"][:]}
            out.append(e.emit(payload, key=partition_key(e.key, partitions)))
    for key, st in states.items():
        state.put(key, st)
    return out


# -- partial and global top-10 ------------------------------------------------------------------
def rank(entries: Iterable[list], k: int = TOP) -> list[list]:
    """The k first [route, count, last trip index, ...] by count, then the most recent trip."""
    return heapq.nlargest(k, entries, key=lambda r: (r[1], r[2]))


def _in_window(times: list[float], now: float, size: float) -> list[float]:
    return [t for t in times if t > now - size]


def partial_top10(
    events: list[Event], state: KeyedState, size_s: float = WINDOW_S, k: int = TOP
) -> Iterable[Emit]:
    """Keyed by partition: the windowed trips of its routes and their top-k at the partition's
    latest drop-off time; emits that top-k (with each route's in-window times) per trip."""
    out: list[Emit] = []
    parts, fired = touched_states(events, state, new_partition)
    for e in fired:
        p = parts[e.key]
        trip = e.payload
        p["now"] = max(p["now"], trip["dropoff"])
        changed = _expire(p, size_s)
        _update_top(p, changed | _take(p, trip, size_s), trip["route"], k)
        top = [[r, len(p["r"][r][0]), p["r"][r][1], p["r"][r][0]] for r, _, _ in p["top"]]
        fields = {f: trip[f] for f in ("i", "pickup", "dropoff")}
        out.append(e.emit({**fields, "part": e.key, "now": p["now"], "top": top}, key="all"))
    for key, p in parts.items():
        state.put(key, p)
    return out


def new_partition() -> dict[str, Any]:
    """A partition's state: its latest drop-off time, in-window trips (an expiry heap), each
    route's [times, latest trip], its top-k, and how many trips came late."""
    return {"now": 0.0, "q": [], "r": {}, "top": [], "late": 0}


def _expire(p: dict[str, Any], size_s: float) -> set[str]:
    """Drops the partition's trips at or before now - size; returns the routes that lost one."""
    changed = set()
    while p["q"] and p["q"][0][0] <= p["now"] - size_s:
        _, route = heapq.heappop(p["q"])
        if route not in p["r"]:  # its last trip left with an earlier entry of the same time
            continue
        times, last = p["r"][route]
        times = _in_window(times, p["now"], size_s)
        if times:
            p["r"][route] = [times, last]
        else:
            del p["r"][route]
        changed.add(route)
    return changed


def _take(p: dict[str, Any], trip: dict[str, Any], size_s: float) -> set[str]:
    """Sets the trip's route to the times route_count sent (the route's latest window, cut at the
    partition's now) and its latest trip index; returns {route} if that lowered its count (a
    trip older than the others', arriving late: only when replicas reorder the stream)."""
    route = trip["route"]
    times = _in_window(trip["times"], p["now"], size_s)
    old = p["r"].pop(route, None)
    if times:
        p["r"][route] = [times, max(trip["i"], old[1]) if old else trip["i"]]
        heapq.heappush(p["q"], [trip["dropoff"], route])
    return {route} if old and len(times) < len(old[0]) else set()


def _update_top(p: dict[str, Any], lost: set[str], added: str, k: int) -> None:
    """The top-k after routes in `lost` lost trips and `added` gained one: a full ranking only
    when a route of the top-k lost one (an outsider may enter), else an insertion."""
    if lost & {r for r, _, _ in p["top"]}:
        p["top"] = rank(([r, len(v[0]), v[1]] for r, v in p["r"].items()), k)
        return
    others = [t for t in p["top"] if t[0] != added]
    if added in p["r"]:
        times, last = p["r"][added]
        others.append([added, len(times), last])
    p["top"] = rank(others, k)


def global_top10(
    events: list[Event], state: KeyedState, size_s: float = WINDOW_S, k: int = TOP
) -> Iterable[Emit]:
    """One key, one replica: keeps each partition's latest top-k, merges them at the latest
    drop-off time and emits the top-k whenever its routes change, with the delay (s)."""
    out: list[Emit] = []
    late = sum(hold(events, state).values())
    if not state.fired and not late:
        return out
    g = state.get("all") or {"parts": {}, "last": [], "late": 0}
    g["late"] = g.get("late", 0) + late
    for e in in_order(state.fired):
        trip = e.payload
        g["parts"][trip["part"]] = [trip["now"], trip["top"]]
        now = max(n for n, _ in g["parts"].values())
        merged = []
        for _, top in g["parts"].values():
            for route, _, last, times in top:
                n = len(_in_window(times, now, size_s))
                if n:
                    merged.append([route, n, last])
        best = rank(merged, k)
        routes = [r for r, _, _ in best]
        if routes != g["last"]:
            g["last"] = routes
            update = {f: trip[f] for f in ("i", "pickup", "dropoff")}
            update["top"] = [[r, n] for r, n, _ in best]
            update["delay_s"] = time.time() - e.ts
            out.append(e.emit(update))
    state.put("all", g)
    return out


def as_record(events: list[Event]) -> Iterable[Emit]:
    """An update as a flat record for a file sink (Parquet columns of one type each):
    {i, pickup, dropoff, delay_s, routes: [route...], counts: [count...]}."""
    return [
        e.emit(
            {
                "i": e.payload["i"],
                "pickup": e.payload["pickup"],
                "dropoff": e.payload["dropoff"],
                "delay_s": e.payload["delay_s"],
                "routes": [r for r, _ in e.payload["top"]],
                "counts": [n for _, n in e.payload["top"]],
            }
        )
        for e in events
    ]
