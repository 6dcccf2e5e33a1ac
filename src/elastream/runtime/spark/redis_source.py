"""A redis source: a driver thread reading a Redis stream (XREAD) from a position kept in the queue
store, so that entries read again after a crash add nothing twice."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from elastream.model.batch import payload_table
from elastream.model.endpoints import SourceSpec
from elastream.runtime.queues import ControlTable
from elastream.runtime.spark.admission import Admission, Stopped
from elastream.runtime.spark.redis_endpoint import REDIS_CONNECT_S, redis_client

if TYPE_CHECKING:  # redis is an extra: imported where a redis source or sink needs it
    import redis


REDIS_BLOCK_MS = 500  # XREAD's longest wait for new entries
REDIS_COUNT = 5_000  # entries read at most per XREAD


@dataclass
class RedisReader:
    """A redis source: a driver thread appending the stream's entries (id `source:entry id`,
    payload the entry's fields) to its targets.

    Before each append it records (producer position, entry id it reads after) in the queue
    store. After a crash it reads again from the recorded entry id: the same entries in the same
    order, which the store's position de-duplicates, so each entry is appended exactly once.
    Connection errors (a restarting server) are retried while the run lasts."""

    spec: SourceSpec
    admission: Admission
    error: BaseException | None = None
    lag: int | None = None  # entries added to the stream and not yet appended (last measured)
    _probe: redis.Redis | None = None  # the client `measure_lag` uses

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"elastream-redis-{self.spec.name}")
        self._thread.daemon = True
        self._thread.start()

    def join(self) -> None:
        if hasattr(self, "_thread"):
            self._thread.join(timeout=10)

    @property
    def _key(self) -> str:
        return f"redis_source:{self.spec.name}"

    def _run(self) -> None:
        import redis

        store = self.admission.store
        client = redis_client(self.spec.url or "", 5.0)
        recorded = store.meta(self._key) or {"first": 0, "after": "0-0"}
        first, after = int(recorded["first"]), str(recorded["after"])
        while not self.admission.stop.is_set():
            try:
                first, after = self._step(client, store, first, after)
            except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
                time.sleep(0.5)  # a restarting server: read again from the recorded place
            except Stopped:
                break
            except BaseException as exc:  # surfaced by the engine at the next collect()
                self.error = exc
                break

    def _step(self, client: redis.Redis, store: ControlTable, first: int, after: str) -> tuple:
        reply = client.xread({self.spec.stream: after}, count=REDIS_COUNT, block=REDIS_BLOCK_MS)
        entries = reply[0][1] if reply else []
        if not entries:
            return first, after
        table = payload_table([fields for _, fields in entries])
        self.admission.append_table(first, table)
        last = entries[-1][0]
        store.set_meta(self._key, {"first": first + len(entries), "after": last})
        return first + len(entries), last

    def measure_lag(self) -> int | None:
        """Entries added to the stream and not appended yet, now: XINFO `entries-added` minus
        the source's position in its targets (measured by the caller's thread, so that it is
        current while the reader waits for room). The last value when Redis does not answer."""
        import redis

        if self._probe is None:
            self._probe = redis_client(self.spec.url or "", REDIS_CONNECT_S)
        try:
            stream = self.spec.stream
            info = self._probe.xinfo_stream(stream) if self._probe.exists(stream) else {}
        except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
            return self.lag  # a restarting server: the last known lag
        added = info.get("entries-added", 0)
        self.lag = None if added is None else max(0, int(added) - self.admission.position())
        return self.lag
