#!/usr/bin/env bash
# The whole test suite: installs dependencies, provisions the Debian
# CPython interpreters the Python tests run (cached outside the repo),
# checks the include direction and the format, builds a normal and an
# ASan+UBSan build, runs the meson unit tests of
# both and the pytest integration suite against both binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# The real OpenTelemetry Collector of tests/test_collector.py, built once
# with the Collector Builder and cached outside the repository (cold: ~8 min
# of downloads and compiling).  It builds in the background while the
# interpreters are provisioned and the project is built, so that a fresh
# machine's CI stays within its time; the tests wait for it.
mkdir -p build
scripts/setup-collector.sh >build/setup-collector.log 2>&1 &
collector=$!
# The free-threaded CPython builds of tests/test_python.py, compiled from
# Debian's source packages and cached the same way (cold: a few minutes of
# compiling per version), also in the background; waited for likewise.
scripts/setup-pythons-ft.sh >build/setup-pythons-ft.log 2>&1 &
pythons_ft=$!
scripts/setup-pythons.sh

# The layout's rule (includes point one way, no cycles) and the format.
python3 scripts/check-includes.py
scripts/check-format.sh

meson setup build-asan --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false \
  >/dev/null 2>&1 || meson setup --reconfigure build-asan >/dev/null
ninja -C build-asan

# A bounded quarantine keeps use-after-free detection for recent frees while
# letting the memory-bound tests (daemon RSS under thread churn) measure the
# daemon rather than ASan's default 256 MB of held-back memory.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1:quarantine_size_mb=32
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

meson test -C build --print-errorlogs
meson test -C build-asan --print-errorlogs

if ! wait "$collector"; then
  cat build/setup-collector.log >&2
  echo "test.sh: error: the OpenTelemetry Collector could not be built" >&2
  exit 1
fi

echo "== integration tests, normal build (but the free-threaded CPython's)"
# They run while a fresh machine still compiles the free-threaded builds
# (~11 min cold, mostly waiting on the download); those builds' tests
# follow once they are there.  The soak test at its shortest (120 s of
# churn; SPLUNK_PROFD_SOAK_SECONDS lengthens it): CI must stay within 30
# minutes from a fresh machine.
SPLUNK_PROFD_FT_TESTS=none SPLUNK_PROFD_SOAK_SECONDS=${SPLUNK_PROFD_SOAK_SECONDS:-120} \
  SPLUNK_PROFD_BUILD=build python3 -m pytest -q --durations=15 tests

if ! wait "$pythons_ft"; then
  cat build/setup-pythons-ft.log >&2
  echo "test.sh: error: the free-threaded CPython builds failed" >&2
  exit 1
fi
cat build/setup-pythons-ft.log
echo "== integration tests, normal build, free-threaded CPython"
SPLUNK_PROFD_FT_TESTS=only SPLUNK_PROFD_BUILD=build python3 -m pytest -q --durations=5 tests
echo "== integration tests, ASan+UBSan build"
SPLUNK_PROFD_BUILD=build-asan SPLUNK_PROFD=build-asan/splunk-profd python3 -m pytest -q --durations=15 tests
# The benchmarks (bench/run.py, ~42 min; --quick ~3.5 min) are not part of
# the tests: they measure, and CI's 30 minutes have no room for them.
