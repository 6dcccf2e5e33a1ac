#!/usr/bin/env bash
# Set up, then lint, build the docs and run every test (what CI runs).
#   bash scripts/test.sh          everything (unit, Spark, Redis and browser tests)
#   bash scripts/test.sh --fast   lint and the tests that need no Spark (a few minutes)
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
fast=0
if [ "${1:-}" = "--fast" ]; then fast=1; shift; fi
bash scripts/setup.sh
bash scripts/services.sh  # redis-server and chromium: the Redis and browser tests need them
.venv/bin/ruff check src tests benchmarks
.venv/bin/ruff format --check src tests benchmarks
.venv/bin/lint-imports --no-cache  # the layering contracts of pyproject.toml
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$(mktemp -d)"
export ELASTREAM_REQUIRE_BROWSER=1 ELASTREAM_REQUIRE_REDIS=1
if [ "$fast" = 1 ]; then
  exec .venv/bin/python -m pytest -q -p no:cacheprovider -m "not spark" "$@"
fi
.venv/bin/python -m pytest -q -p no:cacheprovider --durations=25 "$@"
