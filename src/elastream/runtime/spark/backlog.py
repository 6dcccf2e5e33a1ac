"""The backlog of a `spark` source, from its query's last progress: how many offsets (events,
for Kafka: records) the source is behind the latest its system holds (docs/kafka.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

# Kafka's source reports these per-partition figures in its progress `metrics` (Spark 3.2+);
# a source that reports a total gives `offsetsBehindLatest`.
TOTAL = "offsetsBehindLatest"
AVERAGE = "avgOffsetsBehindLatest"


def query_backlog(progress: Mapping[str, Any] | None) -> int | None:
    """The offsets a query's sources are behind, summed over the sources that tell (None: no
    progress yet, or no source tells). `progress` is `StreamingQuery.lastProgress`, or its
    JSON as a dict."""
    if not progress:
        return None
    told = [source_backlog(source) for source in progress.get("sources") or ()]
    known = [n for n in told if n is not None]
    return sum(known) if known else None


def source_backlog(source: Mapping[str, Any]) -> int | None:
    """One source's backlog: its metrics' `offsetsBehindLatest`, else `avgOffsetsBehindLatest`
    times its partitions (Kafka), else `latestOffset` minus `endOffset` where both are numbers
    or both map the same partitions to numbers (None: the source tells nothing)."""
    metrics = source.get("metrics") or {}
    if TOTAL in metrics:
        return max(0, round(float(metrics[TOTAL])))
    latest, end = parsed(source.get("latestOffset")), parsed(source.get("endOffset"))
    if AVERAGE in metrics:
        partitions = len(numbers(latest) or numbers(end) or ())
        if partitions:
            return max(0, round(float(metrics[AVERAGE]) * partitions))
    return offset_difference(latest, end)


def offset_difference(latest: Any, end: Any) -> int | None:
    """latest − end of two offsets that are numbers, or nested mappings of numbers with the
    same keys (Kafka's {topic: {partition: offset}}); None otherwise."""
    if is_number(latest) and is_number(end):
        return max(0, int(latest) - int(end))
    ahead, behind = numbers(latest), numbers(end)
    if ahead is None or behind is None or ahead.keys() != behind.keys():
        return None
    return sum(max(0, int(ahead[k]) - int(behind[k])) for k in ahead)


def numbers(offset: Any, prefix: Sequence[str] = ()) -> dict[tuple[str, ...], float] | None:
    """A nested mapping of numbers flattened to {path: number}; None if anything else is in
    it (or it is not a mapping)."""
    if not isinstance(offset, Mapping) or not offset:
        return None
    out: dict[tuple[str, ...], float] = {}
    for key, value in offset.items():
        path = (*prefix, str(key))
        if is_number(value):
            out[path] = value
            continue
        inner = numbers(value, path)
        if inner is None:
            return None
        out.update(inner)
    return out


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def parsed(offset: Any) -> Any:
    """An offset as JSON data: PySpark's SourceProgress gives the JSON text, its JSON a value."""
    if isinstance(offset, str):
        try:
            return json.loads(offset)
        except ValueError:
            return offset
    return offset
