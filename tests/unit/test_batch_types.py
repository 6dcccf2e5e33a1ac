"""A per-event operator's outputs keep the types of the input's columns they are named as
(`model.batch.payload_table(..., like=)`): Python ints would otherwise come back as int64 and a
sink would write a declared INT as BIGINT; a field whose values no longer fit keeps its own."""

import pyarrow as pa

from elastream.model.batch import payload_table

INPUT = pa.schema([("a", pa.string()), ("b", pa.int32()), ("when", pa.date32())])


def test_fields_named_as_the_inputs_take_their_types():
    rows = [{"a": "x", "b": 1, "extra": 2.5}, {"a": "y", "b": 2, "extra": None}]
    table = payload_table(rows, like=INPUT)
    assert table.schema.field("b").type == pa.int32()  # as declared, not int64
    assert table.schema.field("a").type == pa.string()
    assert table.schema.field("extra").type == pa.float64()  # not in the input: inferred
    assert table.column("b").to_pylist() == [1, 2]
    assert payload_table(rows).schema.field("b").type == pa.int64()  # without `like`


def test_a_field_whose_values_no_longer_fit_keeps_the_inferred_type():
    table = payload_table([{"b": 2**40}, {"b": 3}], like=INPUT)
    assert table.schema.field("b").type == pa.int64()  # 2**40 does not fit int32
    table = payload_table([{"b": "one"}], like=INPUT)
    assert table.schema.field("b").type == pa.string()  # the operator made it a string
    table = payload_table([{"a": 7}], like=INPUT)  # a string field parsed to an int stays an int
    assert table.schema.field("a").type == pa.int64() and table.column("a").to_pylist() == [7]
