"""Optional dependencies: import one, or fail naming the `pip install elastream[EXTRA]` it needs."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

EXTRAS = ("redis", "service", "placement", "forecast", "plots", "metrics", "all")


class MissingExtraError(RuntimeError):
    """A feature's optional dependency is not installed."""


def require(module: str, *, extra: str, feature: str | None = None) -> ModuleType:
    """`module` imported, or a MissingExtraError naming the extra that installs it."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r} (known: {', '.join(EXTRAS)})")
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.split(".")[0]
        if exc.name is None or exc.name.split(".")[0] != top:
            raise  # the package is there but one of its own imports failed: not ours to rename
        what = feature or f"this feature (it needs {top})"
        raise MissingExtraError(
            f"{what} needs the optional dependency {top!r}: pip install 'elastream[{extra}]'"
        ) from None


def installed(module: str) -> bool:
    """Whether `module` can be imported (without importing it)."""
    return importlib.util.find_spec(module) is not None
