"""Python threads that block, on every interpreter of tests/conftest.py's
PYTHONS table (tests/python_targets/blockers.py):

  * in a container: the target runs in its own PID namespace, started as a
    container runtime starts it (`unshare --pid --fork --mount-proc`), so
    every thread id it stores is not the one the profiler sees;
  * started after the profiler attached, then blocked for good: their
    first sample may come before the Python side knows them.

Each thread blocks on one known line; its samples must show that line in
its Python frames, and its threading name as thread.name.
"""

import collections
import json
import shutil
import time
from pathlib import Path

import pytest

from conftest import PYTHON_ENV, PYTHON_NAMES, PYTHON_TARGETS, Target, python_source_lines, wait_traced

BLOCKERS = PYTHON_TARGETS / "blockers.py"
LINES = python_source_lines(BLOCKERS)
WORKERS = {"waits-on-event": ("on_event", "event_wait"), "sleeps-an-hour": ("sleep_long", "sleep_long"),
           "waits-on-lock": ("on_lock", "lock_acquire")}
MAIN = {"MainThread": ("main", "main_read")}
MIN_SHARE = 0.95
MIN_SAMPLES = 30  # of ~200 in 2 s at 100 Hz: a loaded 2-vCPU host takes fewer ticks


def unshared(interpreter, script, *args):
    """argv running script under interpreter in a new PID and mount
    namespace (procfs remounted), like a container; the interpreter is the
    namespace's pid 1 and dies with unshare."""
    unshare = ["/usr/bin/unshare", "--pid", "--fork", "--kill-child"]
    if interpreter.root:  # the chroot's procfs, mounted in the new namespace
        unshare.append(f"--mount-proc={interpreter.root}/proc")
    else:
        unshare.append("--mount-proc")
    return [*unshare, *interpreter.argv(script, *args)]


def only_child(pid, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        if children:
            assert len(children) == 1, children
            return int(children[0])
        time.sleep(0.02)
    pytest.fail(f"{pid} started no child within {timeout}s")


def our_tids(pid):
    """{tid inside pid's PID namespace: our tid} for every thread of pid."""
    tids = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        status = (task / "status").read_text()
        nspid = next(l for l in status.splitlines() if l.startswith("NSpid:"))
        tids[int(nspid.split()[-1])] = int(task.name)
    return tids


def py_frames(sample):
    return [f for f in sample["frames"] if f["address"] == 0]


def show(sample):
    return " < ".join(
        f"{f['function']}:{f['line']}" if f["address"] == 0 else f"[n]{f['function'] or hex(f['address'])}"
        for f in sample["frames"][:12]
    )


def check_threads(prof, info, tids, script, expected, what):
    """Each thread of `expected` ({name: (function, line marker)}) has
    MIN_SAMPLES samples, >= MIN_SHARE of which show that frame and that
    thread.name; tids maps the target's thread ids to ours."""
    problems = []
    for name, (function, marker) in expected.items():
        tid = tids[info["threads"][name]["native_id"]]
        samples = [s for s in prof.samples if s["num_labels"].get("thread.os.id") == [tid]]
        if len(samples) < MIN_SAMPLES:
            problems.append(f"{name} (tid {tid}): only {len(samples)} samples")
            continue
        want = (function, str(script), LINES[marker])
        framed = [s for s in samples if want in [(f["function"], f["file"], f["line"]) for f in py_frames(s)]]
        named = [s for s in samples if s["labels"].get("thread.name") == [name]]
        print(f"{what}: {name}: {len(framed)}/{len(samples)} with the frame, {len(named)} named")
        if len(framed) < MIN_SHARE * len(samples):
            bad = collections.Counter(show(s) for s in samples if s not in framed).most_common(2)
            problems.append(f"{name}: {len(framed)}/{len(samples)} samples show {want}; others: {bad}")
        if len(named) < MIN_SHARE * len(samples):
            labels = collections.Counter(str(s["labels"].get("thread.name")) for s in samples)
            problems.append(f"{name}: {len(named)}/{len(samples)} samples named {name!r}: {dict(labels)}")
    assert not problems, f"{what}:\n  " + "\n  ".join(problems) + f"\n{prof.summary_line}"


@pytest.mark.parametrize("name", PYTHON_NAMES)
def test_target_in_its_own_pid_namespace(name, pythons, profd):
    interpreter = pythons[name]
    seen = interpreter.install([BLOCKERS])
    target = Target(unshared(interpreter, seen / BLOCKERS.name, "now"), env=PYTHON_ENV, cwd="/")
    try:
        target.wait_ready(timeout=30)
        info = json.loads(target.readline(timeout=10))
        assert info["version"].startswith("%d.%d." % interpreter.minor), (interpreter, info["version"])
        assert info["pid"] == 1, f"not in its own PID namespace: {info}"
        pid = only_child(target.pid)
        tids = our_tids(pid)
        assert all(ns != ours for ns, ours in tids.items()), tids
        result, prof = profd.profile([pid], duration=2, interval=10)
        assert result.summary["errors"] == 0, result.summary
        check_threads(prof, info, tids, seen / BLOCKERS.name, {**MAIN, **WORKERS},
                      f"{interpreter} in its own PID namespace")
    finally:
        target.kill()
        shutil.rmtree(interpreter.host_path(seen), ignore_errors=True)


@pytest.mark.parametrize("name", PYTHON_NAMES)
def test_threads_started_after_attach_then_blocked(name, pythons, profd):
    interpreter = pythons[name]
    seen = interpreter.install([BLOCKERS])
    target = Target(interpreter.argv(seen / BLOCKERS.name), env=PYTHON_ENV, cwd="/")
    try:
        target.wait_ready(timeout=30)
        daemon = profd.start("--pid", target.pid, "--duration", 4, "--interval", 10, "--wall")
        wait_traced(target.pid)
        time.sleep(0.5)  # a few ticks with the main thread alone
        target.proc.stdin.write(b"start\n")
        target.proc.stdin.flush()
        info = json.loads(target.readline(timeout=10))
        result = profd.finish(daemon)
        assert result.returncode == 0, str(result)
        prof = profd.read_profile(result.output)
        prof.summary_line = next((l for l in result.stderr.splitlines() if "summary:" in l), "")
        identity = {t["native_id"]: t["native_id"] for t in info["threads"].values()}
        check_threads(prof, info, identity, seen / BLOCKERS.name, WORKERS,
                      f"{interpreter}: threads started after attach")
    finally:
        target.kill()
        shutil.rmtree(interpreter.host_path(seen), ignore_errors=True)


@pytest.mark.parametrize("name", ["3.9-bullseye", "3.14-forky"])
def test_native_thread_stack_is_reused_while_it_sleeps(name, pythons, profd):
    """A thread no refresh of the Python thread map finds runs no Python
    code: its blocked stack is copied a few times at most, not every tick."""
    interpreter = pythons[name]
    seen = interpreter.install([BLOCKERS])
    target = Target(interpreter.argv(seen / BLOCKERS.name, "native"), env=PYTHON_ENV, cwd="/")
    try:
        target.wait_ready(timeout=30)
        tids = sorted(int(t.name) for t in Path(f"/proc/{target.pid}/task").iterdir())
        assert len(tids) == 2, tids
        result, prof = profd.profile([target.pid], duration=2, interval=10, extra=["--wall"])
        summary = result.summary
        native = [s for s in prof.samples if s["num_labels"].get("thread.os.id") == [tids[1]]]
        assert len(native) >= MIN_SAMPLES, f"{len(native)} samples of the native thread: {summary}"
        assert not any(f["address"] == 0 for s in native for f in s["frames"]), show(native[0])
        print(f"{interpreter}: native thread, {len(native)} samples; summary blocked={summary['blocked']} reused={summary['reused']}")
        # Two threads blocked for good: each copied once, plus a few re-reads.
        assert summary["blocked"] <= 8, f"blocked stacks copied {summary['blocked']} times: {summary}"
    finally:
        target.kill()
        shutil.rmtree(interpreter.host_path(seen), ignore_errors=True)
