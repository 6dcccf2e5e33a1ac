"""A files source's schema without Spark: the declared one, or read with pyarrow from the first
file in its folder, written as Spark's DDL (what `elastream check` shows before a run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

SIMPLE_TYPES = (
    (pa.types.is_boolean, "BOOLEAN"),
    (pa.types.is_int8, "TINYINT"),
    (pa.types.is_int16, "SMALLINT"),
    (pa.types.is_int32, "INT"),
    (pa.types.is_integer, "BIGINT"),
    (pa.types.is_float32, "FLOAT"),
    (pa.types.is_floating, "DOUBLE"),
    (pa.types.is_date, "DATE"),
    (pa.types.is_timestamp, "TIMESTAMP"),
    (pa.types.is_binary, "BINARY"),
    (pa.types.is_large_binary, "BINARY"),
)


class SchemaError(ValueError):
    """A schema that cannot be read; the message names the source and the file."""


def spark_type(kind: pa.DataType) -> str:
    """Spark's DDL name of an Arrow type (a column of nulls only reads as STRING, as in Spark)."""
    if pa.types.is_decimal(kind):
        return f"DECIMAL({kind.precision},{kind.scale})"
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return f"ARRAY<{spark_type(kind.value_type)}>"
    if pa.types.is_struct(kind):
        fields = ", ".join(f"{f.name}: {spark_type(f.type)}" for f in kind)
        return f"STRUCT<{fields}>"
    if pa.types.is_map(kind):
        return f"MAP<{spark_type(kind.key_type)}, {spark_type(kind.item_type)}>"
    return next((name for test, name in SIMPLE_TYPES if test(kind)), "STRING")


def ddl(schema: pa.Schema) -> str:
    """`name TYPE, ...` of an Arrow schema, as Spark writes a schema (`StructType.toDDL`)."""
    return ", ".join(f"{field.name} {spark_type(field.type)}" for field in schema)


def first_data_file(folder: Path) -> Path | None:
    """The first file of `folder` by name that Spark reads (not starting with `_` or `.`)."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(("_", ".")))
    return files[0] if files else None


def sorted_fields(schema: pa.Schema) -> pa.Schema:
    """The schema with its fields, and those of its structs, by name (as Spark infers JSON)."""

    def by_name(kind: pa.DataType) -> pa.DataType:
        if pa.types.is_struct(kind):
            return pa.struct(sorted((pa.field(f.name, by_name(f.type)) for f in kind), key=_name))
        if pa.types.is_list(kind):
            return pa.list_(by_name(kind.value_type))
        return kind

    return pa.schema(sorted((pa.field(f.name, by_name(f.type)) for f in schema), key=_name))


def _name(field: pa.Field) -> str:
    return field.name


def read_schema(file: Path, fmt: str, options: dict[str, str]) -> pa.Schema:
    """The schema of one file as Spark's reader would see it with `options`: JSON lines
    inferred, fields by name; CSV columns `_c0`, `_c1`, ... or the header's names (`header`),
    STRING unless `inferSchema`; Parquet's own."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.read_schema(file)
    if fmt == "json":
        import pyarrow.json as pj

        return sorted_fields(pj.read_json(file).schema)
    import pyarrow.csv as pc

    header = options.get("header", "false").lower() == "true"
    read = pc.ReadOptions(autogenerate_column_names=not header)
    parse = pc.ParseOptions(delimiter=options.get("sep", options.get("delimiter", ",")))
    table = pc.read_csv(file, read_options=read, parse_options=parse)
    names = table.column_names if header else [f"_c{i}" for i in range(table.num_columns)]
    inferred = options.get("inferSchema", "false").lower() == "true"
    return pa.schema(
        [(n, f.type if inferred else pa.string()) for n, f in zip(names, table.schema, strict=True)]
    )


def source_schema(spec: Any) -> tuple[str, str]:
    """A files source's schema as DDL and where it comes from: declared, or read from the first
    file of its folder (SchemaError naming the source and the file if that fails)."""
    if spec.schema_ is not None:
        return spec.schema_, "declared"
    folder = Path(spec.path or "")
    file = first_data_file(folder) if folder.is_dir() else None
    if file is None:
        raise SchemaError(f"source {spec.name!r}: no `schema` given and no file in {folder}")
    try:
        schema = read_schema(file, spec.format or "json", spec.options)
    except (pa.ArrowException, OSError) as exc:
        raise SchemaError(
            f"source {spec.name!r}: cannot read a schema from {file} ({exc})"
        ) from None
    return ddl(schema), f"inferred from {file}"
