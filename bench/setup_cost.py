#!/usr/bin/env python3
"""--watch set-up cost per idle python3.11 target (issue 15; bench/RESULTS.md).

Starts N labelled idle python3.11 processes (bench/idle_threads.py, THREADS
threads each), one `splunk-profd --watch --no-export -vv` over them, waits
until all are traced plus 5 s, then prints the per-target set-up times of
the daemon's "set up in" debug lines (first target, median of the rest)
and the daemon's VmRSS (median of 5 reads 1 s apart) and RssAnon.
Run it for N=1 and N=21: (RSS21 - RSS1) / 20 is the cost per process.

usage: python3 bench/setup_cost.py BUILD N [THREADS]   (as root)
"""
import os, re, signal, statistics, subprocess, sys, tempfile, time

build, n = sys.argv[1], int(sys.argv[2])
threads = sys.argv[3] if len(sys.argv) > 3 else "2"
BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "idle_threads.py")
token = f"i15-{os.getpid()}-{time.monotonic_ns()}"
env = {k: v for k, v in os.environ.items() if not k.startswith(("SPLUNK_PROFILER", "OTEL_"))}
tenv = dict(env, SPLUNK_PROFILER_ENABLED="true", PROFD_BENCH=token)
procs = []


def status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])


try:
    for _ in range(n):
        procs.append(subprocess.Popen(["/usr/bin/python3.11", BENCH, threads], stdout=subprocess.PIPE,
                                      text=True, env=tenv))
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    err = tempfile.TemporaryFile(mode="w+")
    load0 = os.getloadavg()
    d = subprocess.Popen([os.path.join(build, "splunk-profd"), "--watch", "--deny", f"!env:PROFD_BENCH={token}",
                          "--no-export", "--interval", "1000", "--health-interval", "3600", "-vv"],
                         stdout=subprocess.DEVNULL, stderr=err, env=env)
    t0 = time.monotonic()
    while sum(status(p.pid, "TracerPid") != 0 for p in procs) < n:
        assert time.monotonic() - t0 < 60 and d.poll() is None
        time.sleep(0.05)
    attach_s = time.monotonic() - t0
    time.sleep(5)
    rss = [status(d.pid, "VmRSS")]
    for _ in range(4):
        time.sleep(1)
        rss.append(status(d.pid, "VmRSS"))
    anon, hwm = status(d.pid, "RssAnon"), status(d.pid, "VmHWM")
    d.send_signal(signal.SIGTERM)
    d.wait(30)
    err.seek(0)
    log = err.read()
    setups = [(int(m[0]), int(m[1]), int(m[2]), int(m[3])) for m in
              re.findall(r"PID (\d+): set up in (\d+) us \(symbols and unwinder (\d+) us, Python (\d+) us\)", log)]
    ours = {p.pid for p in procs}
    setups = [s for s in setups if s[0] in ours]
    py = [s[3] for s in setups]
    tot = [s[1] for s in setups]
    print(f"build={build} n={n} threads={threads} attach_all_s={attach_s:.2f} load_before={load0}"
          f" load_after={os.getloadavg()}")
    print(f"  set-up us: first total={tot[0] if tot else None} python={py[0] if py else None};"
          f" rest median total={statistics.median(tot[1:]) if len(tot) > 1 else None}"
          f" python={statistics.median(py[1:]) if len(py) > 1 else None}"
          f" symbols={statistics.median([s[2] for s in setups[1:]]) if len(setups) > 1 else None}")
    print(f"  python us each: {py}")
    print(f"  RSS kB median={statistics.median(rss)} anon={anon} hwm={hwm}")
    if len(setups) != n:
        print("  WARNING: setups", len(setups), "of", n)
        print(log[-2000:])
finally:
    for p in procs:
        p.kill()
        p.wait()
