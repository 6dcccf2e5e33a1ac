"""A Spark run's queue store: where it is, and how a run (new or resumed) prepares it."""

from __future__ import annotations

import shutil
from pathlib import Path

from elastream.config import RunConfig
from elastream.model.pipeline import Pipeline
from elastream.runtime.queues import QueueStore, backend_name, open_store, reset_store, with_prefix
from elastream.runtime.spark.queries import RuntimeFailure
from elastream.runtime.spark.watermark import END_OF_INPUT, reopen_after_flush

DB_NAME = "queues.db"


def store_address(config: RunConfig) -> str:
    """Where the run's queues are: `config.queues` (a Redis URL gets a key prefix of its own per
    output directory unless it names one), by default queues.db in the output directory."""
    out = Path(config.out).resolve()
    if config.queues is None:
        return str(out / DB_NAME)
    if backend_name(config.queues) == "redis":
        return with_prefix(config.queues, f"elastream:{out}")
    return str(Path(config.queues).resolve())


def prepare_store(
    pipeline: Pipeline, config: RunConfig, queues: str, checkpoints: Path, resume: bool
) -> QueueStore:
    """The run's store, opened: a new run starts from an empty store and no checkpoints; the
    run's settings recorded, a queue per operator and sink created (a resumed run keeps its)."""
    out = Path(config.out)
    if not resume:
        shutil.rmtree(checkpoints, ignore_errors=True)
        reset_store(queues)
    out.mkdir(parents=True, exist_ok=True)
    store = open_store(queues)
    _check_layout(store, config.spark.layout, resume)
    store.set_meta("out_dir", str(out.resolve()))
    store.set_meta("pipeline", pipeline.model_dump(mode="json", by_alias=True))
    store.set_meta("t_out", config.event_timeout_s)
    store.set_meta("td", config.interval_s)
    reopen_after_flush(store, pipeline)  # a resumed run after its final flush
    store.set_meta(END_OF_INPUT, False)
    for op in pipeline.operators:
        store.create_queue(op.name, config.queue_capacity)
    for sink in pipeline.sinks:
        store.create_queue(sink.name, None, sink=True)
    return store


def _check_layout(store: QueueStore, layout: str, resume: bool) -> None:
    """Record the run's layout; a resumed run must keep it (the checkpoints are per query)."""
    started = store.meta("layout", "operator")
    if resume and started != layout:
        raise RuntimeFailure(
            f"cannot resume with spark.layout {layout!r}: the run was started with "
            f"{started!r} and its checkpoints are of that layout"
        )
    store.set_meta("layout", layout)
