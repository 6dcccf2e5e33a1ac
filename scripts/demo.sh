#!/usr/bin/env bash
# Set up, then run the tweet-analysis demo on local Spark (about 4 minutes); outputs in runs/demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/elastream demo "$@"
