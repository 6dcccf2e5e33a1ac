"""The DEBS 2015 Query 1 top-10 updates computed in one batch with pandas: the reference the
streaming pipeline's updates are compared with, update by update (tests, benchmarks)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from elastream.examples import debs


def batch_top10(path: Path, n: int | None = None) -> list[tuple[int, list[list]]]:
    """The batch computation: clean the trips with pandas, then for every kept trip in order the
    counts of each route over (t - 30 min, t] and its 10 first routes (count, then latest trip);
    returns (trip index, [[route, count], ...]) each time the routes of the top-10 change."""
    raw = pd.read_csv(path, header=None, dtype=str, on_bad_lines="skip", nrows=n)
    coords = raw[[6, 7, 8, 9]].apply(pd.to_numeric, errors="coerce")
    dropoff = pd.to_datetime(raw[3], format="%Y-%m-%d %H:%M:%S", errors="coerce")
    x1 = np.floor((coords[6] - (debs.LON0 - debs.DLON / 2)) / debs.DLON) + 1
    y1 = np.floor(((debs.LAT0 + debs.DLAT / 2) - coords[7]) / debs.DLAT) + 1
    x2 = np.floor((coords[8] - (debs.LON0 - debs.DLON / 2)) / debs.DLON) + 1
    y2 = np.floor(((debs.LAT0 + debs.DLAT / 2) - coords[9]) / debs.DLAT) + 1
    ok = coords.notna().all(axis=1) & (coords != 0).all(axis=1) & dropoff.notna()
    for c in (x1, y1, x2, y2):
        ok &= c.between(1, debs.CELLS)
    trips = pd.DataFrame(
        {
            "t": dropoff.astype("int64") // 10**9,
            "route": x1.astype("Int64").astype(str)
            + "."
            + y1.astype("Int64").astype(str)
            + "-"
            + x2.astype("Int64").astype(str)
            + "."
            + y2.astype("Int64").astype(str),
        }
    )[ok]
    codes, names = pd.factorize(trips["route"])
    t = trips["t"].to_numpy()
    index = trips.index.to_numpy()
    last = np.full(len(names), -1)
    updates, shown = [], None
    now = np.maximum.accumulate(t)
    for j in range(len(trips)):
        last[codes[j]] = index[j]
        window = t[: j + 1] > now[j] - debs.WINDOW_S
        counts = np.bincount(codes[: j + 1][window], minlength=len(names))
        score = np.where(counts > 0, counts * 10**7 + last, -1)  # count, then the latest trip
        first = np.argpartition(-score, debs.TOP)[: debs.TOP]
        order = first[np.argsort(-score[first])]
        top = [[names[r], int(counts[r])] for r in order if counts[r] > 0]
        routes = [r for r, _ in top]
        if routes != shown:
            updates.append((int(index[j]), top))
            shown = routes
    return updates
