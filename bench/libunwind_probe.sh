#!/usr/bin/env bash
# Measures what libunwind-ptrace would cost and give splunk-profd, on real
# processes (bench/libunwind_probe.c says what is timed).  For each target:
# libunwind_probe (ROUNDS rounds, 10 ms apart), then `splunk-profd dump
# --json` of the same threads, then `splunk-profd record -i 10 -d 3` for the
# profiler's own pause.  Prints two tables: the stop window per running
# thread, and our stacks (libdwfl) against libunwind's, frame by frame.
# Run as root from the repo after a build:  bench/libunwind_probe.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${SPLUNK_PROFD_BUILD:-build}
rounds=${1:-200}
python=${PYTHON:-/usr/bin/python3.11}
[[ -x $build/splunk-profd ]] || { echo "build first: meson setup $build && ninja -C $build" >&2; exit 1; }

# libunwind is no dependency of the profiler: only this probe needs it.
if ! pkg-config --exists libunwind-ptrace; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libunwind-dev >/dev/null
fi
probe=$build/bench/libunwind_probe
cc -O2 -g -Wall -Wextra -Wno-unused-parameter -o "$probe" bench/libunwind_probe.c \
  $(pkg-config --cflags --libs libunwind-ptrace)

work=$(mktemp -d)
target_pid=
cleanup() {
  [[ -n $target_pid ]] && kill "$target_pid" 2>/dev/null && wait "$target_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

py_recursion='
import sys
def spin():
    x = 0
    while True:
        x += 1
def f(n):
    return spin() if n == 0 else f(n - 1)
print("ready", flush=True)
f(100)'
# Each level goes through C (map, list): a ~100-level native stack too.
py_c_recursion='
import sys
def spin():
    x = 0
    while True:
        x += 1
def g(n):
    return spin() if n == 0 else list(map(g, [n - 1]))
print("ready", flush=True)
g(100)'
# Threads blocked in the interpreter (sleep, a lock, a pipe read), sampled
# from SP and PC only, next to a spinning one.
py_threads='
import os, threading, time
def spin():
    x = 0
    while True:
        x += 1
def g(n):
    return spin() if n == 0 else list(map(g, [n - 1]))
lock = threading.Lock()
lock.acquire()
r, w = os.pipe()
for target in (lambda: time.sleep(3600), lock.acquire, lambda: os.read(r, 1), lambda: g(30)):
    threading.Thread(target=target, daemon=True).start()
time.sleep(0.2)
print("ready", flush=True)
threading.Event().wait()'

targets=(
  "target_chain|$build/tests/targets/target_chain"
  "target_cpp|$build/tests/targets/target_cpp"
  "target_blocked|$build/tests/targets/target_blocked"
  "target_fp|$build/tests/targets/target_fp"
  "deep_stack_10|$build/bench/deep_stack 10 1"
  "deep_stack_100|$build/bench/deep_stack 100 1"
  "native_work_30|$build/bench/native_work $work/counter 2 30"
  "py_recursion_100|$python -c PY_RECURSION"
  "py_c_recursion_100|$python -c PY_C_RECURSION"
  "py_threads|$python -c PY_THREADS"
)

for entry in "${targets[@]}"; do
  name=${entry%%|*}
  read -r -a argv <<<"${entry#*|}"
  for i in "${!argv[@]}"; do
    [[ ${argv[$i]} == PY_RECURSION ]] && argv[$i]=$py_recursion
    [[ ${argv[$i]} == PY_C_RECURSION ]] && argv[$i]=$py_c_recursion
    [[ ${argv[$i]} == PY_THREADS ]] && argv[$i]=$py_threads
  done
  head -c 64 /dev/zero >"$work/counter"
  # stdin stays open (a fifo nobody writes): target_fp exits when it closes.
  mkfifo "$work/stdin.$name"
  "${argv[@]}" <"$work/stdin.$name" >"$work/$name.out" 2>&1 &
  target_pid=$!
  exec {hold}>"$work/stdin.$name"
  for _ in $(seq 100); do
    grep -q ready "$work/$name.out" 2>/dev/null && break
    sleep 0.05
  done
  sleep 0.3
  "$probe" -n "$rounds" "$target_pid" >"$work/$name.probe"
  "$build/splunk-profd" dump --pid "$target_pid" --json --native=all >"$work/$name.dump" 2>/dev/null
  "$build/splunk-profd" dump --pid "$target_pid" --json --native=all --stack-bytes 1048576 \
    >"$work/$name.dump1m" 2>/dev/null
  "$build/splunk-profd" record --pid "$target_pid" -i 10 -d 3 --no-export -o "$work/$name.txt" \
    2>&1 | grep 'summary:' >"$work/$name.record" || true
  kill "$target_pid"
  wait "$target_pid" 2>/dev/null || true
  target_pid=
  exec {hold}>&-
done

names=$(printf '%s\n' "${targets[@]}" | cut -d'|' -f1)
python3 - "$work" $names <<'EOF'
import json, re, sys

work, names = sys.argv[1], sys.argv[2:]

def fields(line):
    return dict(re.findall(r"(\w+)=(\S*)", line))

def our_stacks(path):
    """{tid: (state, [pc, ...] physical native frames, truncated)}"""
    try:
        doc = json.load(open(path))
    except (OSError, ValueError):
        return {}
    out = {}
    for thread in doc["processes"][0]["threads"]:
        pcs = [int(f["address"], 16) for f in thread["frames"]
               if f["kind"] == "native" and not f["inlined"] and f["address"]]
        out[thread["tid"]] = (thread["state"], pcs, thread["truncated"])
    return out

def agree(ours, theirs):
    """Frames after the leaf that agree, counted from the leaf side and from
    the root side.  Ours are return address - 1 (libdwfl), libunwind's the
    return address; the leaf is left out (a running thread moves between the
    probe's walk and the dump)."""
    pairs = list(zip(ours[1:], theirs[1:]))
    leaf = next((i for i, (a, b) in enumerate(pairs) if a != b - 1), len(pairs))
    pairs = list(zip(reversed(ours[1:]), reversed(theirs[1:])))
    root = next((i for i, (a, b) in enumerate(pairs) if a != b - 1), len(pairs))
    return leaf, root

def verdict(ours, theirs):
    if not ours or not theirs:
        return "missing"
    leaf, root = agree(ours, theirs)
    shorter = min(len(ours), len(theirs)) - 1
    if len(ours) == len(theirs) and leaf == shorter:
        return "same"
    if leaf == shorter:  # one walk is a prefix of the other: it stopped early
        return "libdwfl stops early" if len(ours) < len(theirs) else "libunwind stops early"
    if root >= shorter - 2:  # same callers: the running thread moved near its leaf
        return f"same callers, leaf moved ({len(ours) - 1 - root} vs {len(theirs) - 1 - root} frames)"
    return f"differ (leaf side {leaf}, root side {root} agree)"

print(f"{'target':<20} {'tid':>7} {'copy p50/p99':>14} {'libunwind p50/p99':>18} {'walk p50':>8} "
      f"{'first':>7} {'reads p50/max':>13} {'profd pause p50/p99':>20}   (us)")
for name in names:
    timings = {}
    for line in open(f"{work}/{name}.probe"):
        if line.startswith("timing"):
            f = fields(line)
            timings.setdefault(f["tid"], {})[f["method"]] = f
    record = fields(open(f"{work}/{name}.record").read())
    pause = f"{record.get('pause_p50_us', '-')}/{record.get('pause_p99_us', '-')}"
    for tid, methods in timings.items():
        c, u = methods.get("copy", {}), methods.get("libunwind", {})
        print(f"{name:<20} {tid:>7} {c.get('p50_us', '-') + '/' + c.get('p99_us', '-'):>14} "
              f"{u.get('p50_us', '-') + '/' + u.get('p99_us', '-'):>18} {u.get('unwind_p50_us', '-'):>8} "
              f"{u.get('first_us', '-'):>7} {u.get('reads_p50', '-') + '/' + u.get('reads_max', '-'):>13} "
              f"{pause:>20}")
print("copy: GETREGS + one 32 KiB process_vm_readv; libunwind: unw_init_remote + unw_step in the stop;")
print("walk: the libunwind walk alone; first: the first (cold) libunwind stop; reads: ptrace reads a walk")

print()
print(f"{'target':<20} {'tid':>7} {'state':<8} {'libdwfl 32K/1M':>14} {'libunwind':>9}  "
      "verdict (our 1 MiB copy against libunwind)")
counts = {}
for name in names:
    ours = our_stacks(f"{work}/{name}.dump")
    ours_1m = our_stacks(f"{work}/{name}.dump1m")
    for line in open(f"{work}/{name}.probe"):
        if not line.startswith("stack"):
            continue
        f = fields(line)
        tid = int(f["tid"])
        theirs = [int(p, 16) for p in f["pcs"].split(",") if p]
        state, mine, truncated = ours.get(tid, ("gone", [], False))
        _, mine_1m, truncated_1m = ours_1m.get(tid, ("gone", [], False))
        v = verdict(mine_1m, theirs)
        counts[v.split(" (")[0]] = counts.get(v.split(" (")[0], 0) + 1
        if truncated_1m:
            v += " (ours truncated)"
        if f["end"] != "0":
            v += f" (libunwind error {f['end']})"
        depth = f"{len(mine)}{'T' if truncated else ''}/{len(mine_1m)}{'T' if truncated_1m else ''}"
        print(f"{name:<20} {tid:>7} {state:<8} {depth:>14} {len(theirs):>9}  {v}")
print("T: truncated (dump's copy too short; the sampler grows a thread's copy up to 4x --stack-bytes)")
print()
print("threads: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
EOF
