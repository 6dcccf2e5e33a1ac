"""Bearer-token protection of the REST service: every request must carry the token (a 401
otherwise) whenever one is set; a non-loopback address without one is refused at start."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from elastream.base.auth import authorized, check_bind

TOKEN_ENV = "ELASTREAM_SERVICE_TOKEN"


def service_token(token_file: Path | None) -> str | None:
    """The token from `token_file` (first line), else from $ELASTREAM_SERVICE_TOKEN, else None."""
    if token_file is not None:
        if not token_file.is_file():
            raise FileNotFoundError(f"--token-file: no such file {token_file}")
        token = token_file.read_text().strip()
        if not token:
            raise ValueError(f"--token-file {token_file}: the file is empty")
        return token
    return os.environ.get(TOKEN_ENV) or None


def protect(app: FastAPI, host: str, token: str | None) -> FastAPI:
    """`app` answering 401 to any request without `token` (when set); refuses a non-loopback
    `host` without a token."""
    check_bind(host, token, "the REST service", f"--token-file or ${TOKEN_ENV}")
    if token is None:
        return app

    @app.middleware("http")
    async def require_token(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        if not authorized(request.headers.get("authorization"), token):
            return JSONResponse(
                {"detail": "bearer token required"},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        return await call_next(request)

    return app
