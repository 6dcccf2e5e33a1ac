#!/usr/bin/env bash
# Build the wheel, install it with no extras into a fresh virtual environment (pip's cache makes
# it quick), then, outside the tree: `elastream --version`, a short simulator demo, and the
# README's "Your first pipeline" from a new folder — its myapp.py and pipeline.yaml taken from
# README.md's code blocks, a few JSON-lines files in incoming/ — on local Spark, checking that
# pandas.read_parquet(results/) holds one row per word of the input.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
PY=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
rm -rf build  # no stale files of an earlier build in the wheel
.venv/bin/python -m pip wheel --quiet --no-deps --wheel-dir "$tmp/dist" .
echo "wheel built: $((SECONDS - start)) s"
"$PY" - "$tmp"/dist/elastream-*.whl <<'PY'
import sys, zipfile
tops = {name.split("/")[0] for name in zipfile.ZipFile(sys.argv[1]).namelist()}
assert tops == {"elastream", next(t for t in tops if t.endswith(".dist-info"))}, tops
metadata = zipfile.ZipFile(sys.argv[1]).read(f"{sorted(tops)[1]}/METADATA").decode()
assert "Classifier: Programming Language :: Python :: 3.11" in metadata, metadata[:2000]
print(f"wheel holds {', '.join(sorted(tops))}")
PY
"$PY" -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install --quiet --no-compile "$tmp"/dist/elastream-*.whl
echo "installed into a fresh venv: $((SECONDS - start)) s"
cd "$tmp"  # away from src/: what runs is the installed wheel
"$tmp/venv/bin/elastream" --version
"$tmp/venv/bin/elastream" demo --engine sim --duration 30 --out "$tmp/runs/demo" --quiet >"$tmp/demo.log"
"$tmp/venv/bin/python" - "$tmp/runs/demo/summary.json" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
assert summary["events_in"] > 0 and summary["events_out"] > 0, summary
print(f"wheel demo: {summary['events_in']} events in, {summary['events_out']} out")
from importlib import resources, util
assert (resources.files("elastream.report") / "live.html").is_file(), "live.html not in the wheel"
assert util.find_spec("reproductions") is None, "the papers' reproductions were installed"
PY
first="$tmp/first"  # a new user's folder: only the README's two files and the input
"$tmp/venv/bin/python" "$repo/tests/support/first_pipeline.py" setup "$first"
cd "$first"
"$tmp/venv/bin/elastream" run pipeline.yaml --out runs/words --duration 15 --quiet >"$tmp/first.log" 2>&1 \
  || { cat "$tmp/first.log" >&2; exit 1; }
echo "wheel first pipeline: $("$tmp/venv/bin/python" "$repo/tests/support/first_pipeline.py" verify "$first")"
echo "wheel check: $((SECONDS - start)) s"
