"""PySpark's SIGINT handler does not replace a graceful stop's (the handlers themselves:
tests/unit/test_python_api.py; on Spark, the signals sent to a real run's process group:
tests/spark/test_first_hour.py)."""

from __future__ import annotations

import signal


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
