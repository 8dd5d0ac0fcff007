"""CPU profiles on a busy host (issue 16): a thread woken from epoll_wait that
waits for a CPU is not `running`, run-queue time is never charged to a
stack, and the CPU values agree with the kernel's accounting.

The host is made busy with 3 CPU hogs (the machine has 2 cores); they are
killed at teardown and, as a safety net, end by themselves after 120 s.
Nothing here is timed: the assertions compare shares, with margins wide
enough for a host that other work also loads."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import TARGET_DIR

SPLIT = TARGET_DIR / "target_split"
HOGS = 3
DURATION = 10


@pytest.fixture
def hogs():
    hog = "import time\nend = time.monotonic() + 120\nwhile time.monotonic() < end: pass"
    procs = [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(HOGS)]
    yield procs
    for proc in procs:
        proc.kill()
    for proc in procs:
        proc.wait()


def split_now(target):
    """The target's own CPU clock split: (compute_ns, other_ns, tid)."""
    target.proc.stdin.write(b"\n")
    target.proc.stdin.flush()
    m = re.fullmatch(r"compute_ns=(\d+) other_ns=(\d+) tid=(\d+)", target.readline())
    assert m, "target_split printed no split"
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def on_cpu_ns(pid, tid):
    return int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])


def cpu_weights(prof):
    """(weight per sample, how): the cpu value when the profile has one,
    else 1 per `running` sample (what the old README told users to do for
    CPU: -tagfocus=thread.state=running)."""
    types = [t for t, _ in prof.data["sample_type"]]
    if "cpu" in types:
        i = types.index("cpu")
        return [s["values"][i] for s in prof.samples], "cpu"
    return [1 if s["labels"].get("thread.state") == ["running"] else 0 for s in prof.samples], "running"


def classify(sample):
    names = [f["function"] for f in sample["frames"]]
    if "split_compute" in names:
        return "compute"
    if any("epoll_wait" in n for n in names):
        return "epoll_wait"
    return "other"


def profile_under_load(profd, start_target, mode, extra=()):
    target = start_target([SPLIT, mode])
    c0, o0, tid = split_now(target)
    cpu0 = on_cpu_ns(target.pid, tid)
    result, prof = profd.profile([target.pid], duration=DURATION, interval=10, extra=extra)
    c1, o1, _ = split_now(target)
    cpu1 = on_cpu_ns(target.pid, tid)
    worker = [s for s in prof.samples if s["num_labels"]["thread.os.id"] == [tid]]
    return result, prof, worker, (c1 - c0, o1 - o0), cpu1 - cpu0


def test_loaded_host_cpu_split_matches_the_threads_own_clock(profd, start_target, hogs):
    result, prof, worker, (compute, other), _ = profile_under_load(profd, start_target, "epoll")
    truth = compute / (compute + other)
    weights, how = cpu_weights(prof)
    by_sample = dict(zip(map(id, prof.samples), weights))
    totals = {"compute": 0, "epoll_wait": 0, "other": 0}
    for s in worker:
        totals[classify(s)] += by_sample[id(s)]
    total = sum(totals.values())
    assert total > 0, prof.thread_names()
    measured = totals["compute"] / total
    detail = (
        f"own clock: compute {truth:.1%}; profile ({how}): compute {measured:.1%}, "
        f"epoll_wait {totals['epoll_wait'] / total:.1%}, other {totals['other'] / total:.1%}; "
        f"{prof.summary_line}"
    )
    print(detail)
    # Today's variance under 3 hogs on 2 cores is about ±10 points (bench/RESULTS.md);
    # the old per-thread reading was 75 points off (9.5% compute against 85%).
    assert abs(measured - truth) <= 0.15, detail


def test_runnable_thread_is_labelled_runnable_and_cpu_sums_to_its_clock(profd, start_target, hogs):
    # The stops' runnable label (schedstat), which Python targets use; a
    # native target is kernel-sampled by default (tests/test_cpu_perf.py),
    # where a tick without a kernel sample is labelled from the same
    # schedstat, but samples queued while the tracer lags (an ASan daemon)
    # label later ticks running: 27% runnable in one ASan run.
    result, prof, worker, _, cpu_delta = profile_under_load(profd, start_target, "spin", ("--sampler=ptrace",))
    types = [t for t, _ in prof.data["sample_type"]]
    assert types == ["samples", "cpu", "wall"], prof.data["sample_type"]
    assert prof.data["default_sample_type"] == "cpu"
    states = [s["labels"]["thread.state"][0] for s in worker]
    runnable = states.count("runnable") / len(states)
    running = states.count("running") / len(states)
    detail = f"runnable {runnable:.0%} running {running:.0%} of {len(states)}; {prof.summary_line}"
    print(detail)
    # 4 CPU-bound processes on 2 cores: the spinner waits for a CPU at
    # least half the time (more when other work loads the host, and when
    # the tracer's own wake-up preempts it), and it never blocks.
    assert runnable >= 0.3 and runnable + running >= 0.98, detail
    cpu = types.index("cpu")
    assert all(s["values"][cpu] == 0 for s in worker if s["labels"]["thread.state"] == ["blocked"])
    cpu_sum = sum(s["values"][cpu] for s in worker)
    # The profile covers the sampling window, a little less than the
    # thread's clock was read around (attach, the first tick's baseline).
    share = cpu_sum / cpu_delta
    print(f"cpu values {cpu_sum / 1e6:.0f} ms, thread's clock {cpu_delta / 1e6:.0f} ms")
    assert 0.75 <= share <= 1.02, f"cpu sum {cpu_sum} vs thread clock {cpu_delta}; {detail}"
    wall = types.index("wall")
    wall_sum = sum(s["values"][wall] for s in worker)
    assert 0.8 * prof.data["duration_nanos"] <= wall_sum <= 1.05 * prof.data["duration_nanos"], (
        f"wall sum {wall_sum} vs duration {prof.data['duration_nanos']}"
    )


def test_outputs_show_cpu_by_default_and_wall_with_the_flag(profd, targets, start_target, tmp_path):
    """target_epoll: two threads blocked in epoll_wait/read, one spinning.
    The collapsed output counts CPU by default (the blocked stacks carry
    none, so they are left out) and every sample's wall time with --wall."""
    target = start_target(targets.epoll)
    stacks = {}
    for flags in ((), ("--wall",)):
        out = tmp_path / f"collapsed{len(flags)}.txt"
        result = profd.run("--pid", target.pid, "--duration", 2, "--interval", 10, *flags, output=out)
        assert result.returncode == 0, str(result)
        lines = [l.rsplit(" ", 1) for l in out.read_text().splitlines() if l]
        stacks[flags] = {stack: int(value) for stack, value in lines}
    cpu, wall = stacks[()], stacks[("--wall",)]
    assert cpu and not any("epoll_wait" in s for s in cpu), cpu
    assert any("epoll_wait" in s for s in wall), wall
    # Wall: about 2 s per thread, in ns; CPU: at most the spinner's 2 s.
    assert sum(wall.values()) > 1.5 * sum(cpu.values()), (sum(wall.values()), sum(cpu.values()))
    target.proc.stdin.close()


BUSY_THREADS_PY = """
import threading, time
def spin():
    end = time.monotonic() + 60
    while time.monotonic() < end:
        pass
threads = [threading.Thread(target=spin) for _ in range(8)]
for t in threads: t.start()
print("ready", flush=True)
for t in threads: t.join()
"""


def test_a_tracer_that_falls_behind_says_by_how_much(profd, start_target, tmp_path):
    """Issue 16 item 5: 8 busy threads at 1 ms ask for 8 000 stops a second,
    more than 2 cores give: the run ends with one warning whose counts are
    the summary's, so the user knows the profile covers only part of the
    time.  (Should the host keep up, no warning may appear.)"""
    script = tmp_path / "busy8.py"
    script.write_text(BUSY_THREADS_PY)
    target = start_target([sys.executable, script])
    result, _ = profd.profile([target.pid], duration=2, interval=1)
    s = result.summary
    warnings = [l for l in result.stderr.splitlines() if "the sampler fell behind" in l]
    missed = s["ticks_asked"] - s["ticks_taken"]
    if missed * 20 >= s["ticks_asked"] and missed >= 10:
        assert len(warnings) == 1, result.stderr
        m = re.search(r"(\d+) of (\d+) ticks taken \((\d+)%\), (\d+) of (\d+) thread-samples", warnings[0])
        assert m, warnings[0]
        taken, asked, percent, samples, samples_asked = map(int, m.groups())
        assert (taken, asked) == (s["ticks_taken"], s["ticks_asked"]), warnings[0]
        assert (samples, samples_asked) == (s["samples"], s["samples_asked"]), warnings[0]
        assert abs(percent - 100 * taken / asked) <= 1, warnings[0]
    else:
        assert not warnings, result.stderr
