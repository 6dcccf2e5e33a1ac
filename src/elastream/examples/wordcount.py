"""Word count on *The Great Gatsby* (Caladrius Section V): a sentence source, a splitter that emits
one event per word keyed by the word, and a counter behind a key grouping.

The source reads the book's lines as sentences from `text/great_gatsby.txt` under the data folder
(`ELASTREAM_DATA_DIR`, else `../shared/data` next to the working directory or the repository);
without it, seeded synthetic sentences of 4-12 words stand in (the same schema)."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from elastream.model.events import Emit, Event

BOOK = Path("text") / "great_gatsby.txt"
FALLBACK_SENTENCES = 2_000


def book_path() -> Path | None:
    """The book under the data folder, if there is one."""
    roots = [os.environ.get("ELASTREAM_DATA_DIR")]
    roots += [str(base / ".." / "shared" / "data") for base in (Path.cwd(), _repo_root())]
    for root in roots:
        if root and (Path(root) / BOOK).is_file():
            return (Path(root) / BOOK).resolve()
    return None


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[3]


@cache
def sentences() -> tuple[str, ...]:
    """The book's non-empty lines, or the synthetic stand-in."""
    path = book_path()
    if path is not None:
        lines = path.read_text(encoding="utf-8").splitlines()
        return tuple(line.strip() for line in lines if line.split())
    rng = random.Random(1925)
    vocabulary = [f"w{k}" for k in range(500)]
    return tuple(
        " ".join(rng.choice(vocabulary) for _ in range(rng.randint(4, 12)))
        for _ in range(FALLBACK_SENTENCES)
    )


def words_per_sentence() -> float:
    """The mean number of words per sentence, counted directly: the splitter's α should be it."""
    lines = sentences()
    return sum(len(line.split()) for line in lines) / len(lines)


def sentence(index: int, rng: random.Random) -> tuple[str, dict[str, str]]:
    """Source: sentence number `index` of the book (cycling), keyed by its position."""
    lines = sentences()
    return f"s{index % len(lines)}", {"line": lines[index % len(lines)]}


def split(events: list[Event], cpu_ms: float = 0.0) -> Iterable[Emit]:
    """Splitter: one output per word, keyed by the word (for the counter's key grouping); with
    `cpu_ms` > 0 it first burns that much CPU time per sentence (the CPU-bound variant)."""
    if cpu_ms < 0:
        raise ValueError(f"splitter: cpu_ms must be ≥ 0, got {cpu_ms}")
    if cpu_ms:
        burn_cpu(len(events) * cpu_ms / 1000.0)
    return [e.emit({"w": word}, key=word) for e in events for word in e.payload["line"].split()]


def burn_cpu(seconds: float) -> int:
    """Busy work until this process has used `seconds` of CPU time (not wall time: on a shared
    core the same work takes longer); returns the loop count."""
    end = time.process_time() + seconds
    spins, acc = 0, 0
    while time.process_time() < end:
        for k in range(200):
            acc = (acc * 31 + k) % 1_000_003
        spins += 1
    return spins


def count(events: list[Event]) -> Iterable[Emit]:
    """Counter: counts the words of its batch and emits nothing (the topology's end): its
    processing rate is the topology's output throughput, as in Caladrius V-D."""
    counts: dict[str, int] = {}
    for e in events:
        counts[e.payload["w"]] = counts.get(e.payload["w"], 0) + 1
    return []
