"""Reaching a Redis queue store: its address (`redis[s]://…?prefix=NAME`, with credentials and
TLS), and a client that retries a restarting server and fails at once on bad credentials."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from elastream.base.extras import require
from elastream.base.secrets import redact_url
from elastream.runtime.queues.records import (
    QueueError,
)

if TYPE_CHECKING:
    import redis


log = logging.getLogger(__name__)
SCHEME = "redis"
TLS_SCHEME = "rediss"
DEFAULT_PREFIX = "elastream"
# Connection errors (a restarting or loading server) are retried with a bounded backoff:
# 0.05 s doubling up to 2 s, 30 tries (about a minute), then the error propagates.
RETRY_TRIES = 30
RETRY_BASE_S = 0.05
RETRY_CAP_S = 2.0


@dataclass(frozen=True)
class RedisAddress:
    """A parsed `redis[s]://[USER:PASSWORD@]HOST:PORT/DB?prefix=NAME[&ca=FILE]` store address
    (an ACL user and its password, or `:PASSWORD@` for `requirepass`; `rediss://` for TLS, the
    server's certificate checked against the CA certificate file `ca`, else the system's)."""

    host: str
    port: int
    db: int
    prefix: str
    username: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    tls: bool = False
    ca_file: str | None = None

    @classmethod
    def parse(cls, address: str) -> RedisAddress:
        shown = redact_url(address)  # errors never show the password
        parts = urlsplit(address)
        if parts.scheme not in (SCHEME, TLS_SCHEME) or not parts.hostname:
            raise QueueError(
                f"queue store address {shown!r}: expected redis://HOST:PORT/DB or rediss://…"
            )
        path = parts.path.strip("/") or "0"
        if not path.isdigit():
            raise QueueError(f"queue store address {shown!r}: database {path!r} is no number")
        query = parse_qs(parts.query, keep_blank_values=True)
        prefix = query.get("prefix", [DEFAULT_PREFIX])[0]
        if not prefix:
            raise QueueError(f"queue store address {shown!r}: empty prefix")
        user = unquote(parts.username) if parts.username else None
        password = unquote(parts.password) if parts.password is not None else None
        tls, ca_file = parts.scheme == TLS_SCHEME, query.get("ca", [None])[0]
        if ca_file is not None and not tls:
            raise QueueError(f"queue store address {shown!r}: ca= is for rediss:// (TLS)")
        port = parts.port or 6379
        return cls(parts.hostname, port, int(path), prefix, user, password, tls, ca_file)

    def url(self) -> str:
        """The full address, credentials included (pass it on, never print it: `redacted`)."""
        auth = ""
        if self.username or self.password is not None:
            auth = f"{quote(self.username or '', safe='')}:{quote(self.password or '', safe='')}@"
        query = f"prefix={quote(self.prefix, safe=':/')}"
        if self.ca_file is not None:
            query += f"&ca={quote(self.ca_file, safe='/')}"
        scheme = TLS_SCHEME if self.tls else SCHEME
        return f"{scheme}://{auth}{self.host}:{self.port}/{self.db}?{query}"

    def client_options(self) -> dict[str, Any]:
        """What redis.Redis needs to reach and log in to this address."""
        options: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "db": self.db,
            "username": self.username,
            "password": self.password,
        }
        if self.tls:
            options |= {"ssl": True, "ssl_ca_certs": self.ca_file}
        return options

    def redacted(self) -> str:
        return redact_url(self.url())


def with_prefix(address: str, prefix: str) -> str:
    """`address` namespaced by `prefix`, unless it names a prefix itself."""
    parsed = RedisAddress.parse(address)
    if "prefix=" in urlsplit(address).query:
        return parsed.url()
    return replace(parsed, prefix=prefix).url()


def connect(address: RedisAddress) -> redis.Redis:
    """A client that retries connection errors (a restarting or loading server) with a bounded,
    jittered exponential backoff; every request the store sends is safe to repeat. A wrong or
    missing password fails at once with one line naming the address (without its password)."""
    lib = require("redis", extra="redis", feature="the Redis queue store")
    check_auth(address)
    errors = lib.exceptions
    retry = lib.retry.Retry(
        lib.backoff.ExponentialWithJitterBackoff(cap=RETRY_CAP_S, base=RETRY_BASE_S), RETRY_TRIES
    )
    return lib.Redis(
        **address.client_options(),
        retry=retry,
        retry_on_error=[errors.ConnectionError, errors.TimeoutError, errors.BusyLoadingError],
        socket_connect_timeout=5,
        health_check_interval=30,
    )


def check_auth(address: RedisAddress) -> None:
    """PING once, without retries, so that bad credentials fail here in one line (the retrying
    client would retry an authentication error, a ConnectionError in redis-py, for a minute)."""
    lib = require("redis", extra="redis", feature="the Redis queue store")
    probe = lib.Redis(
        **address.client_options(),
        retry=lib.retry.Retry(lib.backoff.NoBackoff(), 0),
        socket_connect_timeout=5,
    )
    errors = lib.exceptions
    try:
        probe.ping()
    except (errors.AuthenticationError, errors.AuthenticationWrongNumberOfArgsError) as exc:
        raise QueueError(f"Redis at {address.redacted()}: authentication failed ({exc})") from None
    except errors.ConnectionError as exc:
        if address.tls and "SSL" in str(exc):  # an untrusted certificate: retrying cannot help
            raise QueueError(f"Redis at {address.redacted()}: TLS failed ({exc})") from None
        # not reachable yet: the retrying client waits for it
        log.debug("Redis at %s not reachable yet (%s)", address.redacted(), exc)
    finally:
        probe.close()
