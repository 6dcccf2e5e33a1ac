"""A source rate's history and a forecast of it: what every forecaster (Caladrius IV-A) takes and
returns, and the season a daily series holds."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from pydantic import Field

from elastream.base.settings import Settings
from elastream.prediction.graph import ModelError

DAY_S = 86_400.0
MAX_SEASON = 2_000  # samples; a longer daily season is not modelled (too many states)


@dataclass(frozen=True)
class Series:
    """Source rate (events/s) sampled every `step_s` seconds, starting at `start_s`."""

    values: np.ndarray
    step_s: float = 1.0
    start_s: float = 0.0

    def __post_init__(self) -> None:
        values = np.asarray(self.values, dtype=float)
        if values.ndim != 1 or values.size < 2:
            raise ModelError("history: a forecast needs at least 2 samples")
        if not np.all(np.isfinite(values)):
            raise ModelError("history: rates must be finite")
        if self.step_s <= 0:
            raise ModelError(f"history: step must be > 0 s, got {self.step_s}")
        object.__setattr__(self, "values", values)

    def digest(self) -> str:
        """A stable hash of the history: the cache key's first part."""
        h = hashlib.sha256(self.values.tobytes())
        h.update(f"{self.step_s}:{self.start_s}".encode())
        return h.hexdigest()


@dataclass(frozen=True)
class Forecast:
    """Point forecast and the `level` prediction interval for the next `len(point)` steps."""

    point: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float
    step_s: float
    start_s: float


class Fitted(Protocol):
    def forecast(self, horizon: int) -> Forecast: ...


class Params(Settings):
    """Settings shared by every forecaster."""

    level: float = Field(0.9, gt=0, lt=1, description="coverage of the prediction interval")


def clip_rates(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Rates are never negative: clip point and bounds at 0."""
    return tuple(np.maximum(np.asarray(a, dtype=float), 0.0) for a in arrays)


def forecast_start(history: Series, horizon: int) -> tuple[float, int]:
    if horizon < 1:
        raise ModelError(f"forecast horizon must be ≥ 1 step, got {horizon}")
    return history.start_s + history.values.size * history.step_s, horizon


def season_for(history: Series, requested: int | None) -> int | None:
    """The season in samples: as requested, else one day when ≥ 2 days are in the history."""
    if requested is not None:
        if history.values.size < 2 * requested:
            raise ModelError(
                f"season_length {requested} needs ≥ {2 * requested} samples of history, "
                f"got {history.values.size}"
            )
        return requested
    per_day = round(DAY_S / history.step_s)
    if 2 <= per_day <= MAX_SEASON and history.values.size >= 2 * per_day:
        return per_day
    return None
