"""The one stop path's Python side, without Spark (tests/spark/test_first_hour.py runs it on
Spark, the signals sent to a real run's process group): the first SIGINT or SIGTERM asks for
a graceful stop, a second aborts and raises KeyboardInterrupt (exit 130 on the command line),
and PySpark's SIGINT handler does not replace ours."""

from __future__ import annotations

import os
import signal

import pytest

from elastream.control.features import GracefulStop
from elastream.runtime.signals import stop_on_signals


class Stoppable:
    """An engine that only records the stop requests it gets."""

    features = frozenset({GracefulStop})

    def __init__(self) -> None:
        self.calls: list[str] = []

    def request_stop(self) -> None:
        self.calls.append("request_stop")

    def abort(self) -> None:
        self.calls.append("abort")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_the_first_signal_asks_to_stop_and_a_second_aborts(sig, capsys):
    engine = Stoppable()
    before = signal.getsignal(sig)
    with pytest.raises(KeyboardInterrupt, match="received twice"), stop_on_signals(engine, 60):
        os.kill(os.getpid(), sig)
        assert engine.calls == ["request_stop"]
        assert f"{sig.name} received" in capsys.readouterr().err
        os.kill(os.getpid(), sig)
    assert engine.calls == ["request_stop", "abort"]
    assert signal.getsignal(sig) is before  # put back after the run


def test_a_spark_context_made_here_keeps_our_sigint_handler():
    """What `spark_session` does around the SparkContext's making (which installs PySpark's
    handler: cancel every job, raise KeyboardInterrupt) is undone."""
    from elastream.runtime.spark.session import _sigint_kept

    def ours(signum, frame):
        pass

    before = signal.signal(signal.SIGINT, ours)
    try:
        with _sigint_kept():
            signal.signal(signal.SIGINT, signal.default_int_handler)  # as pyspark's context does
        assert signal.getsignal(signal.SIGINT) is ours
    finally:
        signal.signal(signal.SIGINT, before)
