"""The lease-ahead policy: forecast the peak need, lease before the boot, release at BTU end."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from elastream.leasing.hosts import HostType, LeasingError
from elastream.leasing.needs import NeedRecord
from reproductions.btu.algorithms import select_host
from reproductions.btu.cluster import Cluster, LeasePlan
from reproductions.btu.config import AheadSettings, BTUSettings
from reproductions.btu.policies import Draft, Observation, _swap, fill_by_waiting, pool_wait


# ----------------------------------------------------------------------------- forecaster
def find_period(series: np.ndarray, min_lag: int, min_corr: float) -> int | None:
    """The seasonal period (samples) of `series` (time x columns, summed over the columns after
    scaling each to mean 1): the lag with the highest correlation between the series and its
    lagged copy, among the lags after that correlation first turns negative and with two
    periods in the series, if it reaches `min_corr`; None when there is none (a trend or a
    random walk stays positively correlated)."""
    y = np.atleast_2d(np.asarray(series, dtype=float).T).T
    means = y.mean(axis=0)
    x = (y / np.where(means > 0, means, 1.0)).sum(axis=1)
    corr = lag_correlations(x, x.size // 2)
    negative = [lag for lag, c in enumerate(corr, start=1) if c < 0]
    if not negative:
        return None
    lags = range(max(negative[0] + 1, min_lag), x.size // 2 + 1)
    if not lags:
        return None
    top = max(corr[lag - 1] for lag in lags)
    best = next(lag for lag in lags if corr[lag - 1] >= top - 1e-9)  # the shortest of ties
    return best if top >= min_corr else None


def lag_correlations(x: np.ndarray, max_lag: int) -> list[float]:
    """Pearson correlation of x[t] and x[t + lag] for lag = 1 .. max_lag (0 where either part
    is constant), all lags at once from running sums."""
    n = x.size
    lags = np.arange(1, max_lag + 1)
    dots = np.correlate(x, x, mode="full")[n - 1 + lags]  # sum of x[t] x[t + lag]
    c1 = np.concatenate(([0.0], np.cumsum(x)))
    c2 = np.concatenate(([0.0], np.cumsum(x * x)))
    m = n - lags
    sum_a, sum_b = c1[m], c1[n] - c1[lags]  # x[:-lag] and x[lag:]
    sq_a, sq_b = c2[m], c2[n] - c2[lags]
    cov = dots / m - (sum_a / m) * (sum_b / m)
    var_a = np.maximum(sq_a / m - (sum_a / m) ** 2, 0.0)
    var_b = np.maximum(sq_b / m - (sum_b / m) ** 2, 0.0)
    sd = np.sqrt(var_a * var_b)
    tiny = 1e-12 * max(1.0, float(np.abs(x).max(initial=0.0))) ** 2
    return [float(c / d) if d > tiny else 0.0 for c, d in zip(cov, sd, strict=True)]


def diffusive_rise(series: np.ndarray, horizon: int) -> np.ndarray:
    """Per column, the rise to expect within `horizon` samples when rises add up like a random
    walk's steps: the largest rise seen over k samples times sqrt(horizon / k), the largest over
    k = 1 .. horizon (the error of a naive forecast of a random walk grows as the square root of
    the horizon, so a short history's rises over a few samples bound the longer ones it has not
    seen yet); never below `max_rise`."""
    y = np.atleast_2d(np.asarray(series, dtype=float).T).T
    rise = np.zeros(y.shape[1])
    for k in range(1, min(horizon, y.shape[0] - 1) + 1):
        rise = np.maximum(rise, (y[k:] - y[:-k]).max(axis=0) * math.sqrt(horizon / k))
    return rise


def max_rise(series: np.ndarray, horizon: int) -> np.ndarray:
    """Per column, the largest rise seen within `horizon` samples: max over t of
    (max of y[t+1 .. t+horizon]) - y[t], never below 0 (0 for a single sample)."""
    y = np.atleast_2d(np.asarray(series, dtype=float).T).T
    rise = np.zeros(y.shape[1])
    for k in range(1, min(horizon, y.shape[0] - 1) + 1):
        rise = np.maximum(rise, (y[k:] - y[:-k]).max(axis=0))
    return rise


def rise_quantile(series: np.ndarray, horizon: int, q: float) -> np.ndarray:
    """Per column, the `q`-quantile over the history of the rise within `horizon` samples:
    (max of y[t+1 .. t+horizon]) - y[t] for every t with a whole horizon after it (every t when
    none has), never below 0. With q = 1 it is `max_rise`; below 1 a rare burst in the history
    (a measurement spike after a slow-down) no longer sets the margin of every decision."""
    y = np.atleast_2d(np.asarray(series, dtype=float).T).T
    n = y.shape[0]
    if n < 2:
        return np.zeros(y.shape[1])
    ahead = np.full((n - 1, y.shape[1]), -np.inf)  # ahead[t]: max of y[t+1 .. t+horizon]
    for k in range(1, min(horizon, n - 1) + 1):
        ahead[: n - k] = np.maximum(ahead[: n - k], y[k:])
    whole = max(1, n - horizon)
    rises = ahead[:whole] - y[:whole]
    return np.maximum(np.quantile(rises, q, axis=0), 0.0)


def seasonal_peak(series: np.ndarray, period: int, horizon: int) -> np.ndarray:
    """Per column, the largest seasonal-naive forecast over the next `horizon` samples: the value
    one (or more) periods before each coming sample."""
    y = np.atleast_2d(np.asarray(series, dtype=float).T).T
    n = y.shape[0]
    rows = [n - 1 + k - period * math.ceil(k / period) for k in range(1, horizon + 1)]
    return y[rows].max(axis=0)


def backtest_errors(series: np.ndarray, period: int, horizon: int) -> tuple[float, float]:
    """Mean absolute error of the seasonal-naive and of the naive forecast `horizon` samples
    ahead over the history (both forecast the same samples)."""
    y = np.atleast_2d(np.asarray(series, dtype=float).T).T
    lag = period * math.ceil(horizon / period)
    start = max(lag, horizon)
    target = y[start:]
    naive = y[start - horizon : y.shape[0] - horizon]
    seasonal = y[start - lag : y.shape[0] - lag]
    return float(np.abs(target - seasonal).mean()), float(np.abs(target - naive).mean())


@dataclass(frozen=True)
class PeakForecast:
    """The forecast peak rate of every column over a horizon, and which model gave it."""

    rates: np.ndarray
    model: str  # "seasonal(P)", "naive+rise", or both (a release's forecast), or "prior"


def forecast_peak(
    series: np.ndarray,
    horizon: int,
    settings: AheadSettings,
    prior: np.ndarray | None = None,
    diffuse: bool = False,
    every_model: bool = False,
) -> PeakForecast:
    """Peak rate per column over the next `horizon` samples, from the last `history_window`
    samples: the seasonal-naive peak when a period is found and its backtest error is below
    `seasonal_gain` x the naive one; else the last value plus a rise, capped at the highest
    value seen (a level already reached is the expected peak; not with `diffuse`, below); never
    below the last value. The rise is the `rise_quantile` of the rises seen within the horizon
    when that is set; else the largest rise seen within it, or with `diffuse` (the lease-ahead
    forecast) `diffusive_rise`: a rise steeper than any seen within the horizon is expected from
    the steepest shorter ones (the margin of the naive forecast's error, which grows as the
    square root of the horizon for a random walk), uncapped without a prior. With a `prior`
    (the known peak): the prior while the history is shorter than `warmup`; after, the same
    forecast with the prior as the cap of the rise, and everything capped at the prior (what a
    fleet sized for the peak carries). With `every_model` (a release's forecast: a released host
    cannot come back within its BTU without paying again) the larger of the seasonal peak and
    the naive one, where the seasonal one is chosen."""
    y = np.atleast_2d(np.asarray(series, dtype=float).T).T[-settings.history_window :]
    if prior is not None and y.shape[0] < settings.warmup:
        return PeakForecast(np.asarray(prior, dtype=float), "prior")
    last = y[-1]
    if prior is not None:
        cap = np.asarray(prior, dtype=float)
    else:  # leasing ahead for a rise is not capped at the peak seen: the load may trend
        cap = np.full_like(last, np.inf) if diffuse else y.max(axis=0)
    top = np.inf if prior is None else cap
    period = find_period(y, settings.min_period, settings.min_corr)
    if period is not None and y.shape[0] > period * math.ceil(horizon / period) + horizon:
        seasonal, naive = backtest_errors(y, period, horizon)
        if seasonal < settings.seasonal_gain * naive:
            peak = np.maximum(seasonal_peak(y, period, horizon) * (1 + settings.margin), last)
            if every_model:
                rising = naive_peak(y, horizon, settings, cap, diffuse)
                return PeakForecast(
                    np.minimum(np.maximum(peak, rising), top), f"seasonal({period}), naive+rise"
                )
            return PeakForecast(np.minimum(peak, top), f"seasonal({period})")
    rising = naive_peak(y, horizon, settings, cap, diffuse)
    return PeakForecast(np.minimum(rising, top), "naive+rise")


def naive_peak(
    y: np.ndarray, horizon: int, settings: AheadSettings, cap: np.ndarray, diffuse: bool
) -> np.ndarray:
    """The naive peak over the next `horizon` samples of history `y`: its last value plus a
    rise (`forecast_peak` says which), capped at `cap`, never below the last value."""
    if settings.rise_quantile is not None:
        rise = rise_quantile(y, horizon, settings.rise_quantile)
    else:
        rise = diffusive_rise(y, horizon) if diffuse else max_rise(y, horizon)
    return np.maximum(np.minimum(y[-1] + rise, cap), y[-1])


# ----------------------------------------------------------------------------- sizing
def instances_needed(
    rates: np.ndarray,
    queues: Mapping[str, float],
    obs: Observation,
    settings: AheadSettings,
    prior: np.ndarray | None = None,
) -> dict[str, int]:
    """Instances per operator for `rates` (items/s, in the order of obs.status): the most of
    (a) the rate at the target utilisation plus what drains the queue within `drain_s` and
    (b) with a `wait_target`, the fewest whose pool keeps the M/M/1 wait (`pool_wait`, the
    simulator's queue model) within that share of the type's SLO; at least one each, and with
    a `prior` (the known peak) never more than it needs at `peak_utilisation` (the fleet sized
    for the peak)."""
    need = {}
    for k, op in enumerate(obs.status):
        mu = obs.service_rate[op]
        load = rates[k] / (mu * settings.utilisation) + queues[op] / (mu * settings.drain_s)
        n = max(1, math.ceil(load - 1e-9))
        if settings.wait_target is not None:
            limit = settings.wait_target * obs.status[op].slo
            while pool_wait(float(rates[k]), n, mu) > limit:
                n += 1
        if prior is not None:
            n = min(n, max(1, math.ceil(prior[k] / (mu * settings.peak_utilisation) - 1e-9)))
        need[op] = n
    return need


def planned_arrivals(obs: Observation, window: int) -> np.ndarray:
    """The last `window` samples of the arrival history a plan forecasts from. With the
    topology's routing R known, every operator's rates are what the operators without an
    upstream receive, carried through the routing: lambda = (I - R^T)^-1 e (e: those
    operators' observed arrivals, 0 elsewhere), the steady flow a downstream type gets once its
    upstream types keep up. Its own observed
    arrivals are not that: throttled while an upstream type is overloaded (the start, where the
    policy then leased in steps) and bursting while one drains a backlog (a burst the rise
    forecast would then expect again; a release plans on the larger of the two,
    `release_rates`). Without a routing: the observed arrivals."""
    seen = obs.arrivals[-window:]
    if obs.routing is None or seen.shape[0] == 0:
        return seen
    r = np.asarray(obs.routing, dtype=float)
    outside = np.where(r.sum(axis=0) == 0, seen, 0.0)  # no upstream: outside arrivals
    return np.linalg.solve(np.eye(r.shape[0]) - r.T, outside.T).T


def _samples(seconds: float, obs: Observation) -> int:
    return max(1, math.ceil(seconds / obs.monitor_s - 1e-9))


def lead_s(settings: AheadSettings, measured: tuple[float, ...] = ()) -> float:
    """How far ahead a lease must be decided: the start-up of a new host (lease to its first
    instances serving: boot, image download, instance start) and one provisioning interval (a
    need is seen only at the next provisioning). The start-up is the longest one measured so
    far; before any is measured, the settings' `boot_s` + `start_s`."""
    startup = max(measured) if measured else settings.boot_s + settings.start_s
    return startup + settings.provision_s


def _place(draft: Draft, op: str, needs: Mapping[str, int], btu: BTUSettings) -> None:
    """One more instance of `op`: the best Alg. 2 host, else room from another type's surplus
    over its need, else a new host (leased now, ahead of the need)."""
    host = select_host(draft.cluster, op, btu)
    if host is not None:
        draft.put(op, host)
        return
    surplus = sorted(
        ((draft.cluster.count(v) - n, v) for v, n in needs.items() if v != op), reverse=True
    )
    if any(extra > 0 and _swap(draft, victim, op) for extra, victim in surplus):
        return
    draft.put(op, draft.new_host())


def _prior(obs: Observation, settings: AheadSettings) -> np.ndarray | None:
    """The known peak rates in the order of obs.status (None when none is given)."""
    if not settings.peak_rates:
        return None
    missing = sorted(set(obs.status) - set(settings.peak_rates))
    if missing:
        raise LeasingError(f"ahead policy: peak_rates has no rate for {', '.join(missing)}")
    return np.array([settings.peak_rates[op] for op in obs.status])


def decide_provision(
    obs: Observation, cluster: Cluster, kind: HostType, settings: AheadSettings, btu: BTUSettings
) -> LeasePlan:
    """Each provisioning interval: every operator sized for the forecast peak over the lead time
    (hosts leased now for what the forecast needs then), then the paid room filled."""
    draft = Draft(cluster, kind, obs.now)
    if obs.arrivals.shape[0] == 0:
        return draft.plan()
    horizon = _samples(lead_s(settings, obs.startup_s), obs)
    prior = _prior(obs, settings)
    arrivals = planned_arrivals(obs, settings.history_window)
    peak = forecast_peak(arrivals, horizon, settings, prior, diffuse=True)
    queues = {op: s.queue for op, s in obs.status.items()}
    needs = instances_needed(peak.rates, queues, obs, settings, prior)
    for op, need in needs.items():
        for _ in range(need - draft.cluster.count(op)):
            _place(draft, op, needs, btu)
    if settings.fill:
        fill_by_waiting(draft, peak.rates, obs, btu)
    return draft.plan()


def _vacate(
    trial: Draft, hid: str, keep: Mapping[str, int], gone: frozenset[str], btu: BTUSettings
) -> bool:
    """Stop the host's instances beyond `keep`; move the rest to other hosts (Alg. 2, released
    hosts excluded), making room there by stopping instances beyond `keep` (filled room).
    False when a needed instance fits nowhere else, or the host took instances this plan
    moved (they are not running yet)."""
    if any(inst.instance_id in trial.created for inst in trial.cluster.on_host(hid)):
        return False
    for inst in trial.cluster.on_host(hid):
        if trial.cluster.count(inst.operator) > keep[inst.operator]:
            trial.remove(inst.instance_id)
            continue
        target = select_host(trial.cluster, inst.operator, btu, gone | {hid})
        if target is None:
            target = _free_room(trial, inst.operator, keep, gone | {hid})
        if target is None:
            return False
        trial.remove(inst.instance_id)
        trial.put(inst.operator, target, inst.instance_id)
    return True


def _free_room(
    trial: Draft, operator: str, keep: Mapping[str, int], exclude: frozenset[str]
) -> str | None:
    """A host (not in `exclude`) where stopping instances of types above their `keep` makes
    room for one `operator` instance; stops them and returns the host, else None."""
    d = trial.cluster.demand(operator)
    for host in trial.cluster.hosts:
        if host.host_id in exclude:
            continue
        cpu, mem = trial.cluster.free_raw(host.host_id)
        victims = []
        spare = {op: trial.cluster.count(op) - n for op, n in keep.items()}
        for inst in trial.cluster.on_host(host.host_id):
            if cpu >= d.cpu_shares and mem >= d.memory_mb:
                break
            placed_now = inst.instance_id in trial.created  # this plan's own: not stoppable
            if inst.operator != operator and spare[inst.operator] > 0 and not placed_now:
                spare[inst.operator] -= 1
                v = trial.cluster.demand(inst.operator)
                cpu, mem = cpu + v.cpu_shares, mem + v.memory_mb
                victims.append(inst.instance_id)
        if cpu >= d.cpu_shares and mem >= d.memory_mb:
            for iid in victims:
                trial.remove(iid)
            return host.host_id
    return None


def release_rates(
    obs: Observation, paid_s: float, kind: HostType, settings: AheadSettings
) -> PeakForecast:
    """The rates a release must leave room for: the hosts that stay carry the load for the
    rest of the paid BTU (`paid_s`) and the next BTU (which prolonging would pay), and every
    lease-ahead decision in that time sizes for the rate it sees plus the lease-ahead margin.
    So: the forecast peak over paid_s + one BTU (the largest rise seen within that horizon, or
    the seasonal peak) plus the lease-ahead margin (`diffusive_rise` over the lead time), capped
    as `forecast_peak` caps, and the naive one even where the seasonal one is chosen; on the
    larger of the flow (`planned_arrivals`) and the arrivals seen, since a type's drain bursts
    come again after the next slow-down upstream. A host released on this forecast is not leased
    again within a BTU unless the load rises beyond anything the history has shown."""
    prior = _prior(obs, settings)
    horizon = _samples(paid_s + kind.btu_s, obs)
    ahead = settings
    if settings.release_quantile is not None:
        ahead = settings.model_copy(update={"rise_quantile": settings.release_quantile})
    window = settings.history_window
    recent = np.maximum(planned_arrivals(obs, window), obs.arrivals[-window:])
    peak = forecast_peak(recent, horizon, ahead, prior, every_model=True)
    if peak.model == "prior":
        return peak
    lead = _samples(lead_s(settings, obs.startup_s), obs)
    if settings.rise_quantile is not None:
        margin = rise_quantile(recent, lead, settings.rise_quantile)
    else:
        margin = diffusive_rise(recent, lead)
    top = np.inf if prior is None else prior
    return PeakForecast(np.minimum(peak.rates + margin, top), peak.model + "+lead margin")


def decide_release(
    obs: Observation,
    cluster: Cluster,
    hosts: tuple[str, ...],
    kind: HostType,
    settings: AheadSettings,
    btu: BTUSettings,
) -> LeasePlan:
    """Hosts in the last part of their BTU: release one only when the forecast over the rest
    of its paid BTU and the next one (`release_rates`) fits on the hosts that stay (its surplus
    instances stop, the needed ones move), and with `release_lulls` only when the lulls seen
    say the hosts that stay will hold the need over that horizon too (`need_record`, the
    product's `NeedRecord.lulls_allow`); else it is prolonged. Every host is prolonged while
    the history is shorter than that horizon: the rises it may bring have not been seen yet
    (on the web day a host released 9.5 minutes in, on a falling load, was leased again 3.5
    minutes later)."""
    draft = Draft(cluster, kind, obs.now)
    draft.drain = settings.drain
    paid = max((cluster.host(h).remaining_btu(obs.now) for h in hosts), default=0.0)
    if obs.arrivals.shape[0] < _samples(paid + kind.btu_s, obs):
        draft.prolong.extend(hosts)
        return draft.plan()
    rates = release_rates(obs, paid, kind, settings).rates
    queues = {op: s.queue for op, s in obs.status.items()}
    sizing = settings.model_copy(update={"utilisation": settings.release_utilisation})
    keep = instances_needed(rates, queues, obs, sizing, _prior(obs, settings))
    record: NeedRecord | None = None  # built once, and only when a host could go by forecast
    released = 0

    def vacate(trial: Draft, hid: str, excluded: frozenset[str]) -> bool:
        nonlocal record, released
        if not _vacate(trial, hid, keep, excluded, btu):
            return False
        if settings.release_lulls:
            record = record or need_record(obs, cluster, kind, settings)
            staying = len(cluster.hosts) - released - 1
            horizon = cluster.host(hid).remaining_btu(obs.now) + kind.btu_s
            if not record.lulls_allow(obs.now, staying, horizon):
                return False
        released += 1
        return True

    return draft.release_hosts(hosts, vacate, spare_undecided=True)


def hosts_needed(
    rates: np.ndarray, obs: Observation, cluster: Cluster, kind: HostType, settings: AheadSettings
) -> np.ndarray:
    """Per row of `rates` (items/s in the order of obs.status), the hosts of `kind` whose CPU
    shares and memory hold every operator's instances as a release sizes them
    (`instances_needed` without a backlog: `release_utilisation`, and the `wait_target`), at
    least one each; the packing's loss is not counted, so never more than a placement needs."""
    ops = list(obs.status)
    mu = np.array([obs.service_rate[op] for op in ops])
    lam = np.atleast_2d(rates)
    n = np.maximum(1.0, np.ceil(lam / (mu * settings.release_utilisation) - 1e-9))
    if settings.wait_target is not None:
        limit = settings.wait_target * np.array([obs.status[op].slo for op in ops])
        # the M/M/1 wait lam / (c (c - lam)) <= limit, c = n mu: c >= (lam + sqrt(lam^2 +
        # 4 lam / limit)) / 2 (pool_wait)
        c = (lam + np.sqrt(lam * lam + 4.0 * lam / limit)) / 2.0
        n = np.maximum(n, np.ceil(c / mu - 1e-9))
    cpu = n @ np.array([cluster.demand(op).cpu_shares for op in ops])
    mem = n @ np.array([cluster.demand(op).memory_mb for op in ops])
    return np.ceil(np.maximum(cpu / kind.cpu_shares, mem / kind.memory_mb) - 1e-9).astype(int)


def need_record(
    obs: Observation, cluster: Cluster, kind: HostType, settings: AheadSettings
) -> NeedRecord:
    """The hosts each monitoring sample of the record's memory (ten BTUs) needed, by
    `hosts_needed` on the larger of the flow and the arrivals seen (what `release_rates`
    forecasts from): the record the lulls rule reads."""
    record = NeedRecord(kind.btu_s)
    window = _samples(record.memory_s, obs)
    rates = np.maximum(planned_arrivals(obs, window), obs.arrivals[-window:])
    needs = hosts_needed(rates, obs, cluster, kind, settings)
    first = obs.now - len(needs) * obs.monitor_s
    for k, need in enumerate(needs, start=1):
        record.add(first + k * obs.monitor_s, obs.monitor_s, int(need))
    return record


@dataclass(frozen=True)
class AheadPolicy:
    """The lease-ahead policy in the simulator's LeasingPolicy shape (no state of its own).

    Beyond the paper. The forecaster picks, by backtest on the arrivals (the topology's flow
    where the routing is known, `planned_arrivals`), between a
    seasonal-naive forecast (period found by autocorrelation) and the naive one widened by the
    largest (or a quantile of the) rise seen within the horizon; every operator is sized for the
    forecast peak over the time a new host needs to be useful (the longest start-up measured +
    one provisioning interval), paid room is filled where an instance saves the most waiting,
    and a host in the last part of its BTU is released only when the forecast over the rest of
    its paid BTU and the next one, plus the lease-ahead margin, says the remaining hosts carry
    the need, and (`release_lulls`) the lulls seen say so too.
    Pure: each decision is a function of the observation, the cluster and the settings
    (docs/reproduction/btu-ahead.md)."""

    kind: HostType
    settings: AheadSettings = field(default_factory=AheadSettings)
    btu: BTUSettings = field(default_factory=BTUSettings)
    name: str = "ahead"

    def provision(self, obs: Observation, cluster: Cluster) -> LeasePlan:
        return decide_provision(obs, cluster, self.kind, self.settings, self.btu)

    def release(self, obs: Observation, cluster: Cluster, hosts: tuple[str, ...]) -> LeasePlan:
        return decide_release(obs, cluster, hosts, self.kind, self.settings, self.btu)
