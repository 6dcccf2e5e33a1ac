"""`elastream whatif PIPELINE`: predict a pipeline at a proposed parallelism and rate."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from elastream.cli._common import add_history_option
from elastream.service.schemas import ForecastSpec, PredictionRequest, PredictionResult


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Fit the Caladrius models from the metrics history and predict the "
        "pipeline at --parallelism and --rate (or at the forecast's peak upper bound)."
    )
    parser.add_argument(
        "graph", type=Path, help="pipeline YAML, or a graph YAML (name, components, edges)"
    )
    add_history_option(parser)
    parser.add_argument(
        "--parallelism", default="", help="op=3,op2=2 (others keep their last measured one)"
    )
    parser.add_argument("--rate", type=float, help="source rate t_0, events/s")
    parser.add_argument("--forecast-model", help="predict at this forecaster's peak instead")
    parser.add_argument("--horizon", type=float, default=3600.0, help="forecast horizon, s")
    parser.add_argument("--runs", help="comma-separated run ids to fit from (default: all)")
    parser.add_argument("--window", type=float, help="use the last S seconds of each run")
    parser.add_argument("--cores", type=float, help="host cores (default: unbounded)")
    parser.add_argument(
        "--headroom", type=float, default=0.1, help="Eq. 14: high risk above (1-h)·t'_0"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=handle)


def parse_parallelism(text: str) -> dict[str, int]:
    """`op=3,op2=2` → {"op": 3, "op2": 2}; errors name the bad item."""
    result: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or not name or not value.strip().isdigit():
            raise ValueError(f"--parallelism: expected op=N, got {item!r}")
        result[name.strip()] = int(value)
    return result


def format_result(res: PredictionResult) -> str:
    def num(x: float | None, fmt: str = ".1f") -> str:
        return "-" if x is None else format(x, fmt)

    lines = [
        f"{'component':<12} {'p':>3} {'source/s':>10} {'input/s':>10} {'output/s':>10} "
        f"{'SP/s':>10} {'risk':>7} {'cpu':>6} {'latency ms':>10}"
    ]
    for c in res.components:
        latency = None if c.latency_s is None else 1000 * c.latency_s
        lines.append(
            f"{c.name:<12} {c.parallelism:>3} {c.source_rate:>10.1f} {c.input_rate:>10.1f} "
            f"{sum(c.output_rates.values()):>10.1f} {num(c.saturation_point):>10} {c.risk:>7} "
            f"{num(c.cpu, '.2f'):>6} {num(latency, '.2f'):>10}"
        )
    latency = None if res.latency_s is None else 1000 * res.latency_s
    lines += [
        f"source rate t_0 {res.source_rate:.1f}/s, saturation point t'_0 "
        f"{num(res.saturation_point)}/s (Eq. 13), backpressure risk {res.risk} (Eq. 14), "
        f"bottleneck {res.bottleneck or '-'}",
        f"critical path {' -> '.join(res.critical_path)}: output {res.critical_path_output:.1f}/s"
        f" (Eq. 12); end-to-end latency {num(latency, '.2f')} ms; CPU {num(res.cpu, '.2f')} cores",
    ]
    return "\n".join(lines)


def handle(args: argparse.Namespace) -> int:
    from elastream.history import HistoryStore
    from elastream.service.graphs import load_graph_yaml
    from elastream.service.operations import Modeller

    if (args.rate is None) == (args.forecast_model is None):
        raise ValueError("give exactly one of --rate and --forecast-model")
    if not args.history.is_file():
        raise FileNotFoundError(f"--history: no such file {args.history}")
    graph = load_graph_yaml(args.graph)
    request = PredictionRequest(
        pipeline=graph.name,
        run_ids=args.runs.split(",") if args.runs else None,
        history_s=args.window,
        parallelism=parse_parallelism(args.parallelism),
        source_rate=args.rate,
        forecast=ForecastSpec(model=args.forecast_model, horizon_s=args.horizon)
        if args.forecast_model
        else None,
        cores=args.cores,
        headroom=args.headroom,
    )
    with HistoryStore(args.history) as store:
        result = Modeller(store, graphs=lambda _: graph).predict(request)
    print(json.dumps(result.model_dump(), indent=2) if args.json else format_result(result))
    return 0
