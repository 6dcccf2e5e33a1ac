"""The local scaling decision of one operator instance: Algs. 2, 3, 4 (lines 2-4), 8 and 11.

Threshold naming. Section 5.1 of the paper lists "top_threshold thres_down = 0.8" and
"down_threshold thres_up = 0.6": the words and the symbols disagree. Alg. 11 scales out when
l_t >= thres_up and in when l_t <= thres_down; with thres_up = 0.6 < thres_down = 0.8 every load in
[0.6, 0.8] (including the target r = 0.7) would trigger a scale-out and there would be no dead
band. We follow the words: `thres_up` (scale-out, "top") = 0.8 and `thres_down` (scale-in,
"down") = 0.6, so that thres_down < r < thres_up. Loads in Alg. 11 are ratios l_t / C.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from pydantic import Field, model_validator

from elastream.base.settings import Settings


class DecisionConfig(Settings):
    """Parameters of the local decision (Section 5.1 defaults)."""

    capacity: float = Field(500.0, gt=0, description="C: tuples one instance processes per step")
    target_ratio: float = Field(0.7, gt=0, le=1, description="r: desired load ratio l_t / C")
    thres_up: float = Field(0.8, gt=0, description="scale out when l_t / C >= thres_up ('top')")
    thres_down: float = Field(
        0.6, ge=0, description="scale in when l_t / C <= thres_down ('down'); keeper excepted"
    )
    damping_age: int = Field(
        0,
        ge=0,
        description="beyond the paper: scale a scale-out factor p by min(1, age / damping_age), "
        "age = steps the instance's view of n_t has been unchanged; 0 = the paper's rule",
    )

    pending_steps: int = Field(
        0,
        ge=0,
        description="beyond the paper: siblings that joined the instance's view of n_t within "
        "the last pending_steps steps have not shared the measured load yet, so L_t = l_t * "
        "(smallest view over those steps) while n_diff still subtracts the current n_t; "
        "0 = the paper's rule",
    )

    @model_validator(mode="after")
    def _ordered(self) -> DecisionConfig:
        if not self.thres_down < self.target_ratio < self.thres_up:
            raise ValueError(
                f"thresholds must satisfy thres_down < target_ratio < thres_up, got "
                f"{self.thres_down} < {self.target_ratio} < {self.thres_up}"
            )
        return self


class Action(Enum):
    NONE = "none"
    SCALE_OUT = "scale_out"
    SCALE_IN = "scale_in"


@dataclass(frozen=True, slots=True)
class Decision:
    """What Alg. 11 decided: `count` new siblings for SCALE_OUT, 1 for SCALE_IN, else 0."""

    action: Action
    count: int
    probability: float

    @classmethod
    def none(cls, probability: float = 0.0) -> Decision:
        return cls(Action.NONE, 0, probability)


def _check_draw(u: float) -> None:
    if not 0.0 <= u < 1.0:
        raise ValueError(f"random draw u must lie in [0, 1), got {u}")


def get_probability(
    capacity: float, ratio: float, load: float, n_t: int, n_shared: int | None = None
) -> float:
    """Alg. 2: L_t = l_t * n_t, n_diff = floor(L_t / (r C) - n_t), return n_diff / n_t.

    Beyond the paper: `n_shared` (<= n_t), when given, is the number of siblings the measured
    load was shared by, and L_t = l_t * n_shared (see `DecisionConfig.pending_steps`)."""
    if load < 0:
        raise ValueError(f"load l_t must be >= 0, got {load}")
    shared = n_t if n_shared is None else n_shared
    if not 1 <= shared <= n_t:
        raise ValueError(f"need 1 <= n_shared <= n_t (siblings), got {shared} and {n_t}")
    total = load * shared
    n_diff = math.floor(total / (ratio * capacity) - n_t)
    return n_diff / n_t


def apply_proba(p: float, u: float) -> int:
    """Alg. 3: 1 if the uniform draw u in [0, 1) is below p, else 0."""
    _check_draw(u)
    return 1 if u < p else 0


def duplication_count(p: float, u: float) -> int:
    """Alg. 4 lines 2-4 / Section 4.1.1: floor(p) copies, plus one more with prob. p - floor(p)."""
    if p <= 0:
        return 0
    whole = math.floor(p)
    return whole + apply_proba(p - whole, u)


def damping(age: int, damping_age: int) -> float:
    """Beyond the paper: weight min(1, age / damping_age) of a view of n_t that is `age` old."""
    if age < 0:
        raise ValueError(f"age of the n_t view must be >= 0, got {age}")
    return 1.0 if damping_age == 0 else min(1.0, age / damping_age)


def decide(
    config: DecisionConfig,
    load: float,
    n_t: int,
    is_keeper: bool,
    u: float,
    age: int = 0,
    n_shared: int | None = None,
) -> Decision:
    """Alg. 11 with Alg. 4 (scale-out count) and Alg. 8 (scale-in draw); the keeper never leaves.

    `load` is l_t in tuples per step, `n_t` the instance's view of its operator's instance count,
    `u` a uniform draw in [0, 1) (time and randomness are parameters), `age` how long the n_t
    view has been unchanged (only used when `config.damping_age` > 0), `n_shared` the siblings
    the load was shared by (None: n_t, the paper's rule)."""
    _check_draw(u)
    ratio = load / config.capacity
    p = get_probability(config.capacity, config.target_ratio, load, n_t, n_shared)
    if ratio >= config.thres_up:
        p *= damping(age, config.damping_age)  # beyond the paper: only growth is damped
        count = duplication_count(p, u)
        return Decision(Action.SCALE_OUT, count, p) if count >= 1 else Decision.none(p)
    if ratio <= config.thres_down and not is_keeper and apply_proba(-p, u):
        return Decision(Action.SCALE_IN, 1, -p)
    return Decision.none(p)
