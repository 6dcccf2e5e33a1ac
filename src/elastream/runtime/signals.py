"""A graceful stop on SIGINT or SIGTERM: the first asks the engine to stop, a second ends it."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from elastream.control.features import GracefulStop, feature

SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stop_on_signals(engine: object, drain_s: float) -> Iterator[None]:
    """While the block runs, the first SIGINT or SIGTERM calls `engine.request_stop()` (the
    sources stop reading, the queues drain within `drain_s`, the outputs are written, exit 0);
    a second calls `engine.abort()` and raises KeyboardInterrupt (the run stops at once; `--resume`
    still carries on; the command line exits 130).
    Nothing is installed for an engine without the `GracefulStop` feature (the simulator ends by
    itself) or outside the main thread (Python delivers signals there only)."""
    stoppable = feature(engine, GracefulStop)
    if stoppable is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def handle(signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        received.append(signum)
        if len(received) > 1:
            stoppable.abort()
            raise KeyboardInterrupt(f"{name} received twice: stopping at once")
        print(
            f"elastream: {name} received: the sources stop reading and the queues drain (up to "
            f"{drain_s:g} s); send it again to stop at once",
            file=sys.stderr,
            flush=True,
        )
        stoppable.request_stop()

    previous = {sig: signal.signal(sig, handle) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
