"""Settings of the BTU-based approach, the threshold baseline, our forecast policy, simulator."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, model_validator

from elastream.base.settings import Settings


class CacheFavours(StrEnum):
    """Which hosts the image-cache factor CF of Alg. 2 favours (see docs/leasing.md)."""

    CACHED = "cached"  # the paper's text: suitability x CF when the image is cached (our default)
    UNCACHED = "uncached"  # the authors' public runtime: suitability / 100 when it is not cached


class BTUSettings(Settings):
    """Parameters of the paper's Algorithms 1-3 and its release procedure."""

    scaling_threshold: int = Field(50, ge=0, description="Alg. 1 line 16: o_queue must exceed it")
    trend_window: int = Field(5, ge=2, description="Alg. 1: N, the durations in the trend")
    cache_factor: float = Field(0.01, gt=0, description="Alg. 2 lines 10-12: CF")
    cache_favours: CacheFavours = Field(
        CacheFavours.CACHED, description="hosts the CF multiplication favours (text vs runtime)"
    )
    w1: float = Field(1.0, ge=0, description="Alg. 3 line 13: weight of the instances term")
    w2: float = Field(1.0, ge=0, description="Alg. 3 line 13: weight of the queueLoad term")
    w3: float = Field(1.0, ge=0, description="Alg. 3 line 13: weight of the delay term")
    w4: float = Field(1.0, ge=0, description="Alg. 3 line 13: weight of the scalings term")
    penalty: float = Field(0.0001, ge=0, description="Alg. 3 line 6: P, penalty per delayed item")
    queue_load: float = Field(100.0, ge=0, description="Alg. 3 line 9: QL")
    release_window: float = Field(
        0.05, gt=0, lt=1, description="release procedure: the last fraction of a BTU it runs in"
    )
    release_share: float = Field(
        0.2,
        gt=0,
        le=1,
        description="release procedure: most of an operator type's instances released at once",
    )


class ThresholdSettings(Settings):
    """The paper's threshold baseline (section Baseline)."""

    up_one: int = Field(50, ge=0, description="one upscaling when o_queue exceeds it")
    up_two: int = Field(250, ge=0, description="two upscalings when o_queue exceeds it")
    down_below: int = Field(1, ge=0, description="one downscaling when o_queue is below it")


class ForecastSettings(Settings):
    """Our forecast-aware prolong-or-release policy (goes beyond the paper)."""

    alpha: float = Field(0.5, gt=0, le=1, description="Holt level smoothing")
    beta: float = Field(0.1, ge=0, le=1, description="Holt trend smoothing")
    utilisation: float = Field(0.9, gt=0, le=1, description="target instance utilisation")
    lead_s: float = Field(15.0, ge=0, description="forecast horizon for upscaling (s)")
    drain_s: float = Field(600.0, gt=0, description="time to drain a backlog when sizing (s)")
    memory_s: float = Field(
        1800.0, ge=0, description="look-back of the observed peak kept when releasing (s)"
    )
    max_step: int = Field(2, ge=1, description="most instances added to one operator per tick")
    reactive: bool = Field(True, description="also add one instance when Alg. 1 fires")


class AheadSettings(Settings):
    """The lease-ahead policy (beyond the paper; ahead.py here, docs/reproduction/btu-ahead.md)."""

    utilisation: float = Field(
        0.9, gt=0, le=1, description="target instance utilisation of the forecast peak"
    )
    peak_utilisation: float = Field(
        0.9, gt=0, le=1, description="utilisation the known peak (peak_rates) is sized at"
    )
    drain_s: float = Field(600.0, gt=0, description="time to drain a backlog when sizing (s)")
    wait_target: float | None = Field(
        None,
        gt=0,
        description="size each type so that its pool's M/M/1 wait stays within this share of "
        "its SLO o_slo (None: by utilisation only)",
    )
    boot_s: float = Field(
        60.0, ge=0, description="host boot assumed until a start-up has been measured (s)"
    )
    start_s: float = Field(
        30.0,
        ge=0,
        description="instance start (image download included) assumed until a start-up has "
        "been measured (s)",
    )
    provision_s: float = Field(60.0, gt=0, description="the provisioning interval (s)")
    min_period: int = Field(
        8, ge=2, description="shortest seasonal period the forecaster looks for (samples)"
    )
    rise_quantile: float | None = Field(
        None,
        gt=0,
        le=1,
        description="the rise a forecast adds: this quantile of the rises seen within its "
        "horizon (None: the largest rise, square-root scaled when leasing ahead)",
    )
    release_quantile: float | None = Field(
        None,
        gt=0,
        le=1,
        description="the quantile of the rises within the paid rest and the next BTU that a "
        "release forecast adds (None: rise_quantile; 1: the largest rise seen)",
    )
    history_window: int = Field(
        960,
        ge=16,
        description="the last monitoring samples the forecaster reads (960 x 15 s = 4 h; "
        "bounds the cost of a decision on a long run)",
    )
    min_corr: float = Field(
        0.8, gt=0, le=1, description="autocorrelation a seasonal period must reach"
    )
    seasonal_gain: float = Field(
        0.5,
        gt=0,
        le=1,
        description="the seasonal forecast is used when its backtest error is below this "
        "fraction of the naive one",
    )
    margin: float = Field(
        0.3, ge=0, description="relative head-room added to a seasonal forecast peak"
    )
    fill: bool = Field(True, description="fill paid room with instances in the need's mix")
    release_utilisation: float = Field(
        0.9,
        gt=0,
        le=1,
        description="a host is released only when the hosts that stay carry the forecast peak "
        "over the next BTU at this instance utilisation",
    )
    release_lulls: bool = Field(
        True,
        description="a host is released only when, besides the forecast, every lull seen that "
        "lasted as long as the current one (a stretch in which the hosts that stay would have "
        "held the need, sized as a release sizes: release_utilisation and the wait target) "
        "outlasted its age plus the paid rest and the next BTU, or the current lull has lasted "
        "a BTU (the product's `lulls` rule, elastream.leasing.needs); false: the forecast alone",
    )
    drain: bool = Field(
        True,
        description="a released host serves until its paid BTU ends while the instances moved "
        "off it start on their targets (make before break); false: it stops at the decision",
    )
    peak_rates: dict[str, float] = Field(
        default_factory=dict,
        description="known peak arrival rate per operator (items/s), as static_peak is told: "
        "the forecast during the warm-up and its cap after (empty: no prior, cap = peak seen)",
    )
    warmup: int = Field(
        20, ge=1, description="monitoring samples of history before the forecaster is trusted"
    )


class SimSettings(Settings):
    """The simulated setting of the paper's evaluation."""

    duration_s: float = Field(7200.0, gt=0, description="run length (120 min)")
    monitor_s: float = Field(15.0, gt=0, description="monitoring interval")
    provision_s: float = Field(60.0, gt=0, description="resource provisioning interval")
    substeps: int = Field(3, ge=1, description="queue-model steps per monitoring interval")
    btu_s: float = Field(600.0, gt=0, description="billing time unit (s)")
    price: float = Field(1.0, ge=0, description="price per BTU")
    cores: int = Field(4, ge=1, description="cores per host")
    memory_mb: float = Field(7168.0, gt=0, description="memory per host (MB)")
    boot_min_s: float = Field(30.0, ge=0, description="VM boot time, lower bound")
    boot_max_s: float = Field(60.0, ge=0, description="VM boot time, upper bound")
    start_cached_s: float = Field(7.5, ge=0, description="instance start with a cached image")
    pull_mb_per_s: float = Field(4.0, gt=0, description="image download speed (MB/s)")
    concurrency: float = Field(
        5.0, gt=0, description="items one instance processes at once (our calibration)"
    )
    service_sigma: float = Field(0.25, ge=0, description="log-sd of one item's processing time")
    noise_sigma: float = Field(0.1, ge=0, description="log-sd of per-interval interference")
    spike_prob: float = Field(0.01, ge=0, le=1, description="chance of an interference spike")
    spike_factor: float = Field(3.0, ge=1, description="slow-down during a spike")
    penalty: float = Field(0.0001, ge=0, description="penalty per delayed item")
    initial_hosts: int = Field(2, ge=1, description="hosts leased at the start")

    @model_validator(mode="after")
    def _consistent(self) -> SimSettings:
        if self.boot_min_s > self.boot_max_s:
            raise ValueError(f"boot_min_s ({self.boot_min_s}) > boot_max_s ({self.boot_max_s})")
        for name in ("provision_s", "duration_s"):
            ratio = getattr(self, name) / self.monitor_s
            if abs(ratio - round(ratio)) > 1e-9:
                raise ValueError(f"{name} ({getattr(self, name)}) is not a multiple of monitor_s")
        return self
