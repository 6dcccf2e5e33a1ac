"""Operator functions used only by the tests."""

import pyarrow as pa
import pyarrow.compute as pc

from elastream.model.events import Event, TableEmit, emit


def fail_on_three(events: list[Event]):
    out = []
    for e in events:
        if e.payload["i"] == 3:
            raise ValueError("three is bad")
        out.append(e.emit(e.payload))
    return out


def fan_out_columns(batch: pa.Table) -> list[TableEmit]:
    """Vectorized: even indices twice to 'low' (the second keyed by its `k` column, 'x'), odd
    ones once to 'high'; index 4 has no output (filtered)."""
    index = batch.column("i").to_pylist()
    evens = [k for k, i in enumerate(index) if i % 2 == 0 and i != 4]
    odds = [k for k, i in enumerate(index) if i % 2]
    again = pa.table({"v": ["again"] * len(evens), "k": ["x"] * len(evens)})
    return [
        emit(pa.table({"v": [index[k] for k in evens]}), parents=evens, stream="low"),
        emit(pa.table({"v": [-index[k] for k in odds]}), parents=odds, stream="high"),
        emit(again, parents=evens, stream="low", key="k"),
    ]


def fail_on_three_columns(batch: pa.Table) -> pa.Table:
    """Vectorized: forwards every row, but raises if the batch holds index 3."""
    if pc.any(pc.equal(batch.column("i"), 3)).as_py():
        raise ValueError("three is bad")
    return batch


def rows_out_of_range(batch: pa.Table) -> TableEmit:
    return emit(pa.table({"v": [None]}), parents=[batch.num_rows])


def split_words(events: list[Event]):
    """One output per word of the line (a line of no words is filtered)."""
    return [e.emit({"w": w}) for e in events for w in e.payload["line"].split()]
