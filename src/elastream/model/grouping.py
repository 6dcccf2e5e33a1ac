"""Assigning a batch of events to an operator's active replicas, one function per grouping."""

from __future__ import annotations

import random
import zlib
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from elastream.model.pipeline import Grouping


def round_robin(n: int, replicas: int, start: int = 0) -> list[int]:
    """Event k goes to replica (start + k) mod r."""
    return ((start + np.arange(n)) % replicas).tolist()


def shuffle(n: int, replicas: int, seed: int) -> list[int]:
    """A uniformly random replica per event, reproducible from `seed` (Storm's shuffle grouping)."""
    rng = random.Random(seed)
    return [rng.randrange(replicas) for _ in range(n)]


def key_hash(keys: Sequence[str], replicas: int) -> list[int]:
    """A stable hash of the key (crc32, the same in every process) modulo r."""
    return (_crc32s(keys) % replicas).tolist()


def _crc32s(keys: Sequence[str]) -> np.ndarray:
    """crc32 of every key, hashed once per distinct key (a batch repeats its keys)."""
    if not len(keys):
        return np.zeros(0, np.int64)
    encoded = pa.array(keys, pa.string()).dictionary_encode()
    distinct = encoded.dictionary.to_pylist()
    hashes = np.fromiter((zlib.crc32(k.encode()) for k in distinct), np.int64, len(distinct))
    return hashes[encoded.indices.to_numpy(zero_copy_only=False)]


def key_group(key: str, groups: int) -> int:
    """The key group of `key` among `groups`: the same stable hash as `key_hash` (crc32, equal in
    every process, unlike Python's salted `hash`), modulo the operator's fixed group count."""
    return zlib.crc32(key.encode()) % groups


def group_range(replica: int, replicas: int, groups: int) -> range:
    """The contiguous key groups replica `replica` of `replicas` owns: [ceil(j·G/r),
    ceil((j+1)·G/r)), so the ranges of r replicas cover the G groups once, in order."""
    return range(-(-replica * groups // replicas), -(-(replica + 1) * groups // replicas))


def group_owner(group: int, replicas: int, groups: int) -> int:
    """The replica whose `group_range` holds `group`."""
    return group * replicas // groups


def key_groups(keys: Sequence[str], replicas: int, groups: int) -> list[int]:
    """Stateful routing: each event goes to the owner of its key's group, so it meets its key's
    state whatever r is (ownership changes only between batches, with r)."""
    return ((_crc32s(keys) % groups) * replicas // groups).tolist()


def load_balancing(
    n: int,
    utilization: Sequence[float],
    service_time_s: float | Sequence[float],
    td_s: float,
    rr_start: int = 0,
) -> tuple[list[int], list[float]]:
    """PSPS Alg. 1 applied to each of `n` events in turn.

    Pick the replica m with the lowest utilization U_{i,m} (Eq. 5: U = μ·et/td, so one more event
    adds et/td); if even the least loaded is saturated (U_{i,m} >= 1), fall back to round-robin.
    Ties go to the lowest index, which with equal loads gives round-robin order as the paper says.
    `service_time_s` may be one value per replica (replicas of unequal speed): a slower
    replica's U then grows faster, so it gets proportionally fewer events. Returns the
    assignment and the final U.

    Computed as a merge, not event by event: replica m's k-th pick happens at the value its U
    has after k additions of et_m/td (the same float additions, by cumulative sum), so the picks
    in Alg. 1's order are all those values below 1 sorted by (value, m, k); what remains after
    them goes round-robin."""
    u = np.maximum(np.asarray(utilization, dtype=float), 0.0)
    if not len(u):
        raise ValueError("load_balancing needs at least one replica")
    ets = (
        np.full(len(u), float(service_time_s))
        if isinstance(service_time_s, int | float)
        else np.asarray(service_time_s, float)
    )
    if len(ets) != len(u):
        raise ValueError(f"{len(ets)} execution times for {len(u)} replicas")
    steps = ets / td_s if td_s > 0 else np.zeros(len(u))
    r = len(u)
    # values[m, k]: replica m's U before its k-th pick (k = 0..n), by the same float additions
    values = np.cumsum(np.column_stack([u, np.repeat(steps[:, None], n, axis=1)]), axis=1)
    below = values[:, :n] < 1.0
    replica = np.repeat(np.arange(r), n).reshape(r, n)[below]
    order = np.lexsort((replica, values[:, :n][below]))[:n]  # by value, then replica (k: stable)
    greedy = replica[order]
    picks = np.bincount(greedy, minlength=r)
    rest = (rr_start + np.arange(n - len(greedy))) % r
    final = values[np.arange(r), picks]
    return np.concatenate([greedy, rest]).tolist(), final.tolist()


def assign(
    grouping: Grouping,
    keys: Sequence[str],
    replicas: int,
    *,
    seed: int = 0,
    utilization: Sequence[float] = (),
    service_time_s: float | Sequence[float] = 0.0,
    td_s: float = 1.0,
    groups: int | None = None,
) -> list[int]:
    """The replica index of every event of a batch under `grouping`; `groups`: the key groups of
    a stateful operator (key_hash then routes by key group, see `key_groups`)."""
    if replicas < 1:
        raise ValueError(f"replicas must be >= 1, got {replicas}")
    n = len(keys)
    if grouping is Grouping.ROUND_ROBIN:
        return round_robin(n, replicas, seed)
    if grouping is Grouping.SHUFFLE:
        return shuffle(n, replicas, seed)
    if grouping is Grouping.KEY_HASH:
        return key_hash(keys, replicas) if groups is None else key_groups(keys, replicas, groups)
    u = list(utilization[:replicas]) + [0.0] * max(0, replicas - len(utilization))
    if not isinstance(service_time_s, int | float):
        service_time_s = list(service_time_s[:replicas]) + [0.0] * max(
            0, replicas - len(service_time_s)
        )
    return load_balancing(n, u, service_time_s, td_s, seed)[0]
