"""Drives the pipeline's sources: appends generated events to their queues at the trace's rate."""

from __future__ import annotations

import math
import random
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from elastream.model.batch import EventBatch
from elastream.model.endpoints import SourceSpec
from elastream.model.pipeline import Pipeline, load_callable
from elastream.runtime.queues import DataPath, open_store
from elastream.workloads.trace import Trace


class TraceIntegral:
    """∫_0^t rate(s) ds for a step-wise constant trace: the events due by time t. The running
    sums are computed once, not at every feeder tick."""

    def __init__(self, trace: Trace, forever: bool = False) -> None:
        self.trace = trace
        self.forever = forever  # past its end the trace's last rate holds (an unbounded run)
        self.steps = np.concatenate(([0.0], np.cumsum(trace.rates * trace.step_s)))

    def __call__(self, t: float) -> float:
        trace = self.trace
        k = min(int(t // trace.step_s), trace.rates.size)
        if k >= trace.rates.size:
            beyond = t - trace.duration_s if self.forever else 0.0
            return float(self.steps[-1] + trace.rates[-1] * beyond)
        return float(self.steps[k] + trace.rates[k] * (t - k * trace.step_s))


@dataclass
class Feeder:
    """A driver thread that emits, for every generator source, its share of the trace's events
    (the other kinds read the outside world: runtime/spark/ingest.py).

    Each generator source's share is its declared `rate` over the sum of theirs. An event's root
    is its source's position (`Pipeline.source_roots`), so a resumed run that regenerates an index
    appends nothing twice."""

    pipeline: Pipeline
    queues: str  # the queue store's address (`queues.open_store`)
    trace: Trace
    seed: int = 0
    tick_s: float = 0.1
    resume_at: float = 0.0  # trace seconds already fed (resume)
    forever: bool = False  # an unbounded run: the trace's last rate holds until stop()
    done: threading.Event = field(default_factory=threading.Event)
    _stop: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="elastream-feeder", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if hasattr(self, "_thread"):
            self._thread.join(timeout=10)

    def _run(self) -> None:
        try:
            self._feed()
        except BaseException as exc:  # surfaced by the engine at the next collect()
            self.error = exc
        finally:
            self.done.set()

    def _feed(self) -> None:
        store = open_store(self.queues)
        sources = {
            s.name: SourceStream(s, self.pipeline, store, self.seed)
            for s in self.pipeline.generator_sources
        }
        total_rate = sum(s.rate for s in self.pipeline.generator_sources)
        due_by = TraceIntegral(self.trace, self.forever)
        t0 = time.time() - self.resume_at
        end = math.inf if self.forever else self.trace.duration_s
        while not self._stop.is_set():
            elapsed = min(time.time() - t0, end)
            due_total = due_by(elapsed)
            for src in self.pipeline.generator_sources:
                sources[src.name].feed_until(math.floor(due_total * src.rate / total_rate))
            store.set_meta("trace_elapsed", elapsed)
            if elapsed >= end:
                break
            time.sleep(self.tick_s)
        store.close()


class SourceStream:
    """One source's events, numbered from 0, appended a batch at a time to its targets. It goes
    on from what the store says it offered (so a resumed run appends nothing twice)."""

    def __init__(self, spec: SourceSpec, pipeline: Pipeline, store: DataPath, seed: int) -> None:
        self.name = spec.name
        self.pipeline = pipeline
        self.store = store
        self.targets = pipeline.successors(spec.name)
        self.generate = load_callable(spec.import_path or "", f"source {spec.name!r} generator")
        self.rng = random.Random(f"{seed}-{spec.name}")
        self.sent = min(store.produced(t, spec.name) for t in self.targets)

    def feed_until(self, due: int) -> None:
        """Generate and append the events number `sent` .. `due - 1`."""
        if due <= self.sent:
            return
        events = self.columns(self.sent, due, time.time())
        for target in self.targets:
            self.store.append(target, events, self.name, self.sent)
        self.sent = due

    def columns(self, first: int, end: int, now: float) -> EventBatch:
        """Events number `first` .. `end - 1` as one batch: root the source's position, the
        generator's key and payload, timestamp `now`."""
        generate, rng = self.generate, self.rng
        drawn = [generate(index, rng) for index in range(first, end)]
        roots = self.pipeline.source_roots(self.name, np.arange(first, end, dtype=np.int64))
        return EventBatch.of(roots, [str(key) for key, _ in drawn], now, [p for _, p in drawn])
