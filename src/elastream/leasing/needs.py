"""The hosts each control interval needed over the last BTUs, and the release rules' forecasts
of the next BTU from them (pure: time comes as `now`)."""

from __future__ import annotations

from collections import deque


class NeedRecord:
    """The hosts each interval's decision needed over the last `memory_btus` BTUs: the stage's
    memory between intervals, and the release rules' forecasts of the next BTU — by the last
    one (`peak`: the most any of its intervals needed) or by the lulls seen (`lulls_allow`)."""

    def __init__(self, btu_s: float, memory_btus: int = 10) -> None:
        self.btu_s = btu_s
        self.memory_s = memory_btus * btu_s
        self.since: float | None = None  # the start of the first interval recorded
        # (interval start, interval end, hosts), the last `memory_s` only
        self.needs: deque[tuple[float, float, int]] = deque()

    def add(self, now: float, interval_s: float, need: int) -> None:
        """The hosts the interval ending at `now` needed; entries older than the memory leave."""
        if self.since is None:
            self.since = now - interval_s
        self.needs.append((now - interval_s, now, need))
        while self.needs[0][1] <= now - self.memory_s:
            self.needs.popleft()

    def peak(self, now: float) -> int | None:
        """The most hosts an interval of the last BTU needed; None while the record spans less
        than one BTU (the next BTU cannot be forecast by a whole one yet)."""
        if self.since is None or now - self.since < self.btu_s - 1e-9:
            return None
        return max(need for _, end, need in self.needs if end > now - self.btu_s)

    def lulls_allow(self, now: float, hosts: int, horizon_s: float) -> bool:
        """Whether `hosts` will hold the need for the next `horizon_s`, by the lulls seen (the
        stretches between intervals that needed more): yes when the current lull has lasted a
        BTU (the `peak` rule), or when every ended lull that lasted as long as the current one
        has lasted at least its age plus the horizon (shorter ones, a dip of one interval, say
        nothing of a lull already older than they were); no while none such has ended."""
        if not self.needs or self.since is None:
            return False
        busy = [(start, end) for start, end, need in self.needs if need > hosts]
        age = now - (busy[-1][1] if busy else self.since)
        if age >= self.btu_s - 1e-9:
            return True
        first = self.needs[0][0]  # a lull cut by the memory counts from there: shorter, so safer
        # each busy interval ends the lull since the one before (or since `first`)
        gaps = zip([first] + [end for _, end in busy], [start for start, _ in busy], strict=False)
        reached = [start - end for end, start in gaps if start - end >= max(age, 1e-9)]
        return bool(reached) and min(reached) >= age + horizon_s
