"""The reproduction script end to end on short runs: every table, trend and section of its two
pages is written."""

import importlib.util
import subprocess
import sys

from support.paths import ROOT


def test_reproduce_script_writes_the_whole_document(tmp_path):
    out = tmp_path / "btu.md"
    cmd = [sys.executable, "benchmarks/leasing_reproduce.py", "--seeds", "2", "--minutes", "4",
           "--trace-seeds", "1", "--trace-hours", "3"]  # fmt: skip
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [*cmd, "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    ahead = (tmp_path / "btu-ahead.md").read_text(encoding="utf-8")
    for title in ("Table 3: stepwise", "Table 4: two-level", "Table 5: random walk 1", "Table 6"):
        assert title in text
    assert text.count("holds**") + text.count("does not hold**") == 5  # the five trend lines
    assert "Ablation: which hosts the image-cache factor CF favours" in text
    assert "forecast BTU60" in text and "threshold BTU10" in text
    assert "{ranges}" not in text  # the discussion's computed ranges were filled in
    assert text.count("| machines |") == 4  # one timeline per pattern
    assert "## Leasing against a fixed fleet" in ahead and "Why the cells come out" in ahead
    assert "## Leasing against fixed fleets on real traces" in ahead and "(btu-ahead.md)" in text
    assert "(wall clock, 2 processes" in text  # the default: runs spread over two workers


def test_script_is_importable_without_running():
    spec = importlib.util.spec_from_file_location("repro", ROOT / "benchmarks/leasing_reproduce.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.APPROACHES == ("btu", "threshold", "forecast")
