"""The README's "Your first pipeline", as a new user meets it: its `myapp.py` and
`pipeline.yaml` taken from README.md's code blocks (not a copy), a few JSON-lines files in
`incoming/`, and the check of what lands in `results/`: one row per word of the input.

Also a script, for CI's check of the installed wheel (scripts/wheel_check.sh), which runs it
with the fresh environment's Python (plain Python and pandas, no elastream):
    python tests/support/first_pipeline.py setup DIR     write the files into DIR
    python tests/support/first_pipeline.py verify DIR    check DIR/results against DIR/incoming
"""

from __future__ import annotations

import collections
import json
import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"```(?:python|yaml)\n# (?P<name>[\w.]+)\n(?P<body>.*?)```", re.DOTALL)
LINES = [
    "the quick brown fox",
    "jumps over the lazy dog",
    "a stream of words and the words of a stream",
]


def readme_files(readme: Path = README) -> dict[str, str]:
    """The files the README's first pipeline names in its blocks' first lines (`# myapp.py`)."""
    found = {m["name"]: f"# {m['name']}\n{m['body']}" for m in BLOCK.finditer(readme.read_text())}
    wanted = {name: found.get(name) for name in ("myapp.py", "pipeline.yaml")}
    missing = [name for name, text in wanted.items() if text is None]
    if missing:
        raise ValueError(f"{readme}: no code block starting with `# {missing[0]}`")
    return {name: text for name, text in wanted.items() if text is not None}


def setup(folder: Path, files: int = 3) -> int:
    """The README's files and `files` JSON-lines files of LINES in `folder/incoming`; returns how
    many words they hold."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in readme_files().items():
        (folder / name).write_text(text)
    incoming = folder / "incoming"
    incoming.mkdir(exist_ok=True)
    for k in range(files):
        rows = [{"text": f"{line} file{k}"} for line in LINES]
        (incoming / f"lines-{k}.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return sum(input_words(folder).values())


def input_words(folder: Path) -> collections.Counter:
    """How often each word occurs in the texts of `folder/incoming` (counted here, apart from
    the pipeline)."""
    words: collections.Counter = collections.Counter()
    for file in sorted((folder / "incoming").glob("*.json")):
        for line in file.read_text().splitlines():
            words.update(json.loads(line)["text"].split())
    return words


def sink_column(results: Path, field: str) -> list:
    """The values of payload field `field` in the Parquet files of a files sink, read with
    pandas: its column, or, when the sink declares no columns, from the payload's JSON text."""
    import pandas as pd

    frame = pd.read_parquet(results)
    if field in frame.columns:
        return list(frame[field])
    return [json.loads(text)[field] for text in frame["payload"]]


def output_words(folder: Path) -> collections.Counter:
    """Rows per word in `folder/results`."""
    return collections.Counter(sink_column(folder / "results", "word"))


def verify(folder: Path) -> str:
    """Raise AssertionError unless `results` holds one row per word of the input."""
    expected, got = input_words(folder), output_words(folder)
    assert got == expected, f"rows per word differ: {dict(got - expected)} {dict(expected - got)}"
    return f"{sum(got.values())} rows, one per word of the input ({len(got)} distinct words)"


if __name__ == "__main__":
    action, where = sys.argv[1], Path(sys.argv[2])
    print(verify(where) if action == "verify" else f"{setup(where)} words in {where}/incoming")
