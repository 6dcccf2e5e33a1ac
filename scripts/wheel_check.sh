#!/usr/bin/env bash
# Build the wheel, install it with no extras into a fresh virtual environment (pip's cache makes
# it quick), then run `elastream --version` and a short simulator demo from it, outside the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
rm -rf build  # no stale files of an earlier build in the wheel
.venv/bin/python -m pip wheel --quiet --no-deps --wheel-dir "$tmp/dist" .
echo "wheel built: $((SECONDS - start)) s"
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
from importlib import resources
assert (resources.files("elastream.report") / "live.html").is_file(), "live.html not in the wheel"
PY
echo "wheel check: $((SECONDS - start)) s"
