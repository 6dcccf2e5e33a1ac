#!/usr/bin/env bash
# Install what the Redis tests (their TLS files: openssl) and browser tests run against (Debian's
# packages), when missing; as root with apt-get it installs them, otherwise it says what to
# install and fails.
set -euo pipefail
missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v redis-server >/dev/null || missing+=(redis-server)
command -v openssl >/dev/null || missing+=(openssl)  # the TLS files of the Redis tests
[ ${#missing[@]} -eq 0 ] && exit 0
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "the tests need ${missing[*]}: install them (Debian: apt-get install ${missing[*]})" >&2
  exit 1
fi
