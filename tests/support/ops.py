"""Operator functions used only by the tests."""

from elastream.model.events import ColumnEmit, Event, EventColumns


def fail_on_three(events: list[Event]):
    out = []
    for e in events:
        if e.payload["i"] == 3:
            raise ValueError("three is bad")
        out.append(e.emit(e.payload))
    return out


def fan_out_columns(batch: EventColumns) -> list[ColumnEmit]:
    """Vectorized: even indices twice to 'low' (the second keyed 'x'), odd ones once to 'high';
    index 4 has no output (filtered)."""
    index = [p["i"] for p in batch.payloads]
    evens = [k for k, i in enumerate(index) if i % 2 == 0 and i != 4]
    odds = [k for k, i in enumerate(index) if i % 2]
    return [
        batch.emit([index[k] for k in evens], parents=evens, stream="low"),
        batch.emit([-index[k] for k in odds], parents=odds, stream="high"),
        batch.emit(["again"] * len(evens), parents=evens, stream="low", keys=["x"] * len(evens)),
    ]


def fail_on_three_columns(batch: EventColumns) -> ColumnEmit:
    """Vectorized: forwards every row, but raises if the batch holds index 3."""
    if any(p["i"] == 3 for p in batch.payloads):
        raise ValueError("three is bad")
    return batch.emit(batch.payloads)


def rows_out_of_range(batch: EventColumns) -> ColumnEmit:
    return batch.emit([None], parents=[len(batch)])
