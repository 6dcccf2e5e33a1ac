"""What only the Redis Streams backend has: store addresses and the factory, key prefixes that
keep runs apart in one database, and durability through a killed and restarted redis-server
(AOF, `appendfsync always`)."""

from __future__ import annotations

import signal
import threading
import time

import pytest
from support.queues import alternate, events, make_queues, run_share
from support.redis_server import local_redis

from elastream.runtime.queues import (
    QueueError,
    RedisQueueStore,
    SqliteQueueStore,
    open_store,
    reset_store,
    store_exists,
    with_prefix,
)


@pytest.fixture
def server(tmp_path):
    server = local_redis(tmp_path / "redis")
    server.start()
    yield server
    server.stop()


def test_the_factory_opens_sqlite_for_a_path_and_redis_for_a_url(tmp_path, server):
    sqlite = open_store(str(tmp_path / "q.db"))
    assert isinstance(sqlite, SqliteQueueStore)
    sqlite.close()
    url = with_prefix(server.url, "run-1")
    assert url == f"{server.url}?prefix=run-1"
    assert with_prefix(f"{server.url}?prefix=mine", "run-1") == f"{server.url}?prefix=mine"
    store = open_store(url)
    assert isinstance(store, RedisQueueStore) and not store_exists(url)
    store.set_meta("pipeline", {"name": "p"})
    assert store_exists(url)
    reset_store(url)
    assert not store_exists(url)
    store.close()


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("redis://", "expected redis://HOST:PORT/DB"),
        ("redis://localhost:6379/zero", "database 'zero' is no number"),
        ("redis://localhost:6379/0?prefix=", "empty prefix"),
    ],
)
def test_a_bad_address_is_named(address, problem):
    with pytest.raises(QueueError, match=problem):
        RedisQueueStore(address)


def test_two_prefixes_share_a_database_without_seeing_each_other(server):
    one = make_queues(RedisQueueStore(f"{server.url}?prefix=one"))
    two = make_queues(RedisQueueStore(f"{server.url}?prefix=two"))
    one.append("a", events(5), "src", 0)
    two.append("a", events(2), "src", 0)
    assert (one.latest("a"), two.latest("a")) == (5, 2)
    assert one.clear() > 0
    assert (two.latest("a"), two.audit().events_in) == (2, 2)
    with pytest.raises(QueueError, match="unknown queue 'a'"):
        one.latest("a")


def test_what_was_acknowledged_survives_a_sigkill_of_the_server(server):
    store = make_queues(RedisQueueStore(server.url))
    store.append("a", events(10), "src", 0)
    plan = store.plan_batch("a", 0, 10, 2, alternate)
    assert run_share(store, plan, 0, "b")
    server.kill(signal.SIGKILL)  # appendfsync always: every acknowledged write is on disk
    server.start()
    assert (store.latest("a"), store.latest("b"), store.pending("a")) == (10, 5, 5)
    assert store.plan("a", 0, 10) == plan and store.share_done("a", plan.batch, 0)
    assert not run_share(store, plan, 0, "b")  # a replay after the restart adds nothing
    assert run_share(store, plan, 1, "b")
    audit = store.audit()
    assert (audit.events_in, audit.pending, store.latest("b")) == (10, 10, 10)
    store.close()


def test_requests_wait_for_a_restarting_server(server):
    store = make_queues(RedisQueueStore(server.url))
    store.append("a", events(4), "src", 0)
    server.kill(signal.SIGKILL)
    restart = threading.Timer(1.5, server.start)
    restart.start()
    started = time.monotonic()
    assert store.append("a", events(4, start=4), "src", 4) == (4, 0)  # retried until it is back
    restart.join()
    assert time.monotonic() - started >= 1.0
    assert (store.latest("a"), store.produced("a", "src")) == (8, 8)
    store.close()
