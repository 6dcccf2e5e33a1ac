#!/usr/bin/env bash
# The picture of docs/operations.md: the live view of `elastream demo` on local Spark, taken by
# headless Chromium AT seconds after the run's first interval (default 75), into OUT.
#   bash scripts/live_view_screenshot.sh [OUT=docs/img/live-view-spark.png] [AT=75]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/img/live-view-spark.png}
at=${2:-75}
port=9464
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'metrics: {port: %s, linger_s: 5}\n' "$port" >"$work/run.yaml"
.venv/bin/elastream demo --out "$work/demo" --config "$work/run.yaml" >"$work/demo.log" 2>&1 &
demo=$!
until grep -q "^t=" "$work/demo.log"; do  # the first interval's line
  kill -0 "$demo" 2>/dev/null || { cat "$work/demo.log"; exit 1; }
  sleep 1
done
sleep "$at"
chromium --headless --no-sandbox --disable-gpu --user-data-dir="$work/profile" \
  --window-size=1400,1330 --virtual-time-budget=3000 --screenshot="$out" \
  "http://127.0.0.1:$port/" 2>/dev/null
wait "$demo"
grep -E "^t=" "$work/demo.log" | tail -1
echo "live view at t ≈ ${at} s after the first interval: $out"
