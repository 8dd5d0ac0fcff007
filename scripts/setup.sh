#!/usr/bin/env bash
# Installs everything splunk-profd needs to build and test on Debian
# (bookworm or newer), then builds it.  Idempotent; run as root (or with
# sudo).  Used by scripts/demo.sh, scripts/test.sh and CI.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  # build
  meson ninja-build pkg-config gcc g++ clang-format
  libdw-dev libelf-dev libprotobuf-c-dev protobuf-c-compiler zlib1g-dev
  libgrpc-dev
  # tests: reference tools and process helpers
  python3 python3-pip python3-pytest gdb strace util-linux procps
  # export tests: a self-signed CA for the TLS collector
  openssl
  # ops tests (tests/test_ops.py): the SVG flame graph is opened in headless
  # Chromium; `man` renders the man page
  chromium man-db
  # asyncio tests (tests/test_asyncio_fastapi.py): a FastAPI app under uvicorn
  # on the host's /usr/bin/python3.11 (the chroots get theirs from setup-pythons.sh)
  python3-fastapi python3-uvicorn
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# Go: the pprof reader used by the tests and by the demo.  Any recent Go
# toolchain on PATH will do; otherwise Debian's.
command -v go >/dev/null 2>&1 || missing+=(golang-go)
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The python3 first on PATH may not be Debian's: make sure it has pytest.
python3 -c 'import pytest' 2>/dev/null || python3 -m pip install -q pytest
# The export tests' OTLP receiver: grpcio and the official OTLP protobuf
# classes (tests/otlp_receiver.py); Debian packages neither at usable versions.
python3 -c 'import grpc, opentelemetry.proto.collector.logs.v1.logs_service_pb2_grpc' 2>/dev/null ||
  python3 -m pip install -q grpcio opentelemetry-proto 2>/dev/null ||
  python3 -m pip install -q --break-system-packages grpcio opentelemetry-proto

# The SVG test drives Chromium over the DevTools protocol (websocket).
python3 -c 'import websocket' 2>/dev/null ||
  python3 -m pip install -q websocket-client 2>/dev/null ||
  python3 -m pip install -q --break-system-packages websocket-client

# The pre-fork server test (tests/test_watch_gunicorn.py): gunicorn from PyPI.
python3 -c 'import gunicorn' 2>/dev/null ||
  python3 -m pip install -q gunicorn 2>/dev/null ||
  python3 -m pip install -q --break-system-packages gunicorn

# Span-correlation tests (tests/test_context.py): the real OpenTelemetry API
# and SDK, opentelemetry-instrument (from opentelemetry-distro), and wheel
# so that context/python installs with --no-build-isolation (no network).
python3 -c 'import opentelemetry.sdk.trace, opentelemetry.instrumentation, wheel, setuptools' 2>/dev/null ||
  python3 -m pip install -q opentelemetry-api opentelemetry-sdk opentelemetry-distro wheel setuptools 2>/dev/null ||
  python3 -m pip install -q --break-system-packages opentelemetry-api opentelemetry-sdk opentelemetry-distro wheel setuptools

# The OTEP 4947/4719 test's third-party writer (tests/test_otel_context.py):
# ddtrace from PyPI, in a venv of its own outside the repository, so that
# its dependencies stay out of the interpreter the tests run on.
DDTRACE_VENV=${SPLUNK_PROFD_DDTRACE_VENV:-/var/cache/splunk-profd/ddtrace-venv}
if ! "$DDTRACE_VENV/bin/python" -c 'import ddtrace' 2>/dev/null; then
  mkdir -p "$(dirname "$DDTRACE_VENV")"
  python3 -m venv "$DDTRACE_VENV"
  "$DDTRACE_VENV/bin/python" -m pip install -q 'ddtrace==4.16.0'
fi

meson setup build --buildtype=debugoptimized >/dev/null 2>&1 || meson setup --reconfigure build >/dev/null
ninja -C build
