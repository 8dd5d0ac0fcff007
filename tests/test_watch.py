"""Daemon mode (issue 6): `splunk-profd --watch`, fork following, release
at exec, SIGHUP reload, SIGTERM, and the systemd unit.

Real processes only.  Every daemon here runs with
`--deny '!env:PROFD_WATCH_TEST=<token>'`, so it touches only the processes
this test started (other labelled processes on the host are left alone).
"""

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from conftest import BUILD, PROFD, REPO, parse_summary, proc_status

BUSY = "import time\nt=time.time()\nwhile time.time()-t<{secs}: pass\n"


def tracer_of(pid):
    status = proc_status(pid)
    return None if status is None else int(status["TracerPid"])


def traced_by(pid, daemon):
    """pid is traced by a thread of the daemon (TracerPid is its tracer thread)."""
    tracer = tracer_of(pid)
    return bool(tracer) and Path(f"/proc/{daemon.pid}/task/{tracer}").exists()


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return time.monotonic()
        time.sleep(0.02)
    pytest.fail(f"timed out after {timeout}s waiting for {what}")


def no_thread_traced_or_stopped(pid):
    for task in Path(f"/proc/{pid}/task").iterdir():
        status = proc_status(f"{pid}/task/{task.name}")
        if status and (int(status["TracerPid"]) != 0 or status["State"][0] in "tT"):
            return False
    return True


class Watch:
    def __init__(self, tmp_path, read_profile):
        self.tmp_path, self.read_profile = tmp_path, read_profile
        self.token = uuid.uuid4().hex
        self.procs = []
        self.daemon = None

    def env(self, labelled=True, **extra):
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPLUNK_PROFILER")}
        env["PROFD_WATCH_TEST"] = self.token
        if labelled:
            env["SPLUNK_PROFILER_ENABLED"] = "true"
        env.update(extra)
        return env

    def start_daemon(self, *args, env=None, interval=50, output=True, verbose=True):
        """output=False: no --output (the unit's way: nothing accumulates).
        verbose=False: no -v, whose info lines would crowd the health lines
        out of the log's rate limit."""
        self.output = self.tmp_path / "watch.pb.gz" if output else None
        self.stderr = open(self.tmp_path / "daemon.err", "w+")
        daemon_env = {k: v for k, v in os.environ.items() if not k.startswith(("SPLUNK_PROFILER", "OTEL_"))}
        daemon_env.update(env or {})
        argv = [str(PROFD), "--watch", "--deny", f"!env:PROFD_WATCH_TEST={self.token}",
                *(["-v"] if verbose else []), *map(str, args)]
        if output:
            argv += ["--output", str(self.output)]
        if interval:
            argv += ["--interval", str(interval)]
        self.daemon = subprocess.Popen(argv, stderr=self.stderr, env=daemon_env)
        time.sleep(0.3)
        assert self.daemon.poll() is None, self.log()
        return self.daemon

    def spawn(self, code, labelled=True, **extra):
        proc = subprocess.Popen([sys.executable, "-c", code], env=self.env(labelled, **extra))
        self.procs.append(proc)
        return proc

    def log(self):
        self.stderr.seek(0)
        return self.stderr.read()

    def stop(self):
        self.daemon.send_signal(signal.SIGTERM)
        assert self.daemon.wait(timeout=30) == 0, self.log()
        assert "runtime error" not in self.log() and "Sanitizer" not in self.log(), self.log()
        return self.read_profile(self.output) if self.output else None

    def cleanup(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        if self.daemon and self.daemon.poll() is None:
            self.daemon.kill()
            self.daemon.wait()


@pytest.fixture
def watch(tmp_path, read_profile):
    w = Watch(tmp_path, read_profile)
    yield w
    w.cleanup()


def pids_in(profile):
    return {int(v) for s in profile.samples for v in s.get("num_labels", {}).get("process.pid", [])}


def periods_in(profile):
    return [int(s["num_labels"]["source.event.period"][0]) for s in profile.samples
            if "source.event.period" in s.get("num_labels", {})]


def test_labelled_picked_up_within_a_second_unlabelled_ignored_exit_dropped(watch):
    daemon = watch.start_daemon()
    started = time.monotonic()
    labelled = watch.spawn(BUSY.format(secs=3))
    unlabelled = watch.spawn(BUSY.format(secs=3), labelled=False)
    seen = wait_for(lambda: traced_by(labelled.pid, daemon), 5, "the labelled process traced")
    assert seen - started < 1.0 + 0.3, f"discovered after {seen - started:.2f}s"
    time.sleep(0.5)
    assert tracer_of(unlabelled.pid) == 0
    labelled.wait(timeout=10)
    wait_for(lambda: f"PID {labelled.pid} exited" in watch.log(), 2, "the exit logged")
    unlabelled.wait(timeout=10)
    profile = watch.stop()
    assert labelled.pid in pids_in(profile)
    assert unlabelled.pid not in pids_in(profile)
    assert "summary: targets=0 " in watch.log(), watch.log()  # exited target dropped


FORKER = textwrap.dedent("""
    import os, sys, time
    def busy(secs):
        t = time.time()
        while time.time() - t < secs: pass
    time.sleep(1.0)  # let the daemon find us first
    kids = []
    for i in range(2):
        pid = os.fork()
        if pid == 0:
            busy(2.5); os._exit(0)
        kids.append(pid)
    print(" ".join(map(str, kids)), flush=True)
    busy(2.5)
    for k in kids: os.waitpid(k, 0)
""")


def test_forked_children_are_profiled_with_their_own_pid(watch):
    daemon = watch.start_daemon()
    parent = subprocess.Popen([sys.executable, "-c", FORKER], env=watch.env(), stdout=subprocess.PIPE, text=True)
    watch.procs.append(parent)
    kids = [int(p) for p in parent.stdout.readline().split()]
    assert len(kids) == 2
    for kid in kids:
        wait_for(lambda: traced_by(kid, daemon) or tracer_of(kid) is None, 2, f"child {kid} traced")
    time.sleep(1.0)
    parent.wait(timeout=20)
    profile = watch.stop()
    assert {parent.pid, *kids} <= pids_in(profile), (pids_in(profile), watch.log())


ZYGOTE = textwrap.dedent("""
    import os, signal, sys, threading, time
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reap themselves
    threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
    def busy(secs):
        t = time.time()
        while time.time() - t < secs: pass
    time.sleep(1.0)  # let the daemon find us first
    for i in range(100):
        pid = os.fork()
        if pid == 0:
            busy(0.3); os._exit(0)
        print(pid, flush=True)
        busy(0.02)  # running, so that ticks interrupt it, sometimes in fork
        time.sleep(0.03)
""")


def test_fork_storm_keeps_sampling_every_child(watch):
    """A PTRACE_INTERRUPT that lands while the parent forks is consumed by
    the fork stop: no interrupt stop follows.  The daemon once kept waiting
    for it, so the parent was never sampled again and every later tick
    waited 200 ms for that stop: most children of a busy pre-fork server
    were then never sampled (47% in the soak test)."""
    watch.start_daemon(interval=20)
    parent = subprocess.Popen([sys.executable, "-c", ZYGOTE], env=watch.env(), stdout=subprocess.PIPE, text=True)
    watch.procs.append(parent)
    kids = [int(line) for line in parent.stdout]
    parent.wait(timeout=30)
    time.sleep(0.5)
    profile = watch.stop()
    missed = set(kids) - pids_in(profile)
    assert len(kids) == 100
    assert len(missed) <= 3, (sorted(missed), watch.log()[-2000:])
    assert parent.pid in pids_in(profile)


EXECER = textwrap.dedent("""
    import os, sys, time
    time.sleep(1.0)
    pid = os.fork()
    if pid == 0:
        env = {k: v for k, v in os.environ.items() if k != "SPLUNK_PROFILER_ENABLED"}
        os.execve("/bin/sleep", ["sleep", "30"], env)
    print(pid, flush=True)
    time.sleep(30)
""")


def test_exec_into_unlabelled_program_releases_the_child(watch):
    daemon = watch.start_daemon()
    parent = subprocess.Popen([sys.executable, "-c", EXECER], env=watch.env(), stdout=subprocess.PIPE, text=True)
    watch.procs.append(parent)
    wait_for(lambda: traced_by(parent.pid, daemon), 5, "the parent traced")
    child = int(parent.stdout.readline())
    wait_for(lambda: (Path(f"/proc/{child}/comm").read_text().strip() == "sleep"), 5, "the exec")
    wait_for(lambda: tracer_of(child) == 0, 2, "the child released")
    time.sleep(0.5)
    assert no_thread_traced_or_stopped(child)
    assert traced_by(parent.pid, daemon)
    os.kill(child, 0)  # still running
    watch.stop()
    assert no_thread_traced_or_stopped(parent.pid)
    assert no_thread_traced_or_stopped(child)
    os.kill(child, signal.SIGKILL)


def test_sighup_changes_interval_keeps_targets_sigterm_releases(watch, tmp_path):
    config = tmp_path / "profd.env"
    config.write_text("SPLUNK_PROFILER_CALL_STACK_INTERVAL=100\n")
    daemon = watch.start_daemon("--config", config, interval=None)
    idle = watch.spawn("import threading, time\n"
                       "threading.Thread(target=time.sleep, args=(60,)).start()\n"
                       "time.sleep(60)\n")
    busy = watch.spawn(BUSY.format(secs=60))
    for p in (idle, busy):
        wait_for(lambda: traced_by(p.pid, daemon), 5, "targets traced")
    time.sleep(1.0)
    config.write_text("# reloaded\nSPLUNK_PROFILER_CALL_STACK_INTERVAL=20\n")
    daemon.send_signal(signal.SIGHUP)
    wait_for(lambda: "reloaded: interval_ms=20" in watch.log(), 3, "the reload")
    time.sleep(1.0)
    for p in (idle, busy):
        assert traced_by(p.pid, daemon), "target lost on reload"
    profile = watch.stop()
    periods = set(periods_in(profile))
    assert {100, 20} <= periods, periods
    for p in (idle, busy):
        assert no_thread_traced_or_stopped(p.pid)
        assert p.poll() is None


def test_sighup_bad_config_warns_keeps_settings_sigterm_works(watch, tmp_path):
    """A SIGHUP re-read of a FIFO (old code: the main thread blocked in
    open(), so SIGTERM was then ignored), of a NUL or of a directory: one
    warning each, the old settings kept, SIGTERM still stops at once."""
    config = tmp_path / "profd.env"
    config.write_text("SPLUNK_PROFILER_CALL_STACK_INTERVAL=100\n")
    daemon = watch.start_daemon("--config", config, interval=None)
    busy = watch.spawn(BUSY.format(secs=60))
    wait_for(lambda: traced_by(busy.pid, daemon), 5, "target traced")
    time.sleep(1.0)  # some 100-ms ticks before the reloads (an ASan build on a loaded host had none)
    bad = [("fifo", "not a regular file"), ("nul", "NUL byte"), ("dir", "not a regular file")]
    for n, (kind, words) in enumerate(bad, 1):
        config.unlink() if not config.is_dir() else config.rmdir()
        if kind == "fifo":
            os.mkfifo(config)
        elif kind == "nul":
            config.write_bytes(b"SPLUNK_PROFILER_CALL_STACK_INTERVAL=20\x00\n")
        else:
            config.mkdir()
        daemon.send_signal(signal.SIGHUP)
        wait_for(lambda: watch.log().count("reload ignored") == n, 3, f"the {kind} reload warning")
        line = [l for l in watch.log().splitlines() if "reload ignored" in l][-1]
        assert words in line and line.startswith("splunk-profd: warning: "), line
    assert "reloaded" not in watch.log()
    started = time.monotonic()
    daemon.send_signal(signal.SIGTERM)
    assert daemon.wait(timeout=5) == 0, watch.log()
    assert time.monotonic() - started < 3
    assert no_thread_traced_or_stopped(busy.pid)
    assert set(periods_in(watch.read_profile(watch.output))) == {100}


def test_sighup_switches_export_collector_without_losing_queued_records(watch, tmp_path):
    """SIGHUP re-reads the export connection (endpoint, headers) from the
    --config file: records queued while the first collector was down go to
    the second one; export on/off needs a restart and says so."""
    from otlp_receiver import Receiver

    first, second = Receiver().start(), Receiver().start()
    try:
        config = tmp_path / "profd.env"
        config.write_text(f"SPLUNK_PROFILER_LOGS_ENDPOINT={first.endpoint}\n"
                          "OTEL_EXPORTER_OTLP_HEADERS=x-profd-test=one\n")
        daemon = watch.start_daemon("--config", config, output=False)
        busy = watch.spawn(BUSY.format(secs=60))
        wait_for(lambda: traced_by(busy.pid, daemon), 5, "the target traced")
        mine = lambda records: [r for res, _, r in records if res.get("process.pid") == busy.pid]  # noqa: E731
        assert mine(first.wait_records(lambda rs: len(mine(rs)) >= 2, timeout=10)), watch.log()
        assert {m.get("x-profd-test") for m in first.metadata} == {"one"}
        first.stop()  # the collector goes away: records queue up and are retried
        down = time.time_ns()
        time.sleep(3.0)
        config.write_text(f"SPLUNK_PROFILER_LOGS_ENDPOINT={second.endpoint}\n"
                          "OTEL_EXPORTER_OTLP_HEADERS=x-profd-test=two\n")
        hup = time.time_ns()
        daemon.send_signal(signal.SIGHUP)
        wait_for(lambda: f"export: now sending to {second.endpoint}" in watch.log(), 10, "the switch")
        # The records made while no collector answered arrive at the new one.
        records = mine(second.wait_records(
            lambda rs: any(r.time_unix_nano > hup for r in mine(rs)) and
            any(r.time_unix_nano < hup - 1_000_000_000 for r in mine(rs)), timeout=15))
        assert any(down < r.time_unix_nano < hup - 1_000_000_000 for r in records), (
            sorted(r.time_unix_nano for r in records), down, hup, watch.log()[-2000:])
        assert {m.get("x-profd-test") for m in second.metadata} == {"two"}

        # Turning export off is a restart: one line, export goes on.
        config.write_text(f"SPLUNK_PROFILER_LOGS_ENDPOINT={second.endpoint}\n"
                          "OTEL_EXPORTER_OTLP_HEADERS=x-profd-test=two\nSPLUNK_PROFILER_ENABLED=false\n")
        daemon.send_signal(signal.SIGHUP)
        wait_for(lambda: "reload: export off needs a restart" in watch.log(), 5, "the restart line")
        count = len(mine(second.records()))
        second.wait_records(lambda rs: len(mine(rs)) >= count + 2, timeout=10)
        assert len(mine(second.records())) >= count + 2, watch.log()[-2000:]
        watch.stop()
        # Nothing lost: every record made was sent, and one of the two got it.
        summary = parse_summary(watch.log())
        assert summary["export_dropped"] == summary["export_failed"] == summary["export_unsent"] == 0, summary
        assert len(first.records()) + len(second.records()) >= summary["export_records"] > 0, summary
        assert no_thread_traced_or_stopped(busy.pid)
    finally:
        first.stop()
        second.stop()


UNIT = REPO / "systemd" / "splunk-profd.service.in"


def built_unit(tmp_path):
    text = (BUILD / "systemd" / "splunk-profd.service").read_text()
    exec_start = next(l for l in text.splitlines() if l.startswith("ExecStart="))
    argv = exec_start.split("=", 1)[1].split()
    unit = tmp_path / "splunk-profd.service"
    unit.write_text(text.replace(argv[0], str(PROFD.resolve())))
    return unit, argv[1:]


def test_unit_verifies(tmp_path):
    unit, _ = built_unit(tmp_path)
    done = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_runs_like_the_unit_and_notifies_ready(watch, tmp_path):
    unit, args = built_unit(tmp_path)
    env_file = REPO / "systemd" / "splunk-profd.env"
    args = [str(env_file) if a.endswith("splunk-profd.env") else a for a in args]
    env = {}
    for line in env_file.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, value = line.partition("=")
            env[key] = value
    sock_path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(sock_path))
    sock.settimeout(10)
    env.update(NOTIFY_SOCKET=str(sock_path), WATCHDOG_USEC="2000000")
    assert args[0] == "--watch"
    watch.start_daemon(*args[1:], env=env, interval=None)
    messages = []
    while not any("READY=1" in m for m in messages):
        messages.append(sock.recv(4096).decode())
    watchdog = sock.recv(4096).decode()
    assert "WATCHDOG=1" in watchdog
    watch.stop()
    sock.close()


QUICK_EXITS = textwrap.dedent("""
    import os, time
    time.sleep(1.5)
    for _ in range(20):
        # Children that exit at once and stay zombies for a while: the
        # window in which their exit is seen before their fork event.
        kids = [pid for pid in (os.fork() for _ in range(20)) if pid != 0 or os._exit(0)]
        time.sleep(0.05)
        for pid in kids:
            os.waitpid(pid, 0)
    print("done", flush=True)
    time.sleep(60)
""")


def daemon_fds(daemon):
    return len(os.listdir(f"/proc/{daemon.pid}/fd"))


def test_children_that_exit_at_once_leave_no_target_and_no_descriptor(watch):
    """A child can exit before its parent's fork event is handled: its exit
    then arrives for a pid the daemon does not know yet, and the fork event
    that follows used to create a target for a dead process, with its /proc
    descriptors, that no exit event would ever free (issue 20: 340 dead
    targets and +1 700 fds in 150 s of churn)."""
    watch.start_daemon("--health-interval", "1", interval=20, output=False, verbose=False)
    parent = subprocess.Popen([sys.executable, "-c", QUICK_EXITS], env=watch.env(), stdout=subprocess.PIPE, text=True)
    watch.procs.append(parent)
    wait_for(lambda: traced_by(parent.pid, watch.daemon), 10, "the parent to be attached")
    baseline = daemon_fds(watch.daemon)
    assert parent.stdout.readline().strip() == "done"
    def field(line, name):
        return int(line.split(f"{name}=")[1].split()[0])

    # A leaked target is never freed: wait (bounded) until the daemon has
    # worked through the churn's events (two health lines in a row count
    # the same children), so that a loaded host's late events do not count.
    deadline, last = time.monotonic() + 20, None
    while True:
        time.sleep(1.1)
        health = [line for line in watch.log().splitlines() if "health:" in line]
        # Since the start: children followed, and children seen exiting
        # (also those gone before their fork event was handled).
        seen = field(health[-1], "forks") + field(health[-1], "exited")
        if seen == last or time.monotonic() > deadline:
            break
        last = seen
    fds = daemon_fds(watch.daemon)
    targets = field(health[-1], "targets")
    watch.stop()
    # The churn was followed.  Not all 400: a child already reaped by its
    # parent when its fork event is handled is not counted at all.
    assert seen >= 10, health
    assert targets <= 2, health[-3:]  # the parent (and at most one child on its way out)
    assert fds <= baseline + 8, (baseline, fds)


NAPPER = textwrap.dedent("""
    import time
    def napping_after_exec():
        while True:
            time.sleep(0.05)
    napping_after_exec()
""")


@pytest.mark.parametrize("launcher", ["shell", "pyenv-shim"])
def test_a_program_that_execs_into_python_gets_python_frames(watch, tmp_path, launcher):
    """issue 17: at the exec stop the interpreter is not mapped yet, or its
    runtime is not initialised, and the process was never looked at again:
    a shell wrapper's `exec python3 app.py`, a pyenv shim and a container
    entrypoint all got native stacks only."""
    script = tmp_path / "napper.py"
    script.write_text(NAPPER)
    if launcher == "shell":
        argv = ["sh", "-c", f"sleep 1; exec /usr/bin/python3.11 {script}"]
    else:
        shim = Path.home() / ".pyenv" / "shims" / "python3"
        assert shim.exists(), f"no pyenv shim at {shim}"
        argv = ["sh", "-c", f"sleep 1; exec {shim} {script}"]
    watch.start_daemon("--wall", interval=50)
    proc = subprocess.Popen(argv, env=watch.env())
    watch.procs.append(proc)
    time.sleep(5)
    profile = watch.stop()
    napping = [s for s in profile.samples if any(f["function"] == "napping_after_exec" for f in s["frames"])]
    assert len(napping) >= 10, (len(profile.samples), watch.log()[-2000:])


def test_health_line_reports_coverage_per_period(watch):
    """Issue 16 item 5: each health line says how much of the asked time
    it covers: the ticks of the grid and the thread-samples they asked for
    since the last line, against those taken."""
    watch.start_daemon("--health-interval", "1", interval=20, output=False, verbose=False)
    busy = watch.spawn(BUSY.format(secs=30))
    wait_for(lambda: traced_by(busy.pid, watch.daemon), 10, "target traced")
    wait_for(lambda: sum("health:" in l for l in watch.log().splitlines()) >= 4, 15, "four health lines")
    lines = [l for l in watch.log().splitlines() if "health:" in l]
    watch.stop()

    def field(line, name):
        return int(line.split(f" {name}=")[1].split()[0])

    last = lines[-1]  # a whole period with the target traced
    asked, taken = field(last, "ticks_asked"), field(last, "ticks_taken")
    # 1 s at 20 ms: ~50 grid points (the period is measured between lines).
    assert 35 <= asked <= 70, last
    assert 0 < taken <= asked, last
    samples_asked, samples_taken = field(last, "samples_asked"), field(last, "samples_taken")
    assert samples_asked >= taken, last  # at least the one target thread at each tick
    assert 0 < samples_taken <= samples_asked, last
