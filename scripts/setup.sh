#!/usr/bin/env bash
# Create .venv and install elastream with its dependencies (idempotent; needs Python 3.11+, Java 17).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.elastream-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e '.[dev]'
  touch "$stamp"
fi
java -version >/dev/null 2>&1 || { echo "Java 17 is required by Spark: install openjdk-17-jre-headless" >&2; exit 1; }
