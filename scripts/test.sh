#!/usr/bin/env bash
# Set up, then lint and run every test (unit tests, then the Spark integration tests); meanwhile
# the wheel is built and installed in a fresh venv and its simulator demo run (wheel_check.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests benchmarks
.venv/bin/ruff format --check src tests benchmarks
.venv/bin/lint-imports --no-cache  # the layering contracts of pyproject.toml
wheel_log=$(mktemp)
bash scripts/wheel_check.sh >"$wheel_log" 2>&1 &
wheel_pid=$!
status=0
.venv/bin/python -m pytest -q -p no:cacheprovider --durations=25 "$@" || status=$?
if ! wait "$wheel_pid"; then
  echo "wheel check failed:" >&2
  cat "$wheel_log" >&2
  status=1
fi
grep -E "^(elastream |wheel )" "$wheel_log" || true
rm -f "$wheel_log"
exit "$status"
