"""The tests' redis-server (`LocalRedis`: free port, own folder, AOF with `appendfsync always`),
skipped without the binary, except under CI where that is a failure."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from elastream.runtime.queues.redis_server import SERVER, LocalRedis

__all__ = ["LocalRedis", "local_redis", "require_redis_server"]


def require_redis_server() -> None:
    """Skip without redis-server, except under CI (CI=true, or ELASTREAM_REQUIRE_REDIS=1 as
    .ci/run sets), where that is a failure."""
    if shutil.which(SERVER) is None:
        message = f"{SERVER} is not on PATH (Debian package redis-server; .ci/run installs it)"
        required = os.environ.get("ELASTREAM_REQUIRE_REDIS") == "1"
        if required or os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)


def local_redis(folder: Path, password: str | None = None) -> LocalRedis:
    """A (not yet started) redis-server for this test, in `folder`."""
    require_redis_server()
    return LocalRedis(folder, password=password)
