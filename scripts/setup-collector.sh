#!/usr/bin/env bash
# Builds the OpenTelemetry Collector the export tests run against
# (tests/test_collector.py): the Collector Builder (ocb) from the Go
# module proxy, with the otlp receiver, the batch processor and the file
# exporter, at pinned versions.  The binary is cached outside the
# repository, so this is a no-op once it exists (cold: about 10 minutes of
# module downloads and compiling on 2 cores; warm: instant).
#
#   scripts/setup-collector.sh          build if missing; print the path
#   scripts/setup-collector.sh --path   print the path only (exit 1 if missing)
#
# SPLUNK_PROFD_OTELCOL_CACHE moves the cache (default /var/cache/splunk-profd/otelcol).
set -euo pipefail

# Pinned: the builder and the core modules share a version; contrib's file
# exporter is released with it.
OTELCOL_VERSION=0.165.0
CONFMAP_VERSION=1.71.0 # the stable core modules released with it
CONTRIB_VERSION=0.165.0

cache=${SPLUNK_PROFD_OTELCOL_CACHE:-/var/cache/splunk-profd/otelcol}
dir=$cache/$OTELCOL_VERSION
bin=$dir/otelcol-profd

if [[ -x $bin ]] && "$bin" components >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi
if [[ ${1:-} == --path ]]; then
  echo "$bin"
  exit 1
fi

command -v go >/dev/null 2>&1 || { echo "setup-collector.sh: go is not on PATH" >&2; exit 1; }
mkdir -p "$dir"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "setup-collector.sh: building otelcol $OTELCOL_VERSION into $dir (cold: ~10 min)" >&2
started=$(date +%s)
GOBIN=$work/bin go install "go.opentelemetry.io/collector/cmd/builder@v$OTELCOL_VERSION"

cat >"$work/manifest.yaml" <<EOF
dist:
  name: otelcol-profd
  description: OpenTelemetry Collector for splunk-profd's export tests
  version: $OTELCOL_VERSION
  output_path: $work/dist
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver v$OTELCOL_VERSION
processors:
  - gomod: go.opentelemetry.io/collector/processor/batchprocessor v$OTELCOL_VERSION
exporters:
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter v$CONTRIB_VERSION
EOF

# The builder only writes the sources here.  Its own module step is `go mod
# tidy`, which also fetches the test-only dependencies of every component,
# and some of those (contrib's otlpencodingextension, used by the file
# exporter's tests) are not served by the module proxy (403).  So the
# module is set up by hand: the components and the core pieces main.go
# imports at the pinned versions, everything else by their go.mod files;
# `go build` then fetches only what the binary needs.
"$work/bin/builder" --config "$work/manifest.yaml" --skip-compilation --skip-get-modules \
  >"$work/builder.log" 2>&1 || {
  tail -40 "$work/builder.log" >&2
  exit 1
}
(
  cd "$work/dist"
  go mod init otelcol-profd
  go get "go.opentelemetry.io/collector/receiver/otlpreceiver@v$OTELCOL_VERSION" \
    "go.opentelemetry.io/collector/processor/batchprocessor@v$OTELCOL_VERSION" \
    "github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter@v$CONTRIB_VERSION" \
    "go.opentelemetry.io/collector/otelcol@v$OTELCOL_VERSION" \
    "go.opentelemetry.io/collector/confmap/provider/envprovider@v$CONFMAP_VERSION" \
    "go.opentelemetry.io/collector/confmap/provider/fileprovider@v$CONFMAP_VERSION" \
    "go.opentelemetry.io/collector/confmap/provider/httpprovider@v$CONFMAP_VERSION" \
    "go.opentelemetry.io/collector/confmap/provider/httpsprovider@v$CONFMAP_VERSION" \
    "go.opentelemetry.io/collector/confmap/provider/yamlprovider@v$CONFMAP_VERSION"
  CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags='-s -w' -o otelcol-profd .
) >>"$work/builder.log" 2>&1 || {
  tail -40 "$work/builder.log" >&2
  exit 1
}
install -m 0755 "$work/dist/otelcol-profd" "$bin.tmp"
mv -f "$bin.tmp" "$bin"
echo "setup-collector.sh: built in $(($(date +%s) - started)) s" >&2
echo "$bin"
