#!/usr/bin/env bash
# Set up, then lint and run every test (unit tests, then the Spark integration tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests benchmarks
.venv/bin/ruff format --check src tests benchmarks
.venv/bin/lint-imports --no-cache  # the layering contracts of pyproject.toml
.venv/bin/python -m pytest -q -p no:cacheprovider --durations=25 "$@"
