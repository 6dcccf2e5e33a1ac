"""A user's Redis server, as a redis source or sink reaches it: a client (decoded strings) and the
start-up check that fails at once, in one line, when the server does not answer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from elastream.base.extras import require
from elastream.runtime.spark.admission import SourceError

if TYPE_CHECKING:  # redis is an extra: imported where a redis source or sink needs it
    import redis


REDIS_CONNECT_S = 2.0  # a start-up check's connection timeout, s


def redis_client(url: str, timeout_s: float | None = None) -> redis.Redis:
    """A client of the Redis server at `url` (decoded strings)."""
    import redis

    return redis.Redis.from_url(
        url, decode_responses=True, socket_connect_timeout=timeout_s, socket_timeout=timeout_s
    )


def check_redis(url: str, what: str) -> None:
    """Fail at once, in one line naming `what`, when the Redis server at `url` does not answer
    (or the redis extra is not installed)."""
    redis = require("redis", extra="redis", feature=what)
    try:
        redis_client(url, REDIS_CONNECT_S).ping()
    except (redis.RedisError, OSError, ValueError) as exc:
        raise SourceError(f"{what}: Redis at {url} is unreachable ({exc})") from None
