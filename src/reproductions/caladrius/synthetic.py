"""A seeded synthetic history of the word-count topology (Caladrius Fig. 1) with known truths."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from elastream.history.rows import HistoryRow, backpressure


@dataclass(frozen=True)
class OperatorTruth:
    """What the synthetic replicas really do: SP events/s each, α outputs per input, ψ, E[S]."""

    sp: float
    alpha: float
    psi: float
    service_time: float
    stream: str | None


WORDCOUNT = {
    "spout": OperatorTruth(sp=1e9, alpha=1.0, psi=0.0, service_time=1e-6, stream="sentences"),
    "splitter": OperatorTruth(sp=100.0, alpha=7.6, psi=0.008, service_time=0.009, stream="words"),
    "counter": OperatorTruth(sp=900.0, alpha=0.0, psi=0.001, service_time=0.001, stream=None),
}
WORDCOUNT_GRAPH = {
    "components": ["spout", "splitter", "counter"],
    "edges": [
        {"source": "spout", "target": "splitter", "grouping": "shuffle", "stream": "sentences"},
        {"source": "splitter", "target": "counter", "grouping": "key_hash", "stream": "words"},
    ],
}


def wordcount_history(
    run_id: str,
    rates: Sequence[float],
    parallelism: dict[str, int],
    interval_s: float = 60.0,
    noise: float = 0.01,
    seed: int = 0,
    pipeline: str = "wordcount",
) -> list[HistoryRow]:
    """One row per interval and replica: the spout offers `rates[k]`, shuffle to the splitter,
    key grouping (even keys) to the counter; each replica admits what is offered below its SP
    and SP·(1 + noise·N(0,1)) above it."""
    rng = np.random.default_rng(seed)
    rows: list[HistoryRow] = []
    queues: dict[tuple[str, int], float] = {}
    for k, rate in enumerate(rates):
        offered = float(rate)
        for op in ("spout", "splitter", "counter"):
            truth, p = WORDCOUNT[op], parallelism[op]
            admitted_total = 0.0
            for r in range(p):
                share = offered / p
                jitter = 1.0 + noise * float(rng.standard_normal())
                admitted = share if share < truth.sp else min(share, truth.sp * jitter)
                before = queues.get((op, r), 0.0)
                after = before + (share - admitted) * interval_s
                queues[(op, r)] = after
                rows.append(
                    HistoryRow(
                        run_id=run_id,
                        pipeline=pipeline,
                        operator=op,
                        replica=r,
                        parallelism=p,
                        t=k * interval_s,
                        interval_s=interval_s,
                        source_rate=share,
                        input_rate=admitted,
                        output_rates={truth.stream: truth.alpha * admitted} if truth.stream else {},
                        busy=admitted * truth.service_time,
                        cpu=admitted * truth.psi,
                        queue_length=after,
                        backpressure=backpressure(admitted < share * 0.98, before, after),
                        service_time_var=(0.5 * truth.service_time) ** 2,
                    )
                )
                admitted_total += admitted
            offered = truth.alpha * admitted_total if truth.stream else 0.0
    return rows
