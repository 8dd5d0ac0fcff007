#!/usr/bin/env python3
"""Event-answer latency under process churn (issue 20; bench/RESULTS.md).

A labelled signal-heavy target (build/bench/event_probe) times its own
ptrace events from inside: raise() round trips, pthread_create() and
fork() until they return and until the new thread or child runs, and the
reap of a child that exits at once (event_probe.c).  It runs in four
configurations, one after the other:
  alone      no profiler, no churn;
  churn      no profiler, churn;
  watch      `splunk-profd --watch` over the probe, no churn;
  watch+churn  the same while --rate (10) labelled python3.11 processes a
             second are started (each busy ~20 ms, then asleep ~1 s, then
             gone), which the daemon discovers, attaches and sets up.
In the traced configurations an unlabelled probe runs at the same time,
for the last SECONDS, as the host's baseline at that moment (a loaded
host costs milliseconds without any profiler).
The daemon: `--watch --deny '!env:PROFD_BENCH=<token>' --no-export
--interval MS` (default 10); its CPU time and summary line are printed too.

usage: python3 bench/event_latency.py [--seconds S] [--interval MS] [--rate N]
           [--rounds R] [--configs alone,churn,watch,watch+churn] [--steps]
           BUILD [BUILD ...]   (as root)
Several BUILDs (say, before and after a change) are run interleaved, round
by round, on the same host; the probe is the first BUILD's.
"""
import argparse, os, re, signal, subprocess, sys, tempfile, threading, time

parser = argparse.ArgumentParser()
parser.add_argument("--seconds", type=float, default=10)
parser.add_argument("--interval", default="10")
parser.add_argument("--rate", type=float, default=10)
parser.add_argument("--rounds", type=int, default=1)
parser.add_argument("--configs", default="alone,churn,watch,watch+churn")
parser.add_argument("--python", default="/usr/bin/python3.11", help="the churn's interpreter")
parser.add_argument("--steps", action="store_true",
                    help="run the daemon with -vv and sum its late answers' wall time by step")
parser.add_argument("builds", nargs="+")
args = parser.parse_args()
seconds, interval, rate = args.seconds, args.interval, args.rate
PROBE = os.path.join(args.builds[0], "bench", "event_probe")
PYTHON = args.python
CHILD = "import time\nt=time.time()\nwhile time.time()-t<0.02: pass\ntime.sleep(1)\n"
token = f"i20-{os.getpid()}-{time.monotonic_ns()}"
env = {k: v for k, v in os.environ.items() if not k.startswith(("SPLUNK_PROFILER", "OTEL_"))}
tenv = dict(env, SPLUNK_PROFILER_ENABLED="true", PROFD_BENCH=token)


class Churn:
    """Starts `rate` labelled python processes a second until stopped."""

    def __init__(self, rate):
        self.rate, self.started, self.stop = rate, 0, threading.Event()
        self.thread = threading.Thread(target=self.run)

    def run(self):
        live, t0 = [], time.monotonic()
        while not self.stop.is_set():
            live.append(subprocess.Popen([PYTHON, "-c", CHILD], env=tenv))
            self.started += 1
            live = [p for p in live if p.poll() is None]
            ahead = t0 + self.started / self.rate - time.monotonic()
            if ahead > 0:
                self.stop.wait(ahead)
        for p in live:
            p.wait()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def parse(out):
    ops = {m[0]: (int(m[1]), float(m[2]), float(m[3]), float(m[4]))
           for m in re.findall(r"op=(\w+) n=(\d+) p50_us=([\d.]+) p99_us=([\d.]+) max_us=([\d.]+)", out)}
    per_s = re.search(r"raise_per_s=(\d+)", out)
    return ops, int(per_s[1]) if per_s else None


def probe(traced):
    """The probe's results; traced: also those of an unlabelled probe run
    at the same time, the host's own baseline at that moment."""
    argv = [PROBE, str(seconds)]
    if not traced:
        return parse(subprocess.run(argv, env=tenv, stdout=subprocess.PIPE, text=True,
                                    timeout=seconds + 120).stdout), None
    ours = subprocess.Popen(argv + ["--wait-traced"], env=tenv, stdout=subprocess.PIPE, text=True)
    assert ours.stdout.readline().strip() == "ready"
    baseline = subprocess.run(argv, env=env, stdout=subprocess.PIPE, text=True, timeout=seconds + 120).stdout
    return parse(ours.communicate(timeout=seconds + 120)[0]), parse(baseline)


def daemon(build):
    err = tempfile.TemporaryFile(mode="w+")
    d = subprocess.Popen([os.path.join(build, "splunk-profd"), "--watch", "--deny", f"!env:PROFD_BENCH={token}",
                          "--no-export", "--interval", interval, "--health-interval", "3600"]
                         + (["-vv"] if args.steps else []),
                         stdout=subprocess.DEVNULL, stderr=err, env=env)
    return d, err


def cpu_ms(pid):
    """The daemon's user+system CPU time so far (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 // os.sysconf("SC_CLK_TCK")


def stop(d, err):
    cpu = cpu_ms(d.pid)
    d.send_signal(signal.SIGTERM)
    d.wait(30)
    err.seek(0)
    text = err.read()
    summary = re.search(r"summary: .*", text)
    return f"daemon_cpu_ms={cpu} " + (summary[0] if summary else "") + late_steps(text)


def late_steps(text):
    """From -vv: the late answers (event_pump.c) and, per step, the sum and
    the largest single wall time they were held back by, in ms."""
    if not args.steps:
        return ""
    late, by_step = 0, {}
    for parts in re.findall(r"answered up to \d+ us late .*?by step: (.*)", text):
        late += 1
        for label, us in re.findall(r"([^,]+?) (\d+) us(?:,|$)", parts):
            total, most = by_step.get(label.strip(), (0, 0))
            by_step[label.strip()] = (total + int(us), max(most, int(us)))
    steps = sorted(by_step.items(), key=lambda kv: -kv[1][0])
    return f"\n  late answers={late}; by step, sum/max ms: " + ", ".join(
        f"{label} {total / 1000:.0f}/{most / 1000:.0f}" for label, (total, most) in steps) + setup_steps(text)


def setup_steps(text):
    """From -vv: what each new process's set-up cost the tracer thread
    (profiled_target.c's "set up in" line), per part, p50/p99/max in µs."""
    parts = {}
    for line in re.findall(r"set up in (\d+) us \((.*?)\)\s*$", text, re.M):
        parts.setdefault("total", []).append(int(line[0]))
        for label, us in re.findall(r"([^,(]+?) (\d+) us", line[1]):
            parts.setdefault(label.strip(), []).append(int(us))
    if not parts:
        return ""
    def pct(v, q):
        v = sorted(v)
        return v[min(len(v) - 1, int(q * len(v)))]
    return f"\n  set-ups={len(parts['total'])}; on the tracer, p50/p99/max us: " + ", ".join(
        f"{label} {pct(v, .5)}/{pct(v, .99)}/{max(v)}" for label, v in parts.items())


def run(name, build, traced, churn):
    load = os.getloadavg()
    d = err = None
    if traced:
        d, err = daemon(build)
    try:
        if churn:
            with Churn(rate) as c:
                time.sleep(1)
                result = probe(traced)
            started = c.started
        else:
            result, started = probe(traced), 0
    finally:
        summary = stop(d, err) if d else ""
    (ops, per_s), baseline = result
    print(f"[{name}{' ' + build if traced else ''}] load_before={load[0]:.2f} churn_started={started} raise_per_s={per_s}")
    for op, (n, p50, p99, mx) in ops.items():
        print(f"  {op:7s} n={n:6d} p50_us={p50:9.1f} p99_us={p99:9.1f} max_us={mx:9.1f}")
    if baseline:
        print(f"  untraced probe at the same time: raise_per_s={baseline[1]}")
        for op, (n, p50, p99, mx) in baseline[0].items():
            print(f"    {op:7s} n={n:6d} p50_us={p50:9.1f} p99_us={p99:9.1f} max_us={mx:9.1f}")
    if summary:
        line, _, steps = summary.partition("\n")
        print("  " + line[:300] + ("\n" + steps if steps else ""))
    sys.stdout.flush()


print(f"builds={args.builds} seconds={seconds} interval_ms={interval} churn_rate={rate}/s uptime: "
      + subprocess.run(["uptime"], stdout=subprocess.PIPE, text=True).stdout.strip())
configs = {"alone": (False, False), "churn": (False, True), "watch": (True, False), "watch+churn": (True, True)}
for round_ in range(args.rounds):
    for name in args.configs.split(","):
        traced, churn = configs[name]
        for build in args.builds if traced else args.builds[:1]:
            run(name, build, traced, churn)
