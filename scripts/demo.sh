#!/usr/bin/env bash
# One-command demo: installs dependencies, builds, starts the bundled
# example workload, profiles it for 5 seconds at 100 Hz, writes
# demo-profile.pb.gz and prints the hottest functions.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

build/examples/workload &
workload=$!
trap 'kill $workload 2>/dev/null || true' EXIT
sleep 0.5

build/splunk-profd --pid "$workload" --interval 10 --duration 5 --output demo-profile.pb.gz
echo
echo "Hottest functions on CPU (go tool pprof -top -tagfocus=thread.state=running demo-profile.pb.gz):"
HOME=${HOME:-/root} go tool pprof -top -nodecount=15 -tagfocus=thread.state=running demo-profile.pb.gz 2>/dev/null | sed -n '1,25p'
