"""Per-component waiting times: M/M/c (Erlang C) and Kingman/Allen–Cunneen G/G/c."""

from __future__ import annotations

import math

from elastream.prediction.graph import ModelError


def _check(arrival_rate: float, service_rate: float, servers: int) -> None:
    if arrival_rate < 0:
        raise ModelError(f"queueing: negative arrival rate {arrival_rate}")
    if service_rate <= 0:
        raise ModelError(f"queueing: service rate must be > 0, got {service_rate}")
    if servers < 1:
        raise ModelError(f"queueing: servers must be ≥ 1, got {servers}")


def erlang_c(arrival_rate: float, service_rate: float, servers: int) -> float:
    """Probability that an arrival waits in M/M/c: C(c, a) with a = λ/μ, ρ = a/c < 1."""
    _check(arrival_rate, service_rate, servers)
    a = arrival_rate / service_rate
    rho = a / servers
    if rho >= 1:
        return 1.0
    term, partial = 1.0, 1.0  # a^k/k!, summed for k < c
    for k in range(1, servers):
        term *= a / k
        partial += term
    last = term * a / servers / (1.0 - rho)  # a^c/c! · 1/(1−ρ)
    return last / (partial + last)


def mmc_wait(arrival_rate: float, service_rate: float, servers: int) -> float:
    """M/M/c mean queueing delay W_q = C(c, a)/(c·μ − λ); inf when ρ ≥ 1."""
    _check(arrival_rate, service_rate, servers)
    capacity = servers * service_rate
    if arrival_rate >= capacity:
        return math.inf
    return erlang_c(arrival_rate, service_rate, servers) / (capacity - arrival_rate)


def ggc_wait(
    arrival_rate: float, service_rate: float, servers: int, arrival_scv: float, service_scv: float
) -> float:
    """Kingman extended to c servers (Allen–Cunneen): W_q ≈ W_q(M/M/c)·(c_a²+c_s²)/2.

    c_a², c_s² are the squared coefficients of variation of inter-arrival and service times; for
    c = 1 this is Kingman's ρ/(1−ρ)·(c_a²+c_s²)/2·E[S].
    """
    if arrival_scv < 0 or service_scv < 0:
        raise ModelError(f"queueing: SCVs must be ≥ 0, got {arrival_scv}, {service_scv}")
    return mmc_wait(arrival_rate, service_rate, servers) * (arrival_scv + service_scv) / 2.0


def sojourn_time(
    arrival_rate: float,
    service_rate: float,
    servers: int,
    arrival_scv: float = 1.0,
    service_scv: float | None = None,
) -> float:
    """Mean time in the component: W_q + 1/μ; M/M/c when the service SCV is unknown."""
    if service_scv is None:
        wait = mmc_wait(arrival_rate, service_rate, servers)
    else:
        wait = ggc_wait(arrival_rate, service_rate, servers, arrival_scv, service_scv)
    return wait + 1.0 / service_rate
