"""ptrace events are answered while new processes are attached (issue 20):
a signal- and clone-heavy target under `--watch` is not held up by the
set-up of a churn of ~10 new labelled processes a second.

The target is bench/event_probe.c: it times its own raise(), thread and
fork round trips from inside (each waits in a ptrace-stop until the tracer
answers) and sums the time spent in rounds of 10 ms or more ("stalled"),
which a percentile of rounds understates (one long wait is one round).
An unlabelled probe runs at the same moment, untraced, as the host's own
baseline: a loaded 2-core host holds a sleepy process for milliseconds, at
times a second, without any profiler.  The bounds are generous (at load
8-16 on the 2 vCPUs this code measured 17-25 points more stalled than the
untraced probe and a signal p99 of 16-24 ms): they catch set-up on the
tracer thread, not a few ms.  A set-up read that
waits 100 ms (a starting process's mmap lock held a read of its maps
40-77 ms, other targets' events 132-458 ms: bench/RESULTS.md, issue 20),
planted in the maps read, fails this test on the code before that read
moved to the maps reader.  A host so loaded that the untraced probe
itself is held more than HOST_STALLED_MAX of its run skips the test: it
cannot tell the tracer's waits from its own.
About 12 s (normal build), 15 s (ASan)."""

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import BUILD  # noqa: E402
from test_watch import watch  # noqa: E402,F401

PROBE = BUILD / "bench" / "event_probe"
PROBE_SECONDS = 8
CHURN_PER_SECOND = 10
# Each churn process: a moment of work, then asleep long enough to be
# discovered, attached and set up (about 11 alive at a time).
CHURN_CODE = "import time\nt=time.time()\nwhile time.time()-t<0.02: pass\ntime.sleep(1)\n"
STALLED_SHARE_MAX = 0.40  # beyond the untraced probe's
SIGNAL_P99_MAX_MS = 50  # beyond the untraced probe's
ROUND_MAX_MS = 500  # beyond the untraced probe's longest
# A host that holds even the untraced, sleepy probe this long cannot tell
# a tracer that waits from one that waits for a CPU: at load 15-30 on the
# 2 vCPUs (other jobs), the untraced probe was stalled 20-38% of its run
# and the traced one 35-73%, set-up on the tracer or not.
HOST_STALLED_MAX = 0.15


def parse(out):
    ops = {m[0]: (int(m[1]), float(m[2]) / 1e3, float(m[3]) / 1e3)
           for m in re.findall(r"op=(\w+) n=(\d+) p50_us=[\d.]+ p99_us=([\d.]+) max_us=([\d.]+)", out)}
    stalled = re.search(r"stalled_ms=(\d+) run_ms=(\d+)", out)
    assert ops and stalled, out
    return ops, int(stalled[1]) / int(stalled[2])


class Churn(threading.Thread):
    """Starts CHURN_PER_SECOND labelled python processes a second."""

    def __init__(self, env):
        super().__init__()
        self.env, self.started, self.halt = env, 0, threading.Event()

    def run(self):
        live, t0 = [], time.monotonic()
        while not self.halt.is_set():
            live.append(subprocess.Popen([sys.executable, "-c", CHURN_CODE], env=self.env))
            self.started += 1
            live = [p for p in live if p.poll() is None]
            self.halt.wait(max(0, t0 + self.started / CHURN_PER_SECOND - time.monotonic()))
        for p in live:
            p.kill()
            p.wait()


def test_events_answered_while_new_processes_are_set_up(watch):  # noqa: F811
    assert PROBE.is_file(), f"{PROBE} not built"
    # No -v: its info lines would crowd the health lines (attached=) out of
    # the log's rate limit.
    watch.start_daemon("--no-export", "--health-interval", "1", interval=10, output=False,
                       verbose=False)
    churn = Churn(watch.env())
    churn.start()
    try:
        ours = subprocess.Popen([str(PROBE), str(PROBE_SECONDS), "--wait-traced"], env=watch.env(),
                                stdout=subprocess.PIPE, text=True)
        watch.procs.append(ours)
        assert ours.stdout.readline().strip() == "ready", watch.log()
        started_at = churn.started
        baseline = subprocess.run([str(PROBE), str(PROBE_SECONDS)], env=watch.env(labelled=False),
                                  stdout=subprocess.PIPE, text=True, timeout=PROBE_SECONDS + 60).stdout
        traced_out = ours.communicate(timeout=60)[0]
        churned = churn.started - started_at
    finally:
        churn.halt.set()
        churn.join()
    log = watch.log()
    watch.stop()
    (traced, traced_stalled), (untraced, untraced_stalled) = parse(traced_out), parse(baseline)
    attached = max(map(int, re.findall(r"health: .* attached=(\d+)", log)), default=0)
    report = (f"traced {traced} stalled {traced_stalled:.1%}; untraced {untraced} stalled "
              f"{untraced_stalled:.1%}; churn started {churned} during the probe, {attached} attached; "
              f"load {os.getloadavg()[0]:.1f}")
    print(report)
    if untraced_stalled > HOST_STALLED_MAX:
        pytest.skip(f"the host itself held an untraced process {untraced_stalled:.0%} of the time: {report}")
    # The churn was there to be set up, during the probe's run.
    assert churned >= PROBE_SECONDS * CHURN_PER_SECOND / 2, report
    assert attached >= churned / 2, report + "\n" + log[-3000:]
    assert traced_stalled - untraced_stalled < STALLED_SHARE_MAX, report
    assert traced["signal"][1] < untraced["signal"][1] + SIGNAL_P99_MAX_MS, report
    longest = max(v[2] for k, v in traced.items() if k in ("signal", "clone", "fork"))
    untraced_longest = max(v[2] for k, v in untraced.items() if k in ("signal", "clone", "fork"))
    assert longest < untraced_longest + ROUND_MAX_MS, report
