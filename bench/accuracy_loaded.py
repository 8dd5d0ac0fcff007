#!/usr/bin/env python3
"""Accuracy on a loaded host (issue 16, item 7): our CPU profile against
perf's, and against a target's own CPU clock, with and without CPU hogs.

Usage: python3 bench/accuracy_loaded.py [--build build] [--secs 20]
           [--hogs 0,3] [--workloads split,nginx,redis,pysplit] [--out FILE]

Why a separate script: bench/run.py compares profilers by their own
counts; this question needs perf as the reference, real servers (Debian's
nginx and redis, installed here with apt when missing) and the host made
busy on purpose, and it runs about 2 minutes per cell.

Each cell runs one workload, then N CPU hogs (busy Python loops; the VM has
2 cores, so 3 hogs keep its run queues full), then, over the same window,
both
  splunk-profd --pid ... --interval 10 --duration SECS -o ours.pb.gz
  perf record -e cpu-clock -F 1000 --call-graph dwarf -p ... -- sleep SECS
at once, so the two see the same seconds of the same run.

Flat profile: each sample's leaf ELF symbol (for us, the outermost function
of the leaf location, the symbol that address belongs to; for perf, the
first user-space frame of the call chain, so that time in the kernel on a
thread's behalf is charged to the system call that entered it, as our
stacks show it).  Ours is weighted by the cpu/nanoseconds value (the
profile's default), perf's by its samples.  The table gives, over the union
of both top-10 lists, the largest difference in percentage points, and
beside it the sampling noise of each side (bootstrap standard deviation of
that function's share, 200 resamples), so that a difference can be read
against what chance alone would give.

Truth: `split` (tests/targets/target_split epoll: ~85% of its own CPU clock
in split_compute, the rest around epoll_wait) and `pysplit` (bench/
workloads.py split 1: f1/f2/f3 = 50/30/20 by its own clock) report their
own split; the cell compares every profiler with it.  `pysplit` is where
py-spy and Austin run side by side (they read Python stacks only; perf
cannot name Python functions on 3.11), each in its own window right after
ours, since two ptrace-based profilers cannot attach at once.

Not a test: nothing here asserts.  Results go to stdout and, with --out, are
appended to FILE as a Markdown section.
"""
import argparse
import collections
import json
import math
import os
import random
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (launch/finish/spawn/kill/cleanup, py-spy and Austin argv)

ROOT = run.ROOT
HZ = 100
PERF_HZ = 1000
HOG = "import time\nend = time.monotonic() + 900\nwhile time.monotonic() < end: pass"


# ------------------------------------------------------------- set-up

def ensure_servers():
    """nginx, redis and their load generators from Debian, once."""
    need = [pkg for tool, pkg in (("nginx", "nginx-light"), ("redis-server", "redis-server"),
                                  ("redis-benchmark", "redis-tools"), ("ab", "apache2-utils"))
            if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}")]
    if need:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "install", "-y", "-q"] + need, env=env, check=True,
                       stdout=subprocess.DEVNULL)


def pprofcheck():
    out = os.path.join(run.TMP, "pprofcheck")
    subprocess.run(["go", "build", "-o", out, "."], cwd=os.path.join(ROOT, "tests", "pprofcheck"),
                   env=dict(os.environ, GOFLAGS="-mod=mod"), check=True)
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------- workloads

class Workload:
    """A started workload: pids to profile, a truth() reader or None, and
    the processes to stop afterwards."""

    def __init__(self, pids, procs, truth=None, python=False):
        self.pids, self.procs, self.truth, self.python = pids, procs, truth, python

    def stop(self):
        # SIGTERM first: nginx's master then stops its workers, which a
        # SIGKILL would orphan (still holding the harness's pipes).
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
            run.kill(proc)


def start_split(build):
    proc = run.spawn([os.path.join(build, "tests", "targets", "target_split"), "epoll"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"

    def truth():
        proc.stdin.write("\n")
        proc.stdin.flush()
        m = re.search(r"compute_ns=(\d+) other_ns=(\d+)", proc.stdout.readline())
        return {"split_compute": int(m.group(1)), "(other)": int(m.group(2))}

    return Workload([proc.pid], [proc], truth)


def start_pysplit(_build):
    counter = os.path.join(run.TMP, "pysplit.counter")
    with open(counter, "wb") as f:
        f.write(b"\0" * 64)
    proc = run.spawn([run.TARGET_PY, os.path.join(ROOT, "bench", "workloads.py"), "split", counter, "1"],
                     stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"

    def truth():
        with open(counter, "rb") as f:
            slots = struct.unpack("<8Q", f.read(64))
        return {"f1": slots[1], "f2": slots[2], "f3": slots[3]}

    return Workload([proc.pid], [proc], truth, python=True)


def start_nginx(_build):
    port = free_port()
    conf_dir = tempfile.mkdtemp(dir=run.TMP, prefix="nginx-")
    conf = os.path.join(conf_dir, "nginx.conf")
    with open(os.path.join(conf_dir, "index.html"), "w") as f:
        f.write("x" * 2048)
    with open(conf, "w") as f:
        f.write(f"""daemon off; master_process on; worker_processes 1; pid {conf_dir}/pid;
error_log {conf_dir}/error.log; events {{ worker_connections 512; }}
http {{ access_log off; server {{ listen 127.0.0.1:{port}; root {conf_dir};
  location / {{ index index.html; }} }} }}
""")
    master = run.spawn(["nginx", "-c", conf, "-p", conf_dir], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    worker = None
    for _ in range(100):
        time.sleep(0.05)
        kids = subprocess.run(["pgrep", "-P", str(master.pid)], capture_output=True, text=True).stdout.split()
        if kids:
            worker = int(kids[0])
            break
    assert worker, "nginx started no worker"
    load = run.spawn(["ab", "-q", "-k", "-c", "8", "-t", "900", "-n", "100000000",
                      f"http://127.0.0.1:{port}/"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return Workload([worker], [master, load])


def start_redis(_build):
    port = free_port()
    server = run.spawn(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                        "--appendonly", "no", "--daemonize", "no"], stdout=subprocess.DEVNULL)
    for _ in range(100):
        time.sleep(0.05)
        if subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True).returncode == 0:
            break
    load = run.spawn(["redis-benchmark", "-q", "-p", str(port), "-c", "8", "-n", "1000000000", "-l",
                      "-t", "set,get"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return Workload([server.pid], [server, load])


WORKLOADS = {"split": start_split, "pysplit": start_pysplit, "nginx": start_nginx, "redis": start_redis}


# ------------------------------------------------------------- flat profiles

def clean_symbol(name):
    """One spelling per function: glibc's internal aliases and the
    compiler's clone suffixes differ between perf's and our symbol tables,
    and an address without a symbol (a stripped binary) is perf's
    [unknown]."""
    if re.fullmatch(r"(0x)?[0-9a-f]+", name):
        return "[unknown]"
    name = name.split("@")[0]
    name = re.sub(r"\.(isra|constprop|part|cold|lto_priv)\.?\d*", "", name)
    for prefix in ("__GI___", "__GI_", "__libc_", "__vdso_", "__"):
        if name.startswith(prefix) and len(name) > len(prefix):
            name = name[len(prefix):]
            break
    return name


def ours_flat(checker, path, python):
    """[(function, weight)] per sample: the leaf symbol, or for a Python
    target the innermost Python function, weighted by CPU ns."""
    data = json.loads(subprocess.run([checker, path], capture_output=True, text=True, check=True).stdout)
    index = data["sample_type"].index(["cpu", "nanoseconds"])
    flat = []
    for sample in data["samples"]:
        weight = sample["values"][index]
        frames = sample["frames"]
        if weight <= 0 or not frames:
            continue
        if python:
            # Shares among f1/f2/f3, as the target's own clock counts them
            # and as bench/run.py's shares() reads py-spy and Austin.
            names = [f["function"] for f in frames if f["function"] in ("f1", "f2", "f3")]
            if names:
                flat.append((names[0], weight))
            continue
        leaf = [f for f in frames if f["address"] == frames[0]["address"]][-1]
        flat.append((clean_symbol(leaf["function"] or "[unknown]"), weight))
    return flat


def perf_flat(path):
    """[(function, 1)] per perf sample: the first user-space frame."""
    out = subprocess.run(["perf", "script", "-i", path, "-F", "ip,sym,dso"], capture_output=True,
                         text=True, errors="replace").stdout
    flat, chosen = [], None
    for line in out.splitlines() + [""]:
        line = line.strip()
        if not line:
            if chosen is not None:
                flat.append((chosen, 1))
            chosen = None
            continue
        m = re.match(r"[0-9a-f]+ (.*) \((.*)\)$", line)
        if not m or chosen is not None:
            if not m and chosen is None and line:
                chosen = None
            continue
        sym, dso = m.group(1), m.group(2)
        if "kernel.kallsyms" in dso or dso.startswith("[") and dso != "[unknown]":
            continue
        sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
        chosen = clean_symbol(sym if sym != "[unknown]" else "[unknown]")
    return flat


def shares(flat):
    total = sum(w for _, w in flat) or 1
    acc = collections.Counter()
    for name, weight in flat:
        acc[name] += weight
    return {name: 100 * w / total for name, w in acc.items()}


def noise(flat, name, rounds=200):
    if not flat:
        return 0.0
    rng = random.Random(1)
    values = []
    for _ in range(rounds):
        pick = [flat[rng.randrange(len(flat))] for _ in flat]
        total = sum(w for _, w in pick) or 1
        values.append(100 * sum(w for n, w in pick if n == name) / total)
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def truth_shares(before, after):
    diff = {k: after[k] - before[k] for k in before}
    total = sum(diff.values()) or 1
    return {k: 100 * v / total for k, v in diff.items()}


# ------------------------------------------------------------- one cell

def profile_window(cfg, workload, checker):
    """Ours and perf over one window: (ours flat, perf flat, our summary)."""
    ours_out = os.path.join(run.TMP, "ours.pb.gz")
    perf_out = os.path.join(run.TMP, "perf.data")
    pids = ",".join(map(str, workload.pids))
    perf = run.spawn(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(PERF_HZ), "--call-graph",
                      "dwarf,16384", "-p", pids, "-o", perf_out, "--", "sleep", str(cfg.secs)],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ours, errf = run.launch("ours", workload.pids, HZ, cfg.secs, cfg.build, out=ours_out)
    res = run.finish(ours, errf, cfg.secs + 60)
    perf.wait(timeout=cfg.secs + 120)
    run.PROCS.remove(perf)
    if res["rc"] != 0:
        raise RuntimeError(f"splunk-profd exited {res['rc']}: {res['stderr']}")
    return ours_flat(checker, ours_out, workload.python), perf_flat(perf_out), res["summary"]


def competitor_window(cfg, workload, tool):
    """py-spy (which leaves out idle threads by default) or Austin in its
    CPU-time mode (-s), one window, against the target's own clock."""
    out = os.path.join(run.TMP, f"{tool}.out")
    argv = run.profiler_argv(tool, workload.pids, HZ, cfg.secs, out, cfg.build)
    if tool == "austin":
        argv.insert(1, "-s")
    before = workload.truth()
    proc = run.spawn(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proc.wait(timeout=cfg.secs + 60)
    run.PROCS.remove(proc)
    after = workload.truth()
    return run.shares(out)[0], truth_shares(before, after)


def cell(cfg, name, hogs, checker):
    workload = WORKLOADS[name](cfg.build)
    hog_procs = [run.spawn([sys.executable, "-c", HOG]) for _ in range(hogs)]
    try:
        time.sleep(2)
        load0 = os.getloadavg()[0]
        before = workload.truth() if workload.truth else None
        ours, perf, summ = profile_window(cfg, workload, checker)
        if workload.python:
            perf = []  # perf names no Python function (3.11 has no perf trampoline)
        truth = truth_shares(before, workload.truth()) if before else None
        extra = {}
        if workload.python:
            for tool in cfg.competitors:
                try:
                    extra[tool] = competitor_window(cfg, workload, tool)
                except Exception as e:  # one competitor failing keeps the cell
                    extra[tool] = (None, str(e))
        return report_cell(name, hogs, load0, ours, perf, truth, summ, extra)
    finally:
        for proc in hog_procs:
            run.kill(proc)
        workload.stop()


def report_cell(name, hogs, load, ours, perf, truth, summ, extra):
    s_ours, s_perf = shares(ours), shares(perf)
    top = lambda s: [k for k, _ in sorted(s.items(), key=lambda kv: -kv[1])[:10]]  # noqa: E731
    union = list(dict.fromkeys(top(s_ours) + (top(s_perf) if perf else [])))
    rows = []
    worst = (0.0, "")
    for fn in union:
        a, b = s_ours.get(fn, 0.0), s_perf.get(fn, 0.0)
        if perf and abs(a - b) > worst[0]:
            worst = (abs(a - b), fn)
        rows.append((fn, a, b, truth.get(fn) if truth else None))
    line = {
        "workload": name, "hogs": hogs, "load": round(load, 1),
        "max_diff_vs_perf": round(worst[0], 1) if perf else None, "worst_fn": worst[1],
        "noise_ours": round(noise(ours, worst[1]), 1) if worst[1] else None,
        "noise_perf": round(noise(perf, worst[1]), 1) if worst[1] else None,
        "samples_ours": len(ours), "samples_perf": len(perf),
        "eintr_repaired": summ.get("eintr_repaired"), "held_p99_us": summ.get("held_p99_us"),
        "waited_p99_us": summ.get("waited_p99_us"), "rows": rows,
    }
    if truth:
        # "(other)" is the target's CPU outside its named functions: each
        # profile's rest, not a function of its own.
        named = [k for k in truth if k != "(other)"]
        line["max_diff_vs_truth"] = round(max(abs(s_ours.get(k, 0.0) - truth[k]) for k in named), 1)
        if perf:
            line["perf_vs_truth"] = round(max(abs(s_perf.get(k, 0.0) - truth[k]) for k in named), 1)
    for tool, (got, t) in extra.items():
        line[f"{tool}_vs_truth"] = (round(max(abs(got.get(k, 0.0) - v) for k, v in t.items()), 1)
                                    if got is not None else t)
    print(json.dumps(line), flush=True)
    return line


# ------------------------------------------------------------- report

def markdown(cells, cfg):
    out = [f"## Accuracy on a loaded host (issue 16, item 7) ({time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC)",
           "",
           f"`python3 bench/accuracy_loaded.py --secs {cfg.secs}"
           + (f" --nice {cfg.nice}" if cfg.nice is not None else "")
           + (f" --sampler {cfg.sampler}" if cfg.sampler else "")
           + f"` (commit {commit()}, build {cfg.build}); {cfg.secs} s per window, "
           f"ours at {HZ} Hz, perf `-e cpu-clock -F {PERF_HZ} --call-graph dwarf` over the same window.  "
           "Flat = leaf symbol share of CPU (ours: cpu/nanoseconds; perf: samples, first user frame).  "
           "Noise = bootstrap sd of the worst function's share.  Load = 1-min load average at the window's start.",
           "",
           "| Workload | Hogs | Load | Max diff vs perf, pts (function) | Noise ours / perf, pts | "
           "Ours vs own clock, pts | perf vs own clock, pts | py-spy / Austin vs own clock, pts | "
           "eintr_repaired | held p99 µs | waited p99 µs |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        comp = " / ".join(str(c.get(f"{t}_vs_truth", "–")) for t in ("pyspy", "austin")) if c["workload"] == "pysplit" else "–"
        out.append(f"| {c['workload']} | {c['hogs']} | {c['load']} | {c['max_diff_vs_perf']} ({c['worst_fn']}) | "
                   f"{c['noise_ours']} / {c['noise_perf']} | {c.get('max_diff_vs_truth', '–')} | "
                   f"{c.get('perf_vs_truth', '–')} | {comp} | {c['eintr_repaired']} | {c['held_p99_us']} | "
                   f"{c['waited_p99_us']} |")
    out += ["", "Top functions per cell (ours % / perf % / own clock %):", ""]
    for c in cells:
        items = "; ".join(f"{fn} {a:.1f}/{b:.1f}" + (f"/{t:.1f}" if t is not None else "")
                          for fn, a, b, t in c["rows"][:10])
        out.append(f"- {c['workload']}, {c['hogs']} hogs: {items}")
    return "\n".join(out) + "\n"


def commit():
    return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--secs", type=int, default=20)
    ap.add_argument("--hogs", default="0,3")
    ap.add_argument("--workloads", default="split,pysplit,nginx,redis")
    ap.add_argument("--competitors", default="pyspy,austin")
    ap.add_argument("--nice", type=int, help="run splunk-profd under `nice -n N` (e.g. -10: is the "
                    "held-by-us pause shorter when the tracer outranks the hogs?)")
    ap.add_argument("--sampler", help="run splunk-profd with --sampler=KIND (auto, perf, ptrace)")
    ap.add_argument("--out")
    cfg = ap.parse_args()
    if cfg.sampler:
        with_sampler = run.profiler_argv
        run.profiler_argv = lambda tool, *a, **k: with_sampler(tool, *a, **k) + (  # noqa: E731
            [f"--sampler={cfg.sampler}"] if tool == "ours" else [])
    if cfg.nice is not None:
        plain = run.profiler_argv
        run.profiler_argv = lambda tool, *a, **k: (  # noqa: E731
            ["nice", "-n", str(cfg.nice)] if tool == "ours" else []) + plain(tool, *a, **k)
    cfg.competitors = [t for t in cfg.competitors.split(",") if t]
    run.setup()
    ensure_servers()
    checker = pprofcheck()
    cells = []
    try:
        for name in cfg.workloads.split(","):
            for hogs in map(int, cfg.hogs.split(",")):
                try:
                    cells.append(cell(cfg, name, hogs, checker))
                except Exception as e:
                    print(f"cell {name}/{hogs}: {e}", file=sys.stderr, flush=True)
    finally:
        run.cleanup()
    text = markdown(cells, cfg)
    print(text)
    if cfg.out:
        with open(cfg.out, "a") as f:
            f.write("\n" + text)


if __name__ == "__main__":
    main()
