"""Profiling pass: run each operator's real function on sample events to get its output ratios
per stream, its filter and failure shares, its CPU time per event and the keys it sees."""

from __future__ import annotations

import cProfile
import gc
import math
import random
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from elastream.model.events import Event, OutcomeKind
from elastream.model.pipeline import OperatorSpec, Pipeline, load_callable
from elastream.model.state import KeyedState
from elastream.runtime.operators import (
    OUT_PLACEHOLDER,
    OperatorContext,
    apply_operator,
    events_batch,
)
from elastream.runtime.sim.settings import SimSettings, SimSettingsError

SAMPLE_BATCH = 200  # events per call of the operator function during profiling
OVERRIDE_DENOMINATOR = 1_000_000  # resolution of ratios given in SimSettings.selectivity
FILTERED = "filtered"
FAILED = "failed"
STREAM = "stream"


class SimProfileError(ValueError):
    """The profiling pass could not characterise an operator; the message names it."""


@dataclass(frozen=True, slots=True)
class Channel:
    """Where a share of an operator's processed events goes: a stream, filtered or failed.

    The share is `share` over the profile's denominator T: outputs (or filtered or failed
    inputs) per processed input. In a partition (`unit`) the shares add up to T."""

    kind: str  # STREAM, FILTERED or FAILED
    stream: str
    share: int


@dataclass(frozen=True, slots=True)
class OperatorProfile:
    """What the simulator needs to know about one operator's function."""

    name: str
    service_time_s: float  # per-event execution time on a replica of speed 1
    cpu_s: float  # CPU time per event, modelled or measured (0 when not counted)
    sample_inputs: int
    denominator: int
    channels: tuple[Channel, ...]
    unit: bool  # every input gave at most one output (channels partition the inputs exactly)
    weight_in: float  # source events represented by one input event (1 without fan-out)
    stream_weights: tuple[tuple[str, float], ...]  # the same for one output copy per stream
    keys: tuple[str, ...]  # keys of the sampled inputs (key_hash split)

    def ratio(self, kind: str, stream: str = "") -> float:
        """Outputs (or filtered/failed events) per processed input."""
        total = sum(c.share for c in self.channels if c.kind == kind and c.stream == stream)
        return total / self.denominator

    def stream_weight(self, stream: str) -> float:
        return dict(self.stream_weights).get(stream, self.weight_in)


@dataclass(frozen=True, slots=True)
class PipelineProfile:
    operators: tuple[OperatorProfile, ...]
    source_weights: tuple[tuple[str, float], ...]  # weight of one copy of a source event

    def op(self, name: str) -> OperatorProfile:
        for profile in self.operators:
            if profile.name == name:
                return profile
        raise KeyError(name)


@dataclass
class _Tally:
    """Counts gathered for one operator during the sample pass."""

    inputs: int = 0
    filtered: int = 0
    failed: int = 0
    max_outputs: int = 0
    cpu_s: float = 0.0  # thread CPU time (cpu_model clock)
    calls: int = 0  # interpreter calls (cpu_model calls, Eq. C1)
    weight_in: float = 0.0
    error: str = ""

    def __post_init__(self) -> None:
        self.outputs: dict[str, int] = {}
        self.copy_weight: dict[str, float] = {}
        self.keys: list[str] = []


_CACHE: dict[tuple[str, int, int, str], dict[str, _Tally]] = {}
_CACHE_SIZE = 16


class _CallMeter:
    """Counts the interpreter calls (Python functions, and C functions called from Python) made
    between start() and stop(): the work measure of Eq. C1, the same on every run of the same
    code on the same events (cProfile counts them in C; its timings are not used)."""

    def __init__(self, counting: bool) -> None:
        self.profiler = cProfile.Profile(builtins=True) if counting else None
        self.stops = 0

    def start(self) -> None:
        if self.profiler is not None:
            self.profiler.enable()

    def stop(self) -> None:
        if self.profiler is not None:
            self.profiler.disable()
            self.stops += 1

    def calls(self) -> int:
        """Calls counted so far, less the profiler's own `disable` (counted once per stop)."""
        if self.profiler is None:
            return 0
        return sum(entry.callcount for entry in self.profiler.getstats()) - self.stops


@contextmanager
def _counted(meter: _CallMeter) -> Iterator[None]:
    """Around a counted pass: no garbage collection inside it (a collection runs finalizers at
    moments that depend on the whole process's history, and their calls would be counted), and
    the meter stopped after it even when an operator raised. A meter that counts nothing: as is."""
    if meter.profiler is None:
        yield
        return
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        meter.profiler.disable()
        if enabled:
            gc.enable()


def _params(spec: OperatorSpec, out_dir: str) -> dict[str, Any]:
    return {
        k: v.replace(OUT_PLACEHOLDER, out_dir) if isinstance(v, str) else v
        for k, v in spec.params.items()
    }


def _source_events(pipeline: Pipeline, n: int, seed: int) -> dict[str, list[tuple[Event, float]]]:
    """The first `n` events of every source, made as the feeder makes them, sent to its targets."""
    inbox: dict[str, list[tuple[Event, float]]] = {}
    for src in pipeline.sources:
        roots = pipeline.source_roots(src.name, np.arange(n, dtype=np.int64)).tolist()
        generator = load_callable(src.import_path or "", f"source {src.name!r} generator")
        rng = random.Random(f"{seed}-{src.name}")
        targets = pipeline.successors(src.name)
        weight = 1.0 / len(targets)
        for i in range(n):
            key, payload = generator(i, rng)
            event = Event(roots[i], str(key), float(i), payload)
            for target in targets:
                inbox.setdefault(target, []).append((event, weight))
    return inbox


def _run_operator(
    ctx: OperatorContext, inputs: list[tuple[Event, float]], tally: _Tally, meter: _CallMeter
) -> list[tuple[str, Event, float]]:
    """Apply the function batch by batch, timing its CPU and counting its calls (`meter`), and
    tally the fate of every input."""
    deliveries: list[tuple[str, Event, float]] = []
    committed: dict[str, bytes] = {}  # a stateful operator's state over the sample
    for start in range(0, len(inputs), SAMPLE_BATCH):
        chunk = inputs[start : start + SAMPLE_BATCH]
        began = time.thread_time()
        meter.start()
        state = _chunk_state(ctx, committed, [e for e, _ in chunk])
        batch = events_batch([e for e, _ in chunk])
        applied = apply_operator(ctx, batch, state)
        outcomes, errors = applied.outcomes(batch), list(applied.errors.values())
        if state is not None:
            for write in state.writes():
                _apply_write(committed, write.key, write.value)
        meter.stop()
        tally.cpu_s += time.thread_time() - began
        if errors and not tally.error:
            tally.error = errors[0]
        for (_, w), outcome in zip(chunk, outcomes, strict=True):
            if outcome.kind is OutcomeKind.ERROR:
                tally.failed += 1
                continue
            if not outcome.outputs:
                tally.filtered += 1
                continue
            children = {child.id for _, child in outcome.outputs}
            tally.max_outputs = max(tally.max_outputs, len(children))
            share = w / len(outcome.outputs)  # every copy of every output carries a share
            for target, child in outcome.outputs:
                deliveries.append((target, child, share))
            for child_id in children:
                stream = _stream_of(ctx, outcome.outputs, child_id)
                tally.outputs[stream] = tally.outputs.get(stream, 0) + 1
                tally.copy_weight[stream] = tally.copy_weight.get(stream, 0.0) + share
    return deliveries


def _chunk_state(
    ctx: OperatorContext, committed: dict[str, bytes], events: list[Event]
) -> KeyedState | None:
    """A stateful operator's state handle for a sample chunk, over the sample's state so far."""
    if ctx.spec.stateless:
        return None
    keys = {e.key for e in events}
    known = {k: committed[k] for k in keys if k in committed}
    # the sample is in source order: every event time has passed (a held event fires at once)
    return KeyedState(ctx.spec.name, ctx.spec.key_groups, keys, known, watermark=math.inf)


def _apply_write(committed: dict[str, bytes], key: str, value: bytes | None) -> None:
    if value is None:
        committed.pop(key, None)
    else:
        committed[key] = value


def _stream_of(ctx: OperatorContext, outputs: tuple[tuple[str, Event], ...], child: int) -> str:
    """The output stream a child went to: the stream whose targets are exactly its targets."""
    targets = tuple(t for t, c in outputs if c.id == child)
    for stream, routed in ctx.routes.items():
        if routed == targets:
            return stream
    raise SimProfileError(f"operator {ctx.spec.name!r}: cannot tell the stream of output {child}")


def _measure(pipeline: Pipeline, n: int, seed: int, cpu: str) -> dict[str, _Tally]:
    """The sample pass. `cpu`: "calls" counts each function's interpreter calls (Eq. C1), on a
    second pass over the same events so that what a first call does once per process (imports,
    compiled patterns, caches) is never counted; "clock" times the thread's CPU; "none"
    neither."""
    inbox = _source_events(pipeline, n, seed)
    tallies: dict[str, _Tally] = {}
    with tempfile.TemporaryDirectory(prefix="elastream-sim-") as out_dir:
        for name in pipeline.topological_order:
            spec = pipeline.operator(name)
            function = load_callable(spec.function, f"operator {name!r} function")
            ctx = OperatorContext(
                spec, function, _params(spec, out_dir), pipeline.routes(name), None
            )
            inputs = inbox.pop(name, [])
            tally = tallies[name] = _Tally(inputs=len(inputs))
            tally.weight_in = sum(w for _, w in inputs)
            tally.keys = [e.key for e, _ in inputs]
            meter = _CallMeter(counting=cpu == "calls")
            if meter.profiler is not None:
                _run_operator(ctx, inputs, _Tally(), _CallMeter(counting=False))  # warm-up
            with _counted(meter):
                deliveries = _run_operator(ctx, inputs, tally, meter)
            for target, child, weight in deliveries:
                inbox.setdefault(target, []).append((child, weight))
            if inputs and tally.failed == len(inputs):
                raise SimProfileError(
                    f"operator {name!r} failed on all {len(inputs)} sample events: {tally.error}"
                )
            tally.calls = meter.calls()
            if cpu != "clock":
                tally.cpu_s = 0.0
    return tallies


def _channels(streams: tuple[str, ...], tally: _Tally) -> tuple[int, tuple[Channel, ...], bool]:
    """Channels from sampled counts over T = inputs: exact integer shares of the sample."""
    if tally.inputs == 0:  # never reached in the sample: pass everything on, split evenly
        return _unit_channels([(STREAM, s, 1) for s in streams], 0, 0)
    parts = [(STREAM, s, tally.outputs.get(s, 0)) for s in streams]
    if tally.max_outputs <= 1:
        return _unit_channels(parts, tally.filtered, tally.failed)
    fixed = [Channel(FILTERED, "", tally.filtered), Channel(FAILED, "", tally.failed)]
    return tally.inputs, (*fixed, *(Channel(k, s, n) for k, s, n in parts)), False


def _unit_channels(
    parts: list[tuple[str, str, int]], filtered: int, failed: int
) -> tuple[int, tuple[Channel, ...], bool]:
    """Shares that add up to T: every input lands in exactly one channel."""
    channels = tuple(
        Channel(kind, stream, n)
        for kind, stream, n in [(FILTERED, "", filtered), (FAILED, "", failed), *parts]
    )
    return sum(c.share for c in channels), channels, True


def _override_channels(
    name: str, streams: tuple[str, ...], ratios: Mapping[str, float]
) -> tuple[int, tuple[Channel, ...], bool]:
    """Channels from SimSettings.selectivity: a partition when the ratios sum to <= 1 (the rest
    is filtered), otherwise independent per-stream ratios (fan-out, nothing filtered)."""
    unknown = sorted(set(ratios) - set(streams))
    if unknown:
        raise SimSettingsError(
            f"sim setting selectivity.{name}: unknown stream(s) {', '.join(unknown)} "
            f"(streams of {name!r}: {', '.join(streams)})"
        )
    t = OVERRIDE_DENOMINATOR
    shares = {s: int(Fraction(ratios.get(s, 0.0)).limit_denominator(t) * t) for s in streams}
    if sum(shares.values()) <= t:
        parts = [(STREAM, s, shares[s]) for s in streams]
        return _unit_channels(parts, t - sum(shares.values()), 0)
    channels = (Channel(FILTERED, "", 0), *(Channel(STREAM, s, shares[s]) for s in streams))
    return t, channels, False


def _et_s(spec: OperatorSpec, cpu_s: float, settings: SimSettings) -> float:
    """Per-event time: sim setting et_ms, else service_time_ms + measured CPU, else spec et_ms."""
    if spec.name in settings.et_ms:
        return settings.et_ms[spec.name] / 1000.0
    et = spec.work_s(cpu_s)
    if et is None:
        raise SimProfileError(
            f"operator {spec.name!r}: per-event time is 0 (no service_time_ms, no et_ms and no "
            f"measured CPU time); set one of them or sim setting et_ms.{spec.name}"
        )
    return et


def _override_weights(
    w_in: float,
    denominator: int,
    channels: tuple[Channel, ...],
    unit: bool,
    routes: dict[str, tuple[str, ...]],
) -> tuple[tuple[str, float], ...]:
    """Weight of one output copy when the ratios are given. Partition: an input's one output is
    shared by the stream's targets. Fan-out: the input's weight is shared by all the copies one
    input makes on average (outputs per input x targets of the stream)."""
    if unit:
        return tuple((s, w_in / len(targets)) for s, targets in routes.items())
    copies = sum(c.share / denominator * len(routes[c.stream]) for c in channels if c.stream)
    return tuple((s, w_in / copies if copies > 0 else w_in) for s in routes)


def _operator_profile(
    spec: OperatorSpec, routes: dict[str, tuple[str, ...]], tally: _Tally, settings: SimSettings
) -> OperatorProfile:
    streams = tuple(routes)
    # Eq. C1: CPU time per event = calls per event x cpu_ns_per_call (or the measured time)
    work = tally.cpu_s + tally.calls * settings.cpu_ns_per_call * 1e-9
    cpu = work / tally.inputs if tally.inputs else 0.0
    w_in = tally.weight_in / tally.inputs if tally.inputs else 1.0
    if spec.name in settings.selectivity:
        denominator, channels, unit = _override_channels(
            spec.name, streams, settings.selectivity[spec.name]
        )
        weights = _override_weights(w_in, denominator, channels, unit, routes)
    else:
        denominator, channels, unit = _channels(streams, tally)
        weights = tuple(
            (s, tally.copy_weight[s] / tally.outputs[s]) for s in streams if tally.outputs.get(s)
        )
    return OperatorProfile(
        spec.name,
        _et_s(spec, cpu, settings),
        cpu,
        tally.inputs,
        denominator,
        channels,
        unit,
        w_in,
        weights,
        tuple(tally.keys),
    )


def profile_pipeline(pipeline: Pipeline, settings: SimSettings, seed: int) -> PipelineProfile:
    """Profile every operator (the sample pass is cached per pipeline, size, seed and CPU
    measure)."""
    settings.check_operators(pipeline.operator_names)
    cpu = settings.cpu_model if settings.measure_cpu else "none"
    key = (pipeline.model_dump_json(), settings.sample_events, seed, cpu)
    tallies = _CACHE.get(key)
    if tallies is None:
        tallies = _measure(pipeline, settings.sample_events, seed, cpu)
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = tallies
    operators = tuple(
        _operator_profile(pipeline.operator(n), pipeline.routes(n), tallies[n], settings)
        for n in pipeline.topological_order
    )
    sources = tuple((s, 1.0 / len(pipeline.successors(s))) for s in pipeline.source_names)
    return PipelineProfile(operators, sources)
