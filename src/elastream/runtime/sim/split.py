"""Exact integer splits of event counts: channel shares, groupings over replicas, apportioning.

The simulator moves counts, not events, so every split here returns non-negative integers that
add up to the input exactly. Shares are applied with carried remainders, so however the counts
are chunked into steps, each share's running total stays within a couple of events of exact."""

from __future__ import annotations

import bisect
import heapq
import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from elastream.model.grouping import key_groups, key_hash


class PartitionSplitter:
    """Divide counts among parts with integer weights w_c (Σ w_c = T), every event in one part.

    Part c is owed n·w_c/T of n events plus what it was owed before; it gets the whole events
    of that (floor), then the events still missing go to the parts owed the largest fractions
    (largest remainder), and what is left owed is carried. A part given more than it was owed
    carries a debt and is served later, so totals are exact and shares converge."""

    __slots__ = ("carry", "total", "weights")

    def __init__(self, weights: Sequence[int]) -> None:
        if not weights or min(weights) < 0 or sum(weights) <= 0:
            raise ValueError(f"partition weights must be >= 0 with a positive sum, got {weights}")
        self.weights = list(weights)
        self.total = sum(weights)
        self.carry = [0] * len(weights)  # owed events, scaled by T

    def split(self, n: int) -> list[int]:
        if len(self.weights) == 2:  # the common case (a stream and its filtered share, say)
            give = self._split_two(n)
            if give is not None:
                return give
        t = self.total
        owed = [n * w + c for w, c in zip(self.weights, self.carry, strict=False)]  # equal lengths
        give = [o // t if o >= 0 else 0 for o in owed]
        short = n - sum(give)
        while short < 0:  # only after debts: take back from the most over-served part
            j = min(
                (j for j in range(len(give)) if give[j] > 0), key=lambda j: owed[j] - give[j] * t
            )
            give[j] -= 1
            short += 1
        if short > 0:
            order = sorted(range(len(give)), key=lambda j: (give[j] * t - owed[j], j))
            for j in order[:short]:
                give[j] += 1
        self.carry = [o - g * t for o, g in zip(owed, give, strict=False)]
        return give

    def _split_two(self, n: int) -> list[int] | None:
        """split() for two parts, the same arithmetic unrolled; None when a debt must be taken
        back (the general loop handles it)."""
        t = self.total
        w0, w1 = self.weights
        c0, c1 = self.carry
        o0, o1 = n * w0 + c0, n * w1 + c1
        g0 = o0 // t if o0 >= 0 else 0
        g1 = o1 // t if o1 >= 0 else 0
        short = n - g0 - g1
        if short < 0:
            return None
        if short >= 2:
            g0, g1 = g0 + 1, g1 + 1
        elif short == 1:  # the larger remainder first (ties: part 0)
            if g1 * t - o1 < g0 * t - o0:
                g1 += 1
            else:
                g0 += 1
        self.carry = [o0 - g0 * t, o1 - g1 * t]
        return [g0, g1]


class RatioSplitter:
    """Independent ratios r_c = w_c/T (may exceed 1: fan-out), each with its own carried
    remainder: part c gets floor((n·w_c + carry_c)/T) of n events."""

    __slots__ = ("carry", "total", "weights")

    def __init__(self, weights: Sequence[int], total: int) -> None:
        if total <= 0 or min(weights, default=0) < 0:
            raise ValueError(
                f"ratios need weights >= 0 over a positive total, got {weights}/{total}"
            )
        self.weights = list(weights)
        self.total = total
        self.carry = [0] * len(weights)

    def split(self, n: int) -> list[int]:
        t = self.total
        give = []
        for j, w in enumerate(self.weights):
            owed = n * w + self.carry[j]
            g = owed // t
            self.carry[j] = owed - g * t
            give.append(g)
        return give


def round_robin_counts(n: int, replicas: int, start: int) -> list[int]:
    """Events per replica when event k goes to replica (start + k) mod r (grouping.round_robin)."""
    q, rem = divmod(n, replicas)
    return [q + (1 if (j - start) % replicas < rem else 0) for j in range(replicas)]


def key_hash_weights(keys: Sequence[str], replicas: int, groups: int | None = None) -> list[int]:
    """How many of the profile sample's keys each replica owns under key_hash grouping (the
    runtime's own hash, grouping.key_hash, or for a stateful operator its key groups,
    grouping.key_groups); an even split when no key was sampled."""
    if not keys:
        return [1] * replicas
    owners = Counter(
        key_hash(keys, replicas) if groups is None else key_groups(keys, replicas, groups)
    )
    weights = [owners.get(j, 0) for j in range(replicas)]
    return weights


def multinomial_counts(rng: np.random.Generator, n: int, replicas: int) -> list[int]:
    """A uniformly random replica per event (shuffle grouping), drawn for the whole count."""
    if replicas == 1:
        return [n]
    return rng.multinomial(n, np.full(replicas, 1.0 / replicas)).tolist()


def apportion(n: int, weights: Sequence[int]) -> list[int]:
    """Split n in proportion to integer weights (sum >= n) by largest remainder, never giving a
    part more than its weight; ties go to the lowest index."""
    total = sum(weights)
    if n == total:
        return list(weights)
    parts = [n * w // total for w in weights]
    short = n - sum(parts)
    if short:
        order = sorted(range(len(weights)), key=lambda j: (-(n * weights[j] % total), j))
        for j in order[:short]:
            parts[j] += 1
    return parts


def fill_pieces(
    pieces: Sequence[tuple[int, int]], counts: Sequence[int], start: int
) -> list[list[tuple[int, int]]]:
    """Give replica j exactly counts[j] events from the cohorts `pieces` (key, n), oldest first,
    serving the replicas in turn from `start` (the caller rotates it every step, so no replica
    is always handed the oldest cohorts of a step)."""
    out: list[list[tuple[int, int]]] = [[] for _ in counts]
    if len(pieces) == 1:
        k = pieces[0][0]
        return [[(k, c)] if c else [] for c in counts]
    r = len(counts)
    i = 0
    k, left = pieces[0]
    for step in range(r):
        j = (start + step) % r
        need = counts[j]
        mine = out[j]
        while need:
            if not left:
                i += 1
                k, left = pieces[i]
            take = need if need < left else left
            mine.append((k, take))
            need -= take
            left -= take
    return out


# --------------------------------------------------------------------------- load balancing


def slots_below_one(u: float, delta: float) -> int:
    """How many events Alg. 1 can give a replica at utilization u, each adding delta, before its
    U reaches 1: the number of c >= 0 with u + c·delta < 1."""
    if u >= 1.0:
        return 0
    c = math.ceil((1.0 - u) / delta)
    while c > 0 and u + (c - 1) * delta >= 1.0:
        c -= 1
    while u + c * delta < 1.0:
        c += 1
    return c


def water_fill(base: Sequence[float], deltas: Sequence[float], n: int, rr: int = 0) -> list[int]:
    """Events per replica for the first n events Alg. 1 deals from utilizations `base`."""
    if min(base) == max(base) and min(deltas) == max(deltas):  # ties: round-robin from 0
        r = len(base)
        each = slots_below_one(max(0.0, base[0]), deltas[0])
        if n <= each * r:
            return round_robin_counts(n, r, 0)
        return [each + e for e in round_robin_counts(n - each * r, r, rr)]
    return LoadBalancer(base, deltas, rr).fill(n)


class LoadBalancer:
    """PSPS Alg. 1 (grouping.load_balancing) for many events at once, by water-filling.

    Event by event, Alg. 1 gives the next event to the replica with the lowest U (ties: lowest
    index) and adds δ_j = et_j/td to it, until every U is >= 1; then it goes round-robin. So
    replica j's c-th event is taken at level U_j + c·δ_j, and the first N events are the N
    smallest (level, j) pairs below 1. The continuous water level L with
    Σ_j max(0, L - U_j)/δ_j = N gives every count to within one (floor); the few events left
    go to the smallest next levels, which all lie below L, in (level, j) order.

    The state is the interval's starting U_j (Eq. 5 at the last interval's end) and the events
    dealt since, so dealing in steps gives exactly what Alg. 1 gives event by event."""

    __slots__ = (
        "base",
        "below",
        "dealt",
        "deltas",
        "equal",
        "given",
        "offsets",
        "order",
        "rr",
        "same_delta",
        "slots",
        "thresholds",
        "weights",
    )

    def __init__(self, base: Sequence[float], deltas: Sequence[float], rr: int = 0) -> None:
        self.base = [max(0.0, float(u)) for u in base]
        self.deltas = list(deltas)
        self.rr = rr
        self.dealt = 0
        self.given = [0] * len(self.base)
        # computed when the first event is dealt (_prepare): an interval run in one pass
        # (SimEngine's fast-forward) never deals any
        self.slots: list[int] = []
        self.below = 0
        self.same_delta = self.equal = False
        self.order: list[int] = []  # the water levels: computed when first needed (_levels)

    def _prepare(self) -> None:
        """Each replica's slots below U = 1, their sum, and whether the loads tie."""
        self.slots = [slots_below_one(u, d) for u, d in zip(self.base, self.deltas, strict=True)]
        self.below = sum(self.slots)
        self.same_delta = min(self.deltas) == max(self.deltas)
        self.equal = self.same_delta and min(self.base) == max(self.base)
        self.weights: list[float] = []
        self.offsets: list[float] = []
        self.thresholds: list[float] = []

    def _levels(self) -> None:
        """Water level over the replicas in increasing U: with the first i+1 filled, the level
        is (N + Σ U_j/δ_j) / Σ 1/δ_j; it stays below the next replica's U while
        N <= threshold_i."""
        self.order = sorted(range(len(self.base)), key=lambda j: (self.base[j], j))
        weight = offset = 0.0
        for i, j in enumerate(self.order):
            weight += 1.0 / self.deltas[j]
            offset += self.base[j] / self.deltas[j]
            nxt = self.base[self.order[i + 1]] if i + 1 < len(self.order) else math.inf
            self.weights.append(weight)
            self.offsets.append(offset)
            self.thresholds.append(nxt * weight - offset)

    def fill(self, n: int) -> list[int]:
        """Events per replica among the first n dealt from the starting utilizations."""
        if not self.slots:
            self._prepare()
        r = len(self.base)
        if n >= self.below:
            extra = round_robin_counts(n - self.below, r, self.rr)
            return [s + e for s, e in zip(self.slots, extra, strict=True)]
        if self.equal:
            return round_robin_counts(n, r, 0)  # equal loads: ties, lowest index first
        if not self.order:
            self._levels()
        i = bisect.bisect_left(self.thresholds, n)
        level = (n + self.offsets[i]) / self.weights[i]
        base, deltas, slots = self.base, self.deltas, self.slots
        if not self.same_delta:  # every level below L, then drop the highest ones
            counts = [
                min(s, max(0, math.ceil((level - u) / d)))
                for u, d, s in zip(base, deltas, slots, strict=True)
            ]
            _settle(counts, base, deltas, slots, n)
            return counts
        # One δ: every level below L - δ is taken, and each replica's next level lies in
        # [L - δ, L], above all of those, so the few events left take the lowest next levels.
        # Only the i + 1 replicas with the lowest U are below the water.
        delta = deltas[0]
        counts = [0] * r
        candidates = []
        for j in self.order[: i + 1]:
            c = min(slots[j], max(0, math.floor((level - base[j]) / delta)))
            counts[j] = c
            if c < slots[j]:
                candidates.append((base[j] + c * delta, j))
        short = n - sum(counts)
        if short > 0:
            candidates.sort()
            for _, j in candidates[:short]:
                counts[j] += 1
        if sum(counts) != n:  # float dust at the edges: settle event by event
            _settle(counts, base, deltas, slots, n)
        return counts

    def take(self, n: int) -> list[int]:
        """Events per replica for the next n arrivals."""
        if not self.slots:
            self._prepare()
        if len(self.base) == 1:  # one replica takes every event; `given` as fill() leaves it
            if self.dealt < self.below:
                self.given = [self.dealt + n]
            self.dealt += n
            return [n]
        if self.dealt >= self.below:  # every U >= 1 already: plain round-robin (Alg. 1 line 8)
            r = len(self.base)
            start = (self.rr + self.dealt - self.below) % r
            self.dealt += n  # `given` already covers every slot below 1: U no longer moves
            q, rem = divmod(n, r)
            if not rem:
                return [q] * r
            return [q + 1 if (j - start) % r < rem else q for j in range(r)]
        self.dealt += n
        total = self.fill(self.dealt)
        step = [t - g for t, g in zip(total, self.given, strict=True)]
        self.given = total
        return step

    def utilization(self) -> list[float]:
        """The running U_j: Alg. 1 adds δ_j per event until U >= 1 (round-robin events add none)."""
        if not self.slots:
            self._prepare()
        return [
            u + min(g, s) * d
            for u, g, s, d in zip(self.base, self.given, self.slots, self.deltas, strict=True)
        ]

    def next_rr(self) -> int:
        """Where the round-robin fallback continues (line 8 of Alg. 1)."""
        if not self.dealt:  # nothing dealt: max(0, 0 - below) is 0 whatever the slots
            return self.rr % max(1, len(self.base))
        return (self.rr + max(0, self.dealt - self.below)) % max(1, len(self.base))


def _settle(
    counts: list[int], base: Sequence[float], deltas: Sequence[float], slots: Sequence[int], n: int
) -> None:
    """Add the smallest free (level, j) slots or remove the largest taken ones until sum == n."""
    total = sum(counts)
    if total > n:
        taken = [(-(base[j] + (c - 1) * deltas[j]), -j) for j, c in enumerate(counts) if c > 0]
        heapq.heapify(taken)
        while total > n:
            _, neg_j = heapq.heappop(taken)
            j = -neg_j
            counts[j] -= 1
            total -= 1
            if counts[j] > 0:
                heapq.heappush(taken, (-(base[j] + (counts[j] - 1) * deltas[j]), neg_j))
    if total < n:
        free = [(base[j] + c * deltas[j], j) for j, c in enumerate(counts) if c < slots[j]]
        heapq.heapify(free)
        while total < n:
            _, j = heapq.heappop(free)
            counts[j] += 1
            total += 1
            if counts[j] < slots[j]:
                heapq.heappush(free, (base[j] + counts[j] * deltas[j], j))
