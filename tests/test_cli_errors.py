"""Errors: exit 2 for usage errors, 3 for a target that cannot be profiled,
each with exactly one `splunk-profd: error: ` line naming the problem."""

import os
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
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


# ------------------------------------------------------------ --output
# Checked before any target is touched (exit 2), never destroying what the
# path names: devices, FIFOs and "-" are written through, a symlink is
# followed and its target replaced, the link kept.


@pytest.mark.parametrize(
    "output, words",
    [
        ("/nonexistent-profd-dir/x.pb.gz", ["does not exist"]),
        ("{tmp}", ["directory"]),
        ("{tmp}/", ["directory"]),
        ("/proc/x.pb.gz", ["/proc"]),
        ("/proc/self/status", ["/proc"]),
        ("/sys/x.pb.gz", ["/sys"]),
        ("{tmp}/sock", ["socket"]),
    ],
    ids=["missing-dir", "directory", "trailing-slash", "proc", "proc-file", "sys", "socket"],
)
def test_bad_output_rejected_at_start(profd, live_pid, tmp_path, output, words):
    """Old code sampled the whole --duration and only then failed (exit 1)."""
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    started = time.monotonic()
    result = profd.run("--pid", live_pid, "--duration", "30", output=output.format(tmp=tmp_path), timeout=20)
    assert time.monotonic() - started < 5, "the output path was checked only at the end"
    assert_error(result, USAGE, *words)
    assert "summary" not in result.stderr, "the run sampled before failing"
    sock.close()


def test_unwritable_output_directory(profd, live_pid):
    """An unprivileged user cannot create files in a root-owned 0755 directory."""
    out_dir = tempfile.mkdtemp(prefix="profd-ro-")
    try:
        os.chmod(out_dir, 0o755)
        result = profd.run(
            "--pid", live_pid, "--duration", "30", output=f"{out_dir}/p.pb.gz",
            prefix=["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"], timeout=20,
        )
    finally:
        shutil.rmtree(out_dir)
    assert_error(result, USAGE, "cannot create files")


def test_output_device_written_through(profd, live_pid, tmp_path):
    """A null device of our own (never the system's /dev/null): old code
    renamed a regular file over it."""
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    result = profd.run("--pid", live_pid, "--duration", "1", "--interval", "50", output=null)
    assert result.returncode == 0, str(result)
    assert stat.S_ISCHR(os.lstat(null).st_mode), "the device was replaced"


def test_output_fifo_written_through(profd, live_pid, tmp_path, read_profile):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []

    def reader():
        with open(fifo, "rb") as f:  # blocks until the daemon opens it
            got.append(f.read())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    result = profd.run("--pid", live_pid, "--duration", "1", "--interval", "50", output=fifo)
    thread.join(timeout=10)
    assert result.returncode == 0, str(result)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced"
    (tmp_path / "got.pb.gz").write_bytes(got[0])
    assert read_profile(tmp_path / "got.pb.gz").samples


def test_output_fifo_without_reader_saves_fallback(profd, live_pid, tmp_path, read_profile):
    """Opening a FIFO nobody reads would hang the end of the run: it fails
    at once, and the profile goes to the fallback file."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    spare = tmp_path / "spare"
    spare.mkdir()
    result = profd.run("--pid", live_pid, "--duration", "1", "--interval", "50", output=fifo,
                       env={"TMPDIR": str(spare)}, timeout=20)
    assert_error(result, 1, "saved to")
    saved = list(spare.iterdir())
    assert len(saved) == 1 and str(saved[0]) in result.error_lines[0], str(result)
    assert read_profile(saved[0]).samples


def test_output_symlink_followed(profd, live_pid, tmp_path, read_profile):
    """The link's target is replaced; the link stays.  Also a dangling link
    (its target is created) and a relative one."""
    real = tmp_path / "real.pb.gz"
    real.write_bytes(b"old")
    (tmp_path / "sub").mkdir()
    link = tmp_path / "sub" / "link.pb.gz"
    link.symlink_to("../real.pb.gz")
    dangling = tmp_path / "dangling.pb.gz"
    dangling.symlink_to(tmp_path / "new.pb.gz")
    for path, target in ((link, real), (dangling, tmp_path / "new.pb.gz")):
        result = profd.run("--pid", live_pid, "--duration", "1", "--interval", "50", output=path)
        assert result.returncode == 0, str(result)
        assert os.path.islink(path), f"{path}: the symlink was replaced"
        assert read_profile(target).samples


def test_output_stdout(profd, live_pid, tmp_path, read_profile):
    """`-o -` writes to standard output; a symlink to /proc/self/fd/1 (as
    /dev/stdout is) is written through, not replaced."""
    link = tmp_path / "stdout-link"
    link.symlink_to("/proc/self/fd/1")
    for output in ("-", link):
        argv = [str(profd.binary), "--pid", str(live_pid), "--duration", "1", "--interval", "50",
                "--output", str(output)]
        done = subprocess.run(argv, capture_output=True, timeout=30)
        assert done.returncode == 0, done.stderr
        (tmp_path / "got.pb.gz").write_bytes(done.stdout)
        assert read_profile(tmp_path / "got.pb.gz").samples, output
    assert os.path.islink(link), "the symlink was replaced"


def test_output_lost_at_end_saved_to_fallback(profd, live_pid, tmp_path, read_profile):
    """The directory vanishes during the run: the profile is saved in
    $TMPDIR under a fresh name, the error line says where, exit 1."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    spare = tmp_path / "spare"
    spare.mkdir()
    (spare / "splunk-profd-keep.pb.gz").write_bytes(b"keep")
    proc = profd.start("--pid", live_pid, "--duration", "2", "--interval", "50",
                       output=out_dir / "p.pb.gz", env={"TMPDIR": str(spare)})
    time.sleep(0.7)
    out_dir.rmdir()
    result = profd.finish(proc)
    assert_error(result, 1, "saved to")
    saved = [p for p in spare.iterdir() if p.name != "splunk-profd-keep.pb.gz"]
    assert len(saved) == 1 and str(saved[0]) in result.error_lines[0], str(result)
    assert read_profile(saved[0]).samples
    assert (spare / "splunk-profd-keep.pb.gz").read_bytes() == b"keep"


# ------------------------------------------------------------ --config
# Only a regular file of text: never a hang, never a silent truncation,
# always one error line naming the line, exit 2.


def one_line_error(result, code, *words):
    assert_error(result, code, *words)
    assert len(result.stderr.splitlines()) == 1, f"the error is not one line: {result.stderr!r}"


@pytest.mark.parametrize(
    "name, content, words",
    [
        ("nul", b"SPLUNK_PROFILER_CALL_STACK_INTERVAL=10\x000\n", ["nul", ":1:"]),
        ("escape", b"A=1\nK=\x1b[2J\x1b[31mred\n", ["control byte 0x1b", ":2:"]),
        ("vt-in-key", b"A=1\n\nK\x0bX=1\n", ["control byte 0x0b", ":3:"]),
        ("crlf", b"A=1\r\n", ["control byte 0x0d", ":1:"]),
        ("long-line", b"A=" + b"x" * 5000 + b"\n", ["longer than", ":1:"]),
        ("too-large", b"#" * (2 << 20) + b"\n", ["larger than"]),
    ],
    ids=["nul", "escape", "vt-in-key", "crlf", "long-line", "too-large"],
)
def test_bad_config_content(profd, live_pid, tmp_path, name, content, words):
    """Old code read the NUL value as "10", passed control bytes into the
    error, and split long lines."""
    path = tmp_path / f"{name}.env"
    path.write_bytes(content)
    result = profd.run("--config", path, "--pid", live_pid, "--duration", "1", timeout=20)
    one_line_error(result, USAGE, *words)


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "directory"])
def test_config_not_a_regular_file(profd, live_pid, tmp_path, kind):
    """Old code hung on /dev/zero (70% CPU) and on a FIFO with no writer,
    and read a directory as an empty file."""
    path = {"dev-zero": "/dev/zero", "fifo": tmp_path / "fifo", "directory": tmp_path}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    started = time.monotonic()
    result = profd.run("--config", path, "--pid", live_pid, "--duration", "1", timeout=10)
    assert time.monotonic() - started < 5
    one_line_error(result, USAGE, "not a regular file")


def test_config_path_with_control_bytes_is_one_line(profd, live_pid, tmp_path):
    result = profd.run("--config", tmp_path / "a\nb\x1b[31m", "--pid", live_pid, "--duration", "1")
    one_line_error(result, USAGE, "\\x0ab\\x1b[31m")
