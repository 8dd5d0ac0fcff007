#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds a normal and an
# ASan+UBSan build, runs the meson unit tests of both and the pytest
# integration suite against both binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

meson setup build-asan --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false \
  >/dev/null 2>&1 || meson setup --reconfigure build-asan >/dev/null
ninja -C build-asan

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

meson test -C build --print-errorlogs
meson test -C build-asan --print-errorlogs

echo "== integration tests, normal build"
SPLUNK_PROFD_BUILD=build python3 -m pytest -q tests
echo "== integration tests, ASan+UBSan build"
SPLUNK_PROFD_BUILD=build-asan SPLUNK_PROFD=build-asan/splunk-profd python3 -m pytest -q tests
