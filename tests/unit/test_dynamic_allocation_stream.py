"""The parts of benchmarks/dynamic_allocation.py that need no Spark: the seeded file schedule
(10x swing, the same for both sides), the writer process, and when an output file counts as
visible (Spark's sink log, compacted or not; elastream's part files). The whole script runs on
a real cluster in tests/spark/test_dynamic_allocation.py."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from support.paths import ROOT

SCRIPT = ROOT / "benchmarks/dynamic_allocation.py"


def bench():
    spec = importlib.util.spec_from_file_location("dynamic_allocation", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses resolve their annotations through it
    spec.loader.exec_module(module)
    return module


def test_the_schedule_swings_tenfold_and_is_the_same_for_a_seed():
    d = bench()
    landings = d.schedule(seed=3, minutes=20, low=12, high=120, per_file=40)
    assert landings == d.schedule(seed=3, minutes=20, low=12, high=120, per_file=40)
    assert landings != d.schedule(seed=4, minutes=20, low=12, high=120, per_file=40)
    firsts = [w.first_id for w in landings]
    assert firsts == list(range(0, 40 * len(landings), 40))  # ids 0.. once, file after file
    assert [w.file for w in landings] == list(range(len(landings)))
    phase_s = 240.0
    for k, phase in enumerate(("low", "high", "low", "high", "low")):
        rows = 40 * sum(1 for w in landings if k * phase_s <= w.at_s < (k + 1) * phase_s)
        expected = (120 if phase == "high" else 12) * phase_s
        assert abs(rows - expected) <= 0.35 * expected, (k, rows, expected)


def test_the_writer_lands_every_file_by_rename_and_logs_when(tmp_path):
    d = bench()
    folder, manifest = tmp_path / "in", tmp_path / "manifest.csv"
    folder.mkdir()
    argv = [sys.executable, str(SCRIPT), "write", "--input", str(folder), "--manifest",
            str(manifest), "--minutes", "0.05", "--low", "50", "--high", "500",
            "--rows-per-file", "10", "--seed", "1"]  # fmt: skip
    subprocess.run(argv, check=True, timeout=60)
    landings = d.schedule(1, 0.05, 50, 500, 10)
    logged = d.read_manifest(manifest)
    assert sorted(logged) == [w.file for w in landings]
    ids = []
    for w in landings:
        path = folder / f"part-{w.file:06d}.json"
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        assert {r["file"] for r in rows} == {w.file}
        ids += [r["id"] for r in rows]
        assert logged[w.file][:2] == (w.first_id, w.rows)
        assert os.stat(path).st_mtime <= logged[w.file][2]  # landed, then logged
    assert ids == list(range(10 * len(landings)))
    assert not list((tmp_path / ".staging").iterdir())  # nothing left half-written


def part(folder, name, ids):
    table = pa.table({"id": pa.array(ids, pa.int64()), "file": pa.array([0] * len(ids))})
    pq.write_table(table, folder / name)


def test_a_spark_output_file_appears_when_the_first_sink_log_file_lists_it(tmp_path):
    d = bench()
    out = tmp_path / "out"
    log = out / "_spark_metadata"
    log.mkdir(parents=True)
    for name, ids in (("part-a.parquet", [0, 1]), ("part-b.parquet", [2]), ("part-c.parquet", [3])):
        part(out, name, ids)

    def entry(*names):
        return "v1\n" + "".join(
            json.dumps({"path": f"file://{out}/{n}", "action": "add"}) + "\n" for n in names
        )

    outputs = d.Outputs(out, spark_log=True)
    (log / "0").write_text(entry("part-a.parquet"))
    os.utime(log / "0", (100.0, 100.0))
    assert outputs.poll() == 2
    (log / "1").write_text(entry("part-b.parquet"))
    os.utime(log / "1", (200.0, 200.0))
    (log / "2.compact").write_text(entry("part-a.parquet", "part-b.parquet", "part-c.parquet"))
    os.utime(log / "2.compact", (300.0, 300.0))
    (log / ".2.compact.tmp").write_text("v1\n")  # Spark's temporary file: not a batch yet
    assert outputs.poll() == 4
    assert outputs.appeared == {"part-a.parquet": 100.0, "part-b.parquet": 200.0,
                                "part-c.parquet": 300.0}  # fmt: skip
    ids, _, times = outputs.ids_and_times()
    assert dict(zip(ids.tolist(), times.tolist(), strict=True)) == {
        0: 100.0, 1: 100.0, 2: 200.0, 3: 300.0
    }  # fmt: skip


def test_an_elastream_part_file_appears_at_its_mtime_and_hidden_ones_do_not(tmp_path):
    d = bench()
    out = tmp_path / "out"
    out.mkdir()
    part(out, "part-0-2.parquet", [5, 6])
    part(out, ".part-2-3.parquet.tmp", [7])  # being written
    (out / "_elastream_sink.json").write_text("{}")
    os.utime(out / "part-0-2.parquet", (50.0, 50.0))
    outputs = d.Outputs(out, spark_log=False)
    assert outputs.poll() == 2
    ids, _, times = outputs.ids_and_times()
    assert ids.tolist() == [5, 6] and np.all(times == 50.0)
