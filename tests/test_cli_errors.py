"""Errors: exit 2 for usage errors, 3 for a target that cannot be profiled,
each with exactly one `splunk-profd: error: ` line naming the problem."""

import os
import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import ERROR_PREFIX, proc_status, thread_states, tracer_process, wait_released, wait_traced

USAGE, CANNOT_PROFILE = 2, 3


def assert_error(result, code, *words):
    assert result.returncode == code, str(result)
    lines = result.error_lines
    assert len(lines) == 1, f"expected exactly one {ERROR_PREFIX!r} line; {result}"
    assert any(w in lines[0].lower() for w in words), f"{lines[0]!r} mentions none of {words}"


@pytest.fixture
def live_pid(targets, start_target):
    """A running target, checked to be left untraced by the test."""
    target = start_target(targets.chain)
    yield target.pid
    wait_released(target.pid)


@pytest.mark.parametrize(
    "args, words",
    [
        (["--interval", "abc"], ["interval"]),
        (["--interval", "0"], ["interval"]),
        (["--interval", "-5"], ["interval"]),
        (["--duration", "abc"], ["duration"]),
        (["--bogus-flag"], ["bogus", "unknown", "unrecognized", "invalid"]),
    ],
    ids=["interval-abc", "interval-0", "interval-negative", "duration-abc", "unknown-flag"],
)
def test_bad_flag(profd, live_pid, args, words):
    assert_error(profd.run("--pid", live_pid, *args, "--duration", "1"), USAGE, *words)


def test_bad_interval_environment(profd, live_pid):
    result = profd.run("--pid", live_pid, "--duration", "1", env={"SPLUNK_PROFILER_CALL_STACK_INTERVAL": "abc"})
    assert_error(result, USAGE, "interval")


def test_bad_include_internal_stacks_environment(profd, live_pid):
    """Read and checked with the other variables, before any target is touched."""
    result = profd.run(
        "--pid", live_pid, "--duration", "1", env={"SPLUNK_PROFILER_INCLUDE_INTERNAL_STACKS": "maybe"}
    )
    assert_error(result, USAGE, "splunk_profiler_include_internal_stacks")


def test_bad_pid_value(profd):
    assert_error(profd.run("--pid", "abc", "--duration", "1"), USAGE, "pid")


def test_missing_pid(profd):
    assert_error(profd.run("--duration", "1"), USAGE, "pid")


def test_no_such_process(profd):
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert proc_status(gone.pid) is None
    assert_error(profd.run("--pid", gone.pid, "--duration", "1"), CANNOT_PROFILE, "no such process")


def test_permission_denied(profd, live_pid):
    """An unprivileged daemon cannot trace a root-owned target."""
    out_dir = tempfile.mkdtemp(prefix="profd-nobody-")
    try:
        os.chmod(out_dir, 0o777)
        result = profd.run(
            "--pid", live_pid, "--duration", "1",
            output=f"{out_dir}/profile.pb.gz",
            prefix=["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"],
        )
    finally:
        shutil.rmtree(out_dir)
    assert_error(result, CANNOT_PROFILE, "permission")


def test_kernel_thread(profd):
    assert proc_status(2)["Name"] == "kthreadd", "pid 2 is expected to be kthreadd"
    assert_error(profd.run("--pid", "2", "--duration", "1"), CANNOT_PROFILE, "kernel thread")


def test_itself(profd):
    result = profd.run("--duration", "1", prefix=["sh", "-c", 'exec "$0" --pid $$ "$@"'])
    assert_error(result, CANNOT_PROFILE, "itself")


def test_already_traced(profd, targets, start_target):
    target = start_target(targets.chain)
    strace = subprocess.Popen(["strace", "-f", "-qq", "-o", "/dev/null", "-p", str(target.pid)])
    try:
        assert tracer_process(wait_traced(target.pid)) == strace.pid
        time.sleep(0.2)  # let strace seize every thread
        result = profd.run("--pid", target.pid, "--duration", "1")
        assert_error(result, CANNOT_PROFILE, "already traced")
        tracers = {tracer_process(tracer) for _, tracer in thread_states(target.pid).values()}
        assert tracers == {strace.pid}, f"the other tracer lost its hold: tracers {tracers}"
    finally:
        strace.terminate()
        strace.wait(timeout=10)
    wait_released(target.pid)
