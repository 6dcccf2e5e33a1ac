"""`elastream cluster up|down|status`: a Spark standalone cluster on this machine."""

from __future__ import annotations

import argparse
from pathlib import Path

from elastream.cli import submit_script
from elastream.runtime.spark.cluster import DEFAULT_STATE


def register(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    up = actions.add_parser("up", help="start a master and N workers; print the master URL")
    up.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    up.add_argument("--cores", type=int, default=1, help="cores per worker (default 1)")
    up.add_argument("--memory", default="1g", help="memory per worker, e.g. 1g (default 1g)")
    up.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for workers")
    up.add_argument(
        "--no-authenticate",
        dest="authenticate",
        action="store_false",
        help="start without Spark's RPC authentication (default: spark.authenticate with a new "
        "shared secret, kept in a 0600 file beside the state file)",
    )
    down = actions.add_parser("down", help="stop exactly the processes `up` started")
    status = actions.add_parser("status", help="the master URL and which processes are alive")
    for action in (up, down, status):
        action.add_argument(
            "--state", type=Path, default=DEFAULT_STATE, help=f"state file ({DEFAULT_STATE})"
        )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from elastream.runtime.spark import cluster

    if args.action == "up":
        state = cluster.up(
            args.workers, args.cores, args.memory, args.state, args.timeout, args.authenticate
        )
        print(f"master {state.master_url} (web UI {state.webui_url}), {state.workers} workers")
        print(f"run a pipeline on it: elastream run PIPELINE --spark-master {state.master_url}")
        if state.auth_file is not None:
            print(f"RPC authentication on: the shared secret is in {state.auth_file} (mode 0600)")
            if args.state != DEFAULT_STATE:  # `run` finds the default state's secret by itself
                print(f"  give it to the run: spark: {{auth_file: {state.auth_file}}}")
            print(
                f"  or: spark-submit --master {state.master_url} --properties-file "
                f"{state.auth_file} {submit_script()} run PIPELINE"
            )
        return 0
    if args.action == "down":
        stopped = cluster.down(args.state)
        print(f"stopped: {', '.join(stopped) if stopped else 'nothing was running'}")
        return 0
    state = cluster.ClusterState.load(args.state)
    print(f"master {state.master_url} (web UI {state.webui_url})")
    if state.auth_file is not None:
        print(f"RPC authentication on (secret in {state.auth_file})")
    for process in state.processes:
        alive = "alive" if cluster.running(process) else "gone"
        print(f"  {process.role:10} pid {process.pid:>7}  {alive}  log {process.log}")
    return 0
