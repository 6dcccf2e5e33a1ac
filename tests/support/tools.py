"""The outside programs some tests run (redis-server, openssl, a headless browser): a test without
one is skipped, except where CI requires it (CI=true, or the variable scripts/test.sh exports:
ELASTREAM_REQUIRE_REDIS=1 for redis-server and openssl, ELASTREAM_REQUIRE_BROWSER=1 for
chromium), where the missing program fails the test."""

from __future__ import annotations

import os
import shutil

import pytest

REDIS = "ELASTREAM_REQUIRE_REDIS"
BROWSER = "ELASTREAM_REQUIRE_BROWSER"


def required(variable: str) -> bool:
    """This run must not skip for want of the programs `variable` stands for."""
    return os.environ.get(variable) == "1" or os.environ.get("CI", "").lower() == "true"


def require_tool(names: tuple[str, ...], variable: str, package: str) -> str:
    """The path of the first of `names` on PATH; if none is, fail when `variable` requires it,
    else skip, naming the Debian package to install (scripts/services.sh installs it)."""
    for name in names:
        if path := shutil.which(name):
            return path
    message = f"{' or '.join(names)} is not on PATH (Debian package {package}: scripts/services.sh)"
    if required(variable):
        pytest.fail(f"{message}; {variable}=1 or CI=true requires it")
    pytest.skip(message)
