"""A files source: the files Spark's file stream reads, appended batch by batch; malformed rows and
unreadable files to its dead-letter folder, named with the file they came from."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elastream.model.endpoints import SourceSpec
from elastream.runtime.queues import ControlTable
from elastream.runtime.spark.admission import (
    Admission,
    SourceError,
    batch_start,
)

CORRUPT = "_corrupt_record"  # Spark's column for a row its CSV/JSON reader could not parse
FILE_COL = "_elastream_file"  # the column naming the file a row came from
DEFAULT_MAX_FILES = "16"  # files per micro-batch unless the source's options say otherwise
# (16 against 64: all rows out 1.77-1.95x plain Spark against 2.04-2.06x, docs/results.md)


class DeadLetters:
    """Malformed rows of a files source, written as JSON lines (file, reason, record) to one
    file per micro-batch (rewritten whole on a replay)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.count = 0

    def write(self, batch_id: int, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.folder / f"batch-{batch_id:08d}.jsonl"
        tmp = target.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.replace(tmp, target)
        self.count += len(rows)


@dataclass
class FilesBatch:
    """A files source's foreachBatch: rows numbered within their file (id `source:file:row`),
    malformed ones to the dead letters, the rest appended."""

    spec: SourceSpec
    admission: Admission
    dead: DeadLetters
    base: str  # the source directory, as Spark writes file paths
    log: Path | None = None  # Spark's file-source log of the query (the files of each batch)
    files_seen: set[str] = field(default_factory=set)
    rows_seen: int = 0  # rows read from the files seen (good and malformed)

    def __call__(self, df: Any, batch_id: int) -> None:
        import pyarrow.compute as pc

        table = df.toArrow()
        files, index = file_rows(table.column(FILE_COL), self.base)
        broken = (
            pc.is_valid(table.column(CORRUPT))
            if CORRUPT in table.column_names
            else pa_false(len(table))
        )
        bad = self._malformed(table, files, index, broken)
        good = table.filter(pc.invert(broken)) if bad else table
        good = good.drop_columns([c for c in (FILE_COL, CORRUPT) if c in good.column_names])
        read = set(pc.unique(files).to_pylist())
        if self.spec.format == "parquet" and self.log is not None:
            bad += self._unreadable(batch_id, read)
        self.dead.write(batch_id, bad)
        first = batch_start(self.spec.name, batch_id, self.admission)
        self.admission.append_table(first, good)
        self.files_seen.update(read)
        self.rows_seen += len(table)
        self.admission.store.set_meta(
            files_key(self.spec.name), {"files": len(self.files_seen), "rows": self.rows_seen}
        )

    def _malformed(self, table: Any, files: Any, index: Any, broken: Any) -> list[dict]:
        """The dead letters of the rows Spark could not parse (file, row in it, reason)."""
        if not pc_any(broken):
            return []
        rows = table.filter(broken)
        reason = f"malformed {self.spec.format} record or a value not of the schema"
        return [
            {"file": f, "row": i, "reason": reason, "record": r}
            for f, i, r in zip(
                files.filter(broken).to_pylist(),
                index.filter(broken).to_pylist(),
                rows.column(CORRUPT).to_pylist(),
                strict=True,
            )
        ]

    def _unreadable(self, batch_id: int, read: set[str]) -> list[dict[str, Any]]:
        """The batch's Parquet files that gave no row and whose footer cannot be read (Spark
        skipped them: `ignoreCorruptFiles`), each as one dead letter naming file and reason."""
        import pyarrow.parquet as pq

        out = []
        for path in batch_files(self.log, batch_id) if self.log is not None else []:
            name = relative_name(path, self.base)
            if name in read:
                continue
            try:
                pq.read_metadata(path.removeprefix("file://").removeprefix("file:"))
            except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
                reason = f"unreadable Parquet file: {exc}"
                out.append({"file": name, "row": None, "reason": reason, "record": None})
                self.files_seen.add(name)
        return out


def batch_files(log: Path, batch_id: int) -> list[str]:
    """The files Spark's file stream source gave micro-batch `batch_id`, from its metadata log
    (`sources/0/N`, or the `N.compact` file that every tenth batch folds the earlier ones into)."""
    for name in (str(batch_id), f"{batch_id}.compact"):
        path = log / name
        if path.exists():
            entries = (json.loads(line) for line in path.read_text().splitlines()[1:] if line)
            return [e["path"] for e in entries if e.get("batchId", batch_id) == batch_id]
    return []


def logged_files(log: Path) -> set[str]:
    """Every file Spark's file-source log records as read (a resumed query's checkpoint)."""
    if not log.is_dir():
        return set()
    names = set()
    for path in log.iterdir():
        if path.name.split(".")[0].isdigit():
            lines = path.read_text().splitlines()[1:]
            names.update(json.loads(line)["path"] for line in lines if line)
    return names


def pa_false(n: int) -> Any:
    import pyarrow as pa

    return pa.array([False] * n, pa.bool_())


def pc_any(mask: Any) -> bool:
    import pyarrow.compute as pc

    return bool(pc.any(mask).as_py())


def file_rows(paths: Any, base: str) -> tuple[Any, Any]:
    """Each row's file (relative to the source directory) and its number within that file in
    the batch's order, computed column-wise (no Python per row)."""
    import numpy as np
    import pyarrow as pa

    encoded = paths.combine_chunks().dictionary_encode() if len(paths) else None
    if encoded is None:
        return pa.array([], pa.string()), pa.array([], pa.int64())
    names = pa.array([relative_name(p, base) for p in encoded.dictionary.to_pylist()], pa.string())
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    order = np.argsort(codes, kind="stable")
    n = len(codes)
    starts = np.r_[0, np.flatnonzero(np.diff(codes[order])) + 1]
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
    return names.take(pa.array(codes)), pa.array(rank)


def relative_name(path: str, base: str) -> str:
    """A file's name relative to the source directory (Spark gives file: URIs)."""
    local = path.removeprefix("file://").removeprefix("file:")
    try:
        return str(Path(local).relative_to(base))
    except ValueError:
        return local


def unread_files(folder: Path, handler: FilesBatch) -> int | None:
    """The events in the files not read yet, estimated from the files read so far."""
    names = (str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    visible = [n for n in names if not Path(n).name.startswith((".", "_"))]
    unread = sum(1 for n in visible if n not in handler.files_seen)
    if unread == 0:
        return 0
    if not handler.files_seen:
        return None
    return round(unread * handler.rows_seen / len(handler.files_seen))


SCHEMA_KEY = "source_schema:{}"


def files_key(source: str) -> str:
    """The store's meta key of the files a files source has read, and their rows."""
    return f"files_read:{source}"


def files_frame(spark: Any, spec: SourceSpec, store: ControlTable) -> Any:
    """The streaming DataFrame of a files source: its schema (declared, else inferred once from
    the files present and recorded in the store), malformed CSV/JSON rows kept in CORRUPT, and
    each row's file."""
    schema = spec.schema_ or store.meta(SCHEMA_KEY.format(spec.name))
    fmt = spec.format or "json"
    options = {"maxFilesPerTrigger": DEFAULT_MAX_FILES, **spec.options}
    if fmt == "parquet":  # a corrupt file is skipped, then sent to the dead letters by name
        options = {"ignoreCorruptFiles": "true", **options}
    if schema is None:
        schema = infer_schema(spark, spec, options)
        store.set_meta(SCHEMA_KEY.format(spec.name), schema)
    if fmt in ("csv", "json") and CORRUPT not in schema:
        schema = f"{schema}, {CORRUPT} STRING"
        options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT, **options}
    reader = spark.readStream.format(fmt).schema(schema).options(**options)
    frame = reader.load(str(Path(spec.path or "").resolve()))
    return frame.selectExpr("*", f"_metadata.file_path AS {FILE_COL}")


def infer_schema(spark: Any, spec: SourceSpec, options: dict[str, str]) -> str:
    """The schema Spark infers from the files in the source directory now, as DDL."""
    folder = Path(spec.path or "")
    if not any(p.is_file() for p in folder.iterdir()):
        raise SourceError(
            f"source {spec.name!r}: no `schema` given and no file in {folder} to infer it from"
        )
    static = {k: v for k, v in options.items() if k != "maxFilesPerTrigger"}
    inferred = spark.read.format(spec.format).options(**static).load(str(folder.resolve()))
    return inferred.schema.toDDL()
