"""Number formatting shared by the HTML report and the live terminal table."""

from __future__ import annotations

import math

MISSING = "–"


def _known(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def pct(value: float | None, digits: int = 1) -> str:
    """0.4567 -> '45.7%'."""
    return f"{value * 100:.{digits}f}%" if _known(value) else MISSING


def ms(value: float | None) -> str:
    """Milliseconds with a precision that suits the magnitude."""
    if not _known(value):
        return MISSING
    assert value is not None
    return f"{value:,.0f} ms" if abs(value) >= 100 else f"{value:.1f} ms"


def count(value: float | None) -> str:
    """An event or replica count with thousands separators."""
    return f"{value:,.0f}" if _known(value) else MISSING


def number(value: float | None, digits: int = 2) -> str:
    return f"{value:,.{digits}f}" if _known(value) else MISSING


def rate(value: float | None) -> str:
    """Events per second."""
    return f"{value:,.1f}" if _known(value) else MISSING
