#!/usr/bin/env bash
# Set up, then lint, build the docs and run every test (what CI runs); meanwhile the wheel is
# built and installed in a fresh venv, and its simulator demo and the README's first pipeline run
# from it (wheel_check.sh), and the JVM's class cache is made: both done before the Spark tests.
#   bash scripts/test.sh          everything (unit, Spark, Redis and browser tests, the wheel)
#   bash scripts/test.sh --fast   lint and the tests that need no Spark (a few minutes)
# Extra arguments go to pytest (one run, in one process).
set -euo pipefail
cd "$(dirname "$0")/.."
fast=0
if [ "${1:-}" = "--fast" ]; then fast=1; shift; fi
bash scripts/services.sh &  # redis-server and chromium (the Redis and browser tests), beside pip
services_pid=$!
bash scripts/setup.sh
wait "$services_pid"
.venv/bin/ruff check src tests benchmarks
.venv/bin/ruff format --check src tests benchmarks
.venv/bin/lint-imports --no-cache  # the layering contracts of pyproject.toml
# not --quiet: it hides the warnings that --strict counts (a broken link then passed)
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir "$(mktemp -d)"
export ELASTREAM_REQUIRE_BROWSER=1 ELASTREAM_REQUIRE_REDIS=1
pytest=(.venv/bin/python -m pytest -q -p no:cacheprovider)
if [ "$fast" = 1 ]; then
  exec "${pytest[@]}" -n 2 -m "not spark" "$@"
fi
wheel_log=$(mktemp)
bash scripts/wheel_check.sh >"$wheel_log" 2>&1 &
wheel_pid=$!
# the driver JVM's class cache, made once beside the tests without Spark, so that every Spark
# test's JVM starts from it
cache_log=$(mktemp)
.venv/bin/python scripts/make_class_cache.py >"$cache_log" 2>&1 &
cache_pid=$!
status=0
wheel_done() {  # the wheel check and the class cache run Spark: they end before the Spark tests
  if ! wait "$wheel_pid"; then
    echo "wheel check failed:" >&2
    cat "$wheel_log" >&2
    status=1
  fi
  grep -E "^(elastream |wheel )" "$wheel_log" || true
  wait "$cache_pid" || status=1
  cat "$cache_log"
  rm -f "$wheel_log" "$cache_log"
}
if [ $# -gt 0 ]; then
  wheel_done
  "${pytest[@]}" --durations=25 "$@" || status=$?
else  # the tests without Spark on both cores; then the Spark tests that judge only what a run
  # delivers two at a time (a cluster's tests on one worker: loadgroup); then the ones marked
  # `alone` (they judge wall-clock behaviour) one at a time
  "${pytest[@]}" -n 2 --durations=10 -m "not spark" || status=$?
  wheel_done
  # those two-at-a-time tests judge no timing: their JVMs compile with C1 only (every `java`
  # launch reads JDK_JAVA_OPTIONS), which cut a Spark test's CPU by 28 % here; the `alone`
  # tests and the wheel check run the JVM as a user's run does
  JDK_JAVA_OPTIONS="-XX:TieredStopAtLevel=1 ${JDK_JAVA_OPTIONS:-}" \
    "${pytest[@]}" -n 2 --dist loadgroup --durations=15 -m "spark and not alone" || status=$?
  "${pytest[@]}" --durations=15 -m "spark and alone" || status=$?
fi
exit "$status"
