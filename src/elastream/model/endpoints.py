"""Where a pipeline's events come from and where they go: the source and sink specs, each kind
with the fields it takes (docs/sources-sinks.md)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import (
    BaseModel,
    Field,
    model_validator,
)

from elastream.base.settings import Settings


class SourceKind(StrEnum):
    """Where a source's events come from (docs/sources-sinks.md)."""

    GENERATOR = "generator"  # fn(index, rng) -> (key, payload) at a rate: experiments, simulator
    FILES = "files"  # a directory of CSV / JSON-lines / Parquet files, read as they arrive
    REDIS = "redis"  # a Redis stream another program appends to (XADD)
    SPARK = "spark"  # any streaming DataFrame: fn(spark) -> DataFrame


class SinkKind(StrEnum):
    """Where a sink's events go (docs/sources-sinks.md)."""

    QUEUE = "queue"  # elastream's internal terminal queue (experiments): `read_sink`
    FILES = "files"  # Parquet or JSON-lines files through Spark's file sink
    REDIS = "redis"  # a Redis stream, idempotent by event id
    FOREACH_BATCH = "foreach_batch"  # fn(df, batch_id) with Spark's batch ids


FILE_FORMATS = ("csv", "json", "parquet")
SINK_FORMATS = ("parquet", "json", "csv")

# Fields each kind takes (besides name, kind and key); any other set field is an error naming it.
_SOURCE_FIELDS: dict[SourceKind, tuple[str, ...]] = {
    SourceKind.GENERATOR: ("generator", "rate"),
    SourceKind.FILES: ("path", "format", "schema_", "options", "dead_letter", "key"),
    SourceKind.REDIS: ("url", "stream", "key"),
    SourceKind.SPARK: ("function", "key"),
}
_SOURCE_REQUIRED: dict[SourceKind, tuple[str, ...]] = {
    SourceKind.GENERATOR: ("generator",),
    SourceKind.FILES: ("path", "format"),
    SourceKind.REDIS: ("url", "stream"),
    SourceKind.SPARK: ("function",),
}
_SINK_FIELDS: dict[SinkKind, tuple[str, ...]] = {
    SinkKind.QUEUE: (),
    SinkKind.FILES: ("path", "format", "schema_", "metadata"),
    SinkKind.REDIS: ("url", "stream", "metadata"),
    SinkKind.FOREACH_BATCH: ("function", "metadata"),
}
_SINK_REQUIRED: dict[SinkKind, tuple[str, ...]] = {
    SinkKind.QUEUE: (),
    SinkKind.FILES: ("path",),
    SinkKind.REDIS: ("url", "stream"),
    SinkKind.FOREACH_BATCH: ("function",),
}


def _check_kind_fields(
    node: BaseModel, what: str, kind: str, allowed: tuple[str, ...], required: tuple[str, ...]
) -> None:
    """Raise naming the first required field missing, or a field the kind does not take."""
    for name in required:
        if getattr(node, name) is None:
            raise ValueError(f"a {kind} {what} needs `{_alias(name)}`")
    common = {"name", "kind"}
    for name in sorted(node.model_fields_set - common - set(allowed)):
        default = type(node).model_fields[name].get_default(call_default_factory=True)
        if getattr(node, name) in (None, default):  # a dumped model's unset fields
            continue
        raise ValueError(f"`{_alias(name)}` does not apply to kind {kind!r}")


def _alias(field_name: str) -> str:
    return field_name.rstrip("_")


class SourceSpec(Settings):
    """An input. `kind` generator (the default): events made by `generator` (import path of
    `fn(index, rng) -> (key, payload)`) at `rate` events/s unless a trace drives it; files, redis
    and spark read the outside world (docs/sources-sinks.md)."""

    name: str = Field(description="the source's name")
    kind: SourceKind = Field(
        SourceKind.GENERATOR, description="generator | files | redis | spark (default generator)"
    )
    generator: str | None = Field(
        None, description="generator: import path of fn(index, rng) -> (key, payload)"
    )
    rate: float = Field(
        10.0, gt=0, description="generator: events/s (a trace rescales all generator sources)"
    )
    path: str | None = Field(None, description="files: the directory whose files are read")
    format: str | None = Field(None, description="files: csv | json (JSON lines) | parquet")
    schema_: str | None = Field(
        None,
        alias="schema",
        description="files: the rows' schema as Spark DDL ('a STRING, b INT'); None: inferred "
        "once from the files present at start and recorded",
    )
    options: dict[str, str] = Field(
        default_factory=dict, description="files: options of Spark's reader (header, sep, ...)"
    )
    dead_letter: str | None = Field(
        None,
        description="files: directory for malformed rows (JSON lines with file and reason); "
        "None: <out>/dead-letter/<source>",
    )
    url: str | None = Field(None, description="redis: redis://HOST:PORT/DB of the server")
    stream: str | None = Field(None, description="redis: the stream's key")
    function: str | None = Field(
        None, description="spark: import path of fn(spark) -> streaming DataFrame"
    )
    key: str | None = Field(
        None, description="files, redis, spark: the column (field) whose value is the event key"
    )

    @model_validator(mode="before")
    @classmethod
    def _default_kind(cls, data: Any) -> Any:
        if isinstance(data, dict) and "kind" not in data and "generator" not in data:
            raise ValueError("a source needs `kind` (generator | files | redis | spark)")
        return data

    @model_validator(mode="after")
    def _kind_fields(self) -> SourceSpec:
        _check_kind_fields(
            self, "source", self.kind.value, _SOURCE_FIELDS[self.kind], _SOURCE_REQUIRED[self.kind]
        )
        if self.format is not None and self.format not in FILE_FORMATS:
            raise ValueError(f"`format` {self.format!r}: expected one of {', '.join(FILE_FORMATS)}")
        return self

    @property
    def external(self) -> bool:
        """Whether the source reads the outside world (not a generator)."""
        return self.kind is not SourceKind.GENERATOR

    @property
    def import_path(self) -> str | None:
        """The callable the source imports: its generator or its DataFrame builder."""
        return self.generator if self.kind is SourceKind.GENERATOR else self.function


class SinkSpec(Settings):
    """A terminal node: events that reach it have left the pipeline. `kind` queue (the default)
    keeps them in elastream's store; files, redis and foreach_batch deliver them
    (docs/sources-sinks.md)."""

    name: str = Field(description="the sink's name")
    kind: SinkKind = Field(
        SinkKind.QUEUE, description="queue | files | redis | foreach_batch (default queue)"
    )
    path: str | None = Field(None, description="files: the output directory")
    format: str = Field("parquet", description="files: parquet | json (JSON lines) | csv")
    schema_: str | None = Field(
        None,
        alias="schema",
        description="files: the columns to write, as Spark DDL (each batch is cast to them); "
        "None: the payload's own columns, as the first batch has them",
    )
    metadata: bool = Field(
        True,
        description="files, redis, foreach_batch: also write elastream's columns "
        "_elastream_id (the event's offset in the sink), _elastream_root (the source event it "
        "came from), _elastream_key and _elastream_ts (when its source event entered, s)",
    )
    url: str | None = Field(None, description="redis: redis://HOST:PORT/DB of the server")
    stream: str | None = Field(None, description="redis: the stream's key")
    function: str | None = Field(None, description="foreach_batch: import path of fn(df, batch_id)")

    @model_validator(mode="after")
    def _kind_fields(self) -> SinkSpec:
        _check_kind_fields(
            self, "sink", self.kind.value, _SINK_FIELDS[self.kind], _SINK_REQUIRED[self.kind]
        )
        if self.format not in SINK_FORMATS:
            raise ValueError(f"`format` {self.format!r}: expected one of {', '.join(SINK_FORMATS)}")
        return self

    @property
    def delivered(self) -> bool:
        """Whether the sink delivers its events outside elastream (not a queue)."""
        return self.kind is not SinkKind.QUEUE
