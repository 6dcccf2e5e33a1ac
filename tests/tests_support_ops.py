"""Operator functions used only by the tests."""

from elastream.model.events import Event


def fail_on_three(events: list[Event]):
    out = []
    for e in events:
        if e.payload["i"] == 3:
            raise ValueError("three is bad")
        out.append(e.emit(e.payload))
    return out
