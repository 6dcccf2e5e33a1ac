"""benchmarks/plain_vs_elastream.py without Spark: its input, its row counter over part files
being written, its steady rate, and its check that an output holds every input row once."""

from __future__ import annotations

import importlib.util
import json
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from support.paths import ROOT


def bench():
    spec = importlib.util.spec_from_file_location(
        "plain_vs_elastream", ROOT / "benchmarks/plain_vs_elastream.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses resolve their annotations through it
    spec.loader.exec_module(module)
    return module


def part(folder, name, numbers):
    pq.write_table(pa.table({"n": pa.array(numbers, pa.int64())}), folder / name)


def commit(folder, batch, names):
    """A `_spark_metadata` log file as Spark's file sink writes it: a version line, then one
    JSON line per added file."""
    log = folder / "_spark_metadata"
    log.mkdir(exist_ok=True)
    lines = ["v1"] + [json.dumps({"path": f"file://{folder / n}", "action": "add"}) for n in names]
    (log / str(batch)).write_text("\n".join(lines))


def test_the_input_holds_every_number_once_in_the_files_asked_for(tmp_path):
    module = bench()
    module.write_input(tmp_path / "in", 1003, 7)
    files = sorted((tmp_path / "in").glob("*.json"))
    rows = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    assert len(files) == 7
    assert sorted(r["n"] for r in rows) == list(range(1003))
    assert set(rows[0]) == {"user", "n", "text"}
    assert sorted(module.input_numbers(tmp_path / "in").tolist()) == list(range(1003))


def test_the_output_check_sees_missing_duplicated_extra_and_uncommitted_rows(tmp_path):
    module = bench()
    expected = np.arange(10)
    part(tmp_path, "part-0.parquet", [0, 1, 2, 3, 4])
    part(tmp_path, "part-1.parquet", [5, 6, 7, 8, 9])
    commit(tmp_path, 0, ["part-0.parquet", "part-1.parquet"])
    assert module.check_output(tmp_path, expected) == ("complete, once", True)

    part(tmp_path, "part-2.parquet", [9, 10])  # written, never committed: not output
    verdict, ok = module.check_output(tmp_path, expected)
    assert ok and verdict == "complete, once (+1 uncommitted part files)"

    commit(tmp_path, 1, ["part-2.parquet"])  # now committed: 9 twice, 10 not in the input
    assert module.check_output(tmp_path, expected)[0].startswith("missing 0, extra 1, duplicated 1")
    assert module.check_output(tmp_path, np.arange(12)) == (
        "missing 1, extra 0, duplicated 1",
        False,
    )
    assert module.check_output(tmp_path / "nothing", expected) == (
        "missing 10, extra 0, duplicated 0",
        False,
    )


def test_an_elastream_sink_folder_commits_its_visible_parts_not_its_hidden_temporaries(tmp_path):
    module = bench()
    part(tmp_path, "part-0-4.parquet", [0, 1, 2, 3, 4])
    part(tmp_path, ".part-5-9.parquet.tmp", [5, 6, 7, 8, 9])  # being written: not output yet
    assert module.check_output(tmp_path, np.arange(5)) == ("complete, once", True)
    assert module.check_output(tmp_path, np.arange(10)) == (
        "missing 5, extra 0, duplicated 0",
        False,
    )


def test_the_counter_skips_part_files_being_written_and_counts_them(tmp_path):
    module = bench()
    counter = module.PartCounter(tmp_path)
    assert counter.count() == 0
    part(tmp_path, "part-0.parquet", list(range(7)))
    (tmp_path / "part-1.parquet").write_bytes(b"")
    whole = (tmp_path / "part-0.parquet").read_bytes()
    (tmp_path / "part-2.parquet").write_bytes(whole[: len(whole) // 2])  # no footer yet
    (tmp_path / ".part-0.parquet.crc").write_bytes(b"x")
    assert counter.count() == 7
    assert (counter.unreadable, counter.empty) == (1, 1)
    (tmp_path / "part-2.parquet").write_bytes(whole)  # finished
    assert counter.count() == 14
    assert (counter.unreadable, counter.empty) == (1, 2)


def test_first_row_all_rows_and_the_steady_rate_come_from_the_timeline():
    module = bench()
    run = module.Run(points=[(1.0, 0), (2.0, 100), (3.0, 500), (4.0, 1000), (5.0, 1000)])
    assert run.first_s() == 2.0 and run.all_s(1000) == 4.0
    assert run.rate(1000) == (1000 - 100) / (4.0 - 2.0)  # 10 % out at 2 s, 90 % at 4 s
    one_step = module.Run(points=[(1.0, 0), (9.0, 1000)])
    assert one_step.rate(1000) is None and one_step.all_s(2000) is None
