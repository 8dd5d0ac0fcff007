"""Launch-and-profile, pick by name, follow children (issue 21):
`record -- COMMAND`, `top -- COMMAND`, `dump --wait SEC -- COMMAND`, `--name`,
`--subprocesses`, `--threads`.

Real processes only: Python scripts and a C program compiled here, run
under splunk-profd; Ctrl-C goes through a pseudo-terminal (pty module).
Every test checks that the command ran untraced at the end (no process
left traced or stopped) and that its exit status came through."""

import collections
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import ERROR_PREFIX, PROFD, proc_status

PYTHON = sys.executable if Path(sys.executable).name.startswith("python3") else shutil.which("python3")


def clean_env():
    return {k: v for k, v in os.environ.items() if k != "SPLUNK_PROFILER_CALL_STACK_INTERVAL"}


def run(*args, timeout=60, **kwargs):
    return subprocess.run([str(PROFD), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=clean_env(), **kwargs)


def write_script(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def pids_of(profile):
    return collections.Counter(int(s["num_labels"]["process.pid"][0]) for s in profile.samples)


def all_functions(profile):
    return {f["function"] for s in profile.samples for f in s["frames"]}


def error_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith(ERROR_PREFIX)]


# A Python script: CPU work in a named function, output, a chosen status.
BUSY_PY = """
    import sys, time
    def launched_busy_work():
        end = time.time() + float(sys.argv[1])
        n = 0
        while time.time() < end:
            n += 1
        return n
    launched_busy_work()
    print("launched output line", flush=True)
    sys.exit(int(sys.argv[2]))
"""

# A C program: spins in launched_c_spin, prints, then exits with argv[2],
# or kills itself with signal -argv[2].
BUSY_C = r"""
    #include <signal.h>
    #include <stdio.h>
    #include <stdlib.h>
    #include <time.h>
    static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
    __attribute__((noinline)) static unsigned long launched_c_spin(double seconds) {
        volatile unsigned long n = 0; double end = now() + seconds;
        while (now() < end) n++;
        return n;
    }
    int main(int argc, char **argv) {
        launched_c_spin(atof(argv[1]));
        printf("c output line\n"); fflush(stdout);
        int code = atoi(argv[2]);
        if (code < 0) raise(-code);
        return code;
    }
"""


@pytest.fixture(scope="module")
def busy_c(tmp_path_factory):
    directory = tmp_path_factory.mktemp("busy_c")
    source = directory / "busy.c"
    source.write_text(textwrap.dedent(BUSY_C))
    binary = directory / "launched-busy"
    subprocess.run(["cc", "-O1", "-g", "-fno-omit-frame-pointer", "-o", str(binary), str(source)], check=True)
    return binary


def test_python_script_status_stdout_and_frames(tmp_path, read_profile):
    script = write_script(tmp_path, "busy.py", BUSY_PY)
    out = tmp_path / "py.pb.gz"
    result = run("record", "-i", "10", "-o", out, "--", PYTHON, script, "1.5", "7")
    assert result.returncode == 7, result.stderr
    assert result.stdout == "launched output line\n"
    assert "summary:" in result.stderr
    profile = read_profile(out)
    assert len(pids_of(profile)) == 1
    assert "launched_busy_work" in all_functions(profile), sorted(all_functions(profile))[:40]


def test_c_program_status_and_native_frames(tmp_path, busy_c, read_profile):
    out = tmp_path / "c.pb.gz"
    result = run("record", "-i", "10", "-o", out, "--", busy_c, "1.0", "3")
    assert result.returncode == 3, result.stderr
    assert result.stdout == "c output line\n"
    profile = read_profile(out)
    spinning = [s for s in profile.samples if "launched_c_spin" in [f["function"] for f in s["frames"]]]
    assert len(spinning) >= 0.5 * len(profile.samples), collections.Counter(
        s["frames"][0]["function"] for s in profile.samples).most_common(5)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGABRT])
def test_death_by_signal_is_128_plus_n(tmp_path, busy_c, sig):
    out = tmp_path / "sig.pb.gz"
    result = run("record", "-i", "20", "-o", out, "--", busy_c, "0.2", str(-int(sig)))
    assert result.returncode == 128 + int(sig), result.stderr
    assert out.is_file()


def test_stdin_passes_through(tmp_path):
    result = run("record", "-o", tmp_path / "cat.pb.gz", "--", "cat", input="through stdin\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "through stdin\n"


@pytest.mark.parametrize("command", [["/nonexistent/launched-cmd"], ["launched-no-such-cmd-xyz", "arg"], ["/etc/passwd"]])
def test_command_that_cannot_start_is_exit_2_one_line(tmp_path, command):
    out = tmp_path / "none.pb.gz"
    result = run("record", "-o", out, "--", *command)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(ERROR_PREFIX + "cannot run "), lines
    assert not out.exists()


def test_usage_errors(tmp_path):
    for args, text in [(["--"], "no COMMAND"), (["--pid", "1", "--", "true"], "--pid and -- COMMAND cannot be combined"),
                       (["dump", "--", "true"], "dump -- COMMAND needs --wait SEC"),
                       (["--all-matches", "--pid", "1"], "--all-matches needs"),
                       (["-o", tmp_path / "x.pb.gz", "--threads", "--", "true"], "--threads needs collapsed")]:
        result = run(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert len(error_lines(result.stderr)) == 1 and text in result.stderr, (args, result.stderr)


def test_attached_before_the_first_instruction(tmp_path, busy_c, read_profile):
    """The child is seized before its exec: even a program that exits at
    once is traced from its start (its exec is reported, the profile has
    its pid as a target)."""
    result = run("record", "-v", "-i", "1", "-o", tmp_path / "t.pb.gz", "--", busy_c, "0.05", "0")
    assert result.returncode == 0, result.stderr
    assert re.search(r"attached to PID (\d+)", result.stderr)
    assert "executed a new program" in result.stderr, result.stderr


def test_duration_ends_profile_then_waits_for_command(tmp_path, read_profile):
    script = write_script(tmp_path, "long.py", """
        import sys, time
        print("pid", __import__("os").getpid(), flush=True)
        time.sleep(3)
        sys.exit(4)
    """)
    out = tmp_path / "d.pb.gz"
    proc = subprocess.Popen([str(PROFD), "record", "-d", "1", "-i", "10", "-o", str(out), "--", PYTHON, str(script)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
    pid = int(proc.stdout.readline().split()[1])
    deadline = time.monotonic() + 2.5
    while not out.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert out.exists(), "profile not written when --duration ended"
    status = proc_status(pid)
    assert status and int(status["TracerPid"]) == 0 and status["State"][0] in "SR", status
    stdout, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 4, stderr
    assert proc_status(pid) is None  # reaped, no zombie


# ------------------------------------------------------------- Ctrl-C

SIGINT_PY = """
    import os, signal, sys, time
    count = 0
    def on_sigint(sig, frame):
        global count
        count += 1
    signal.signal(signal.SIGINT, on_sigint)
    print("ready", os.getpid(), flush=True)
    end = time.time() + 20
    while count == 0 and time.time() < end:
        sum(range(1000))
    time.sleep(0.5)          # a second SIGINT would be counted here
    print("sigints", count, flush=True)
    sys.exit(40 + count)
"""


def read_until(fd, pattern, timeout=15.0):
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
            match = re.search(pattern, data)
            if match:
                return data, match
    pytest.fail(f"no {pattern!r} in {data!r}")


def test_ctrl_c_through_a_pty_reaches_the_command_once(tmp_path, read_profile):
    script = write_script(tmp_path, "sigint.py", SIGINT_PY)
    out = tmp_path / "c.pb.gz"
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(str(PROFD), [str(PROFD), "record", "-i", "10", "-o", str(out), "--", PYTHON, str(script)], clean_env())
    try:
        read_until(fd, rb"ready (\d+)")
        time.sleep(0.3)
        os.write(fd, b"\x03")
        data, match = read_until(fd, rb"sigints (\d+)")
        assert match.group(1) == b"1", data
        read_until(fd, rb"summary:")
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 41, status
    assert read_profile(out).samples


def test_kill_int_of_the_profiler_is_forwarded(tmp_path, read_profile):
    script = write_script(tmp_path, "sigint.py", SIGINT_PY)
    out = tmp_path / "k.pb.gz"
    proc = subprocess.Popen([str(PROFD), "record", "-i", "10", "-o", str(out), "--", PYTHON, str(script)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(),
                            start_new_session=True)
    assert proc.stdout.readline().startswith("ready")
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=20)
    assert "sigints 1" in stdout, (stdout, stderr)
    assert proc.returncode == 41, stderr
    assert read_profile(out).samples


def test_top_command_quits_with_q(tmp_path):
    script = write_script(tmp_path, "busy.py", BUSY_PY)
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(str(PROFD), [str(PROFD), "top", "--", PYTHON, str(script), "30", "0"], clean_env())
    try:
        read_until(fd, rb"launched_busy_work", timeout=20)
        os.write(fd, b"q")
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    # Quitting top sends the command SIGTERM: its status is 128+15.
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 143, status


# ------------------------------------------------------- --subprocesses

PREFORK_PY = """
    import os, sys, time
    def worker_spin(seconds):
        end = time.time() + seconds
        while time.time() < end:
            pass
    def fork_worker(seconds):
        pid = os.fork()
        if pid == 0:
            worker_spin(seconds)
            os._exit(0)
        return pid
    mode, seconds = sys.argv[1], float(sys.argv[2])
    workers = [fork_worker(seconds) for _ in range(2)]
    print("workers", *workers, flush=True)
    if mode == "later":                  # one more, forked while profiled
        time.sleep(0.5)
        workers.append(fork_worker(seconds))
        print("late", workers[-1], flush=True)
    for w in workers:
        os.waitpid(w, 0)
    print("done", flush=True)
"""


def test_subprocesses_of_a_launched_prefork_server(tmp_path, read_profile):
    script = write_script(tmp_path, "prefork.py", PREFORK_PY)
    out = tmp_path / "s.pb.gz"
    result = run("record", "--subprocesses", "-i", "10", "-o", out, "--", PYTHON, script, "later", "1.5")
    assert result.returncode == 0, result.stderr
    workers = [int(p) for p in result.stdout.split("workers", 1)[1].split("\n")[0].split()]
    late = int(result.stdout.split("late", 1)[1].split()[0])
    profile = read_profile(out)
    per_pid = pids_of(profile)
    for worker in [*workers, late]:
        assert per_pid.get(worker, 0) >= 10, (worker, per_pid)
    worker_samples = [s for s in profile.samples if int(s["num_labels"]["process.pid"][0]) == late]
    assert any("worker_spin" in [f["function"] for f in s["frames"]] for s in worker_samples)


def test_without_subprocesses_children_are_not_profiled(tmp_path, read_profile):
    script = write_script(tmp_path, "prefork.py", PREFORK_PY)
    out = tmp_path / "n.pb.gz"
    result = run("record", "-i", "10", "-o", out, "--", PYTHON, script, "now", "1.0")
    assert result.returncode == 0, result.stderr
    assert len(pids_of(read_profile(out))) == 1


def test_subprocesses_includes_children_running_at_the_start(tmp_path, read_profile):
    script = write_script(tmp_path, "prefork.py", PREFORK_PY)
    parent = subprocess.Popen([PYTHON, str(script), "now", "4"], stdout=subprocess.PIPE, text=True)
    try:
        workers = [int(p) for p in parent.stdout.readline().split()[1:]]
        out = tmp_path / "e.pb.gz"
        result = run("record", "--pid", parent.pid, "--subprocesses", "-d", "1.5", "-i", "10", "-o", out)
        assert result.returncode == 0, result.stderr
        per_pid = pids_of(read_profile(out))
        for worker in workers:
            assert per_pid.get(worker, 0) >= 10, (workers, per_pid)
            status = proc_status(worker)
            assert status and int(status["TracerPid"]) == 0 and status["State"][0] in "RS", status
    finally:
        parent.wait(timeout=30)


# ------------------------------------------------------------------ --name


@pytest.fixture
def sleepers(tmp_path):
    """Starts copies of sleep(1) with a name no other process has."""
    binary = tmp_path / "profdtst-sleeper"
    shutil.copy("/bin/sleep", binary)
    started = []

    def start(n):
        for _ in range(n):
            started.append(subprocess.Popen([str(binary), "30"]))
        time.sleep(0.2)
        return [p.pid for p in started]

    yield start
    for p in started:
        p.kill()
        p.wait()


def test_name_matches_one_process(tmp_path, sleepers, read_profile):
    [pid] = sleepers(1)
    out = tmp_path / "one.pb.gz"
    result = run("record", "--name", "profdtst-slee*", "-d", "0.5", "-i", "10", "-o", out)
    assert result.returncode == 0, result.stderr
    assert set(pids_of(read_profile(out))) <= {pid}
    # The executable's base name matches too (comm is cut to 15 bytes).
    result = run("dump", "--name", "profdtst-sleeper")
    assert result.returncode == 0, result.stderr
    assert str(pid) in result.stdout


def test_name_ambiguity_lists_the_pids(tmp_path, sleepers, read_profile):
    pids = sleepers(2)
    result = run("record", "--name", "profdtst-*", "-d", "0.5", "-o", tmp_path / "a.pb.gz")
    assert result.returncode == 2, result.stderr
    [line] = error_lines(result.stderr)
    assert all(str(p) in line for p in pids) and "--all-matches" in line, line
    out = tmp_path / "all.pb.gz"
    result = run("record", "--name", "profdtst-*", "--all-matches", "-d", "1", "-i", "10", "-o", out)
    assert result.returncode == 0, result.stderr
    assert "targets=2" in result.stderr


def test_name_never_matches_splunk_profd(tmp_path):
    result = run("record", "--name", "splunk-prof*", "-d", "0.2")
    assert result.returncode == 3, result.stderr
    assert "no process matches" in result.stderr


# ----------------------------------------------------------------- dump --wait

# Sleeps in a named function well past the dump, then reports whether it
# is still traced (it must not be after the dump) and exits with argv[2].
DUMP_WAIT_PY = """
    import sys, time
    def dump_wait_sleeper(seconds):
        time.sleep(seconds)
    dump_wait_sleeper(float(sys.argv[1]))
    tracer = [l.split()[1] for l in open("/proc/self/status") if l.startswith("TracerPid:")][0]
    print("tracer after the dump:", tracer, flush=True)
    sys.exit(int(sys.argv[2]))
"""


def test_dump_wait_json_shows_the_frame_then_the_status(tmp_path):
    script = write_script(tmp_path, "dump_wait.py", DUMP_WAIT_PY)
    start = time.monotonic()
    result = run("dump", "--wait", "1", "--json", "--", PYTHON, script, "2.5", "7")
    elapsed = time.monotonic() - start
    assert result.returncode == 7, result.stderr
    assert elapsed >= 2.4, elapsed  # it waited for the command, not only for the dump
    dump_line, after = result.stdout.split("\n", 1)
    assert after == "tracer after the dump: 0\n", result.stdout
    [process] = json.loads(dump_line)["processes"]
    assert process["name"] != "splunk-profd", process  # the program's, after its exec
    [thread] = process["threads"]
    assert thread["sampled"] and thread["state"] == "blocked", thread
    functions = [f["function"] for f in thread["frames"]]
    assert "dump_wait_sleeper" in functions, functions
    assert error_lines(result.stderr) == [], result.stderr


def test_dump_wait_text_and_death_by_signal(tmp_path, busy_c):
    result = run("dump", "--wait", "0.5", "--", busy_c, "1.5", str(-int(signal.SIGTERM)))
    assert result.returncode == 128 + int(signal.SIGTERM), result.stderr
    assert re.match(r'Process \d+ "launched-busy": 1 threads\n', result.stdout), result.stdout
    assert "launched_c_spin" in result.stdout, result.stdout
    assert result.stdout.endswith("c output line\n"), result.stdout


def test_dump_wait_command_exiting_first_gets_no_dump(tmp_path):
    start = time.monotonic()
    result = run("dump", "--wait", "30", "--json", "--", PYTHON, "-c", "import sys; sys.exit(4)")
    assert result.returncode == 4, result.stderr
    assert time.monotonic() - start < 15
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "exited before the dump" in lines[0], lines
    assert error_lines(result.stderr) == []


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1x", "nan", ""])
def test_dump_wait_bad_value_is_exit_2_one_line(value):
    result = run("dump", "--wait", value, "--", "true")
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert error_lines(result.stderr) and "--wait" in result.stderr, result.stderr


@pytest.mark.parametrize("args", [["--pid", str(os.getpid())], [], ["--name", "python*", "--all-matches"]])
def test_dump_wait_needs_a_command(args):
    result = run("dump", "--wait", "1", *args)
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert "--wait needs -- COMMAND" in line, line


# ----------------------------------------------------------------- --threads

THREADS_PY = """
    import threading, time
    def spin():
        end = time.time() + 1.2
        while time.time() < end:
            pass
    threads = [threading.Thread(target=spin, name=f"spinner-{i}") for i in range(2)]
    for t in threads: t.start()
    spin()  # MainThread runs too: a CPU profile shows only threads that ran
    for t in threads: t.join()
"""


def test_threads_prefixes_collapsed_stacks(tmp_path):
    script = write_script(tmp_path, "threads.py", THREADS_PY)
    out = tmp_path / "t.txt"
    result = run("record", "--threads", "-i", "10", "-o", out, "--", PYTHON, script)
    assert result.returncode == 0, result.stderr
    roots = collections.Counter(line.split(";", 1)[0] for line in out.read_text().splitlines())
    assert all(re.fullmatch(r".+ \(\d+\)", r) for r in roots), roots
    names = {r.rsplit(" (", 1)[0] for r in roots}
    assert {"spinner-0", "spinner-1", "MainThread"} <= names, roots
    # Without --threads the collapsed format is unchanged.
    plain = tmp_path / "p.txt"
    result = run("record", "-i", "10", "-o", plain, "--", PYTHON, script)
    assert result.returncode == 0, result.stderr
    assert not any(re.match(r"[^;]+ \(\d+\);", l) for l in plain.read_text().splitlines())
