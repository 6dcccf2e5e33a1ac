"""The check every operator after parse makes: the event's payload has the fields it needs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from elastream.model.events import Event


def required_payload(e: Event, operator: str, needed: Sequence[str]) -> dict[str, Any]:
    """The event's dict payload, or an error naming the event and the first missing field."""
    p = e.payload
    missing = [k for k in needed if not isinstance(p, dict) or k not in p]
    if missing:
        raise ValueError(
            f"{operator}: event {e.id} has no field {missing[0]!r} in its payload "
            f"(is {operator} wired after the operator that adds it?)"
        )
    return p
