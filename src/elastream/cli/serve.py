"""`elastream serve`: the modelling service (forecasts, what-if predictions) on uvicorn."""

from __future__ import annotations

import argparse
from pathlib import Path

from elastream.base.auth import check_bind
from elastream.base.extras import require
from elastream.cli._common import add_history_option
from elastream.cli._renamed import add_old_option


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    add_history_option(parser)
    parser.add_argument(
        "--token-file",
        type=Path,
        help="file holding the bearer token every request must send (default: "
        "$ELASTREAM_SERVICE_TOKEN); required on any address but loopback",
    )
    parser.add_argument("--graphs", type=Path, help="folder of <pipeline>.yaml graph files")
    parser.add_argument(
        "--job-threads", type=int, default=2, help="threads running modelling jobs (default 2)"
    )
    add_old_option(parser, "--workers", "--job-threads", "job_threads", type=int)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    for module in ("fastapi", "uvicorn"):
        require(module, extra="service", feature="elastream serve")
    from elastream.history import HistoryStore
    from elastream.service.app import create_app
    from elastream.service.graphs import GraphDirectory
    from elastream.service.operations import Modeller
    from elastream.service.planners import PLANNERS
    from elastream.service.security import protect, service_token
    from elastream.service.server import serve

    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port must be in 0..65535, got {args.port}")
    token = service_token(args.token_file)
    check_bind(args.host, token, "the REST service", "--token-file or $ELASTREAM_SERVICE_TOKEN")
    with HistoryStore(args.history) as store:
        modeller = Modeller(store, GraphDirectory(args.graphs))
        app = protect(create_app(modeller, PLANNERS, workers=args.job_threads), args.host, token)
        print(f"history {args.history}; OpenAPI at http://{args.host}:{args.port}/openapi.json")
        serve(app, args.host, args.port)
    return 0
