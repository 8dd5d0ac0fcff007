"""Shared fixtures and helpers of the splunk-profd integration tests.

No mocks: the tests run the real daemon against real target processes
(tests/targets/, built by meson) and read its profiles with pprofcheck
(tests/pprofcheck/, Go, github.com/google/pprof/profile).

Environment:
  SPLUNK_PROFD        the daemon binary (default <build>/splunk-profd)
  SPLUNK_PROFD_BUILD  the meson build directory (default <repo>/build)
"""

import collections
import json
import os
import re
import select
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("SPLUNK_PROFD_BUILD", REPO / "build"))
PROFD = Path(os.environ.get("SPLUNK_PROFD", BUILD / "splunk-profd"))
TARGET_DIR = BUILD / "tests" / "targets"
TARGET_SOURCES = REPO / "tests" / "targets"
INTERVAL_ENV = "SPLUNK_PROFILER_CALL_STACK_INTERVAL"
ERROR_PREFIX = "splunk-profd: error: "
SUMMARY_KEYS = ("targets", "threads", "samples", "skipped", "pause_p50_us", "pause_p99_us", "errors")

# Leaf-first stacks the targets' busy threads must show (see tests/targets/).
CHAIN_STACK = ["lib_spin", "chain_inline", "chain_b", "chain_a", "busy_chain_main"]
CPP_STACK = [
    re.compile(r"(int )?demo::compute<int>(\(int\))?"),
    re.compile(r"demo::Worker::run(\(\))?"),
    re.compile(r"busy_cpp_main(\(void\*\))?"),
]


# --------------------------------------------------------------- /proc


def is_asan_build(binary):
    """Whether the daemon binary is the ASan+UBSan build."""
    if "asan" in str(binary).lower():
        return True
    try:
        deps = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "libasan" in deps


def proc_status(pid):
    """/proc/PID/status (or /proc/PID/task/TID/status) as a dict; None if gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def thread_states(pid):
    """{tid: (state letter, TracerPid)} for every thread of process pid."""
    states = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        status = proc_status(f"{pid}/task/{task.name}")
        if status:
            states[int(task.name)] = (status["State"][0], int(status["TracerPid"]))
    return states


def thread_names(pid):
    """{tid: comm} for every thread of process pid."""
    return {
        int(task.name): (task / "comm").read_text().strip()
        for task in Path(f"/proc/{pid}/task").iterdir()
    }


def cpu_ticks(pid):
    """utime + stime of process pid, in clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wait_released(pid, timeout=1.0, stopped=False):
    """Waits until no thread of pid is traced or in a trace stop ('t'), and
    (unless stopped) none is group-stopped ('T'); fails otherwise."""
    bad_states = "t" if stopped else "tT"
    deadline = time.monotonic() + timeout
    while True:
        states = thread_states(pid)
        if all(tracer == 0 and state not in bad_states for state, tracer in states.values()):
            return states
        if time.monotonic() > deadline:
            pytest.fail(f"target {pid} not released within {timeout}s: {{tid: (State, TracerPid)}} = {states}")
        time.sleep(0.02)


def assert_progressing(pid, timeout=5.0):
    """Fails unless pid is alive and its CPU time advances within timeout
    (generous: on a loaded 2-core VM a runnable thread can wait seconds)."""
    assert proc_status(pid) is not None, f"target {pid} is gone"
    start = cpu_ticks(pid)
    deadline = time.monotonic() + timeout
    while cpu_ticks(pid) == start:
        if time.monotonic() > deadline:
            pytest.fail(f"target {pid} made no progress in {timeout}s (threads: {thread_states(pid)})")
        time.sleep(0.05)


def wait_traced(pid, timeout=5.0):
    """Waits until some thread of pid has a tracer; returns its pid."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tracers = {tracer for _, tracer in thread_states(pid).values() if tracer}
        if tracers:
            return tracers.pop()
        time.sleep(0.02)
    pytest.fail(f"nothing attached to {pid} within {timeout}s")


def tracer_process(tracer_tid):
    """The process (Tgid) of a TracerPid, which names the tracing thread."""
    status = proc_status(tracer_tid)
    return int(status["Tgid"]) if status else None


def build_id(path):
    """The GNU build id of an ELF file, as lowercase hex (via readelf -n)."""
    out = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True, check=True).stdout
    match = re.search(r"Build ID: ([0-9a-f]+)", out)
    assert match, f"{path} has no build id:\n{out}"
    return match.group(1)


def source_lines(source):
    """{name: line} of the `LINE:name` markers in a tests/targets/ source."""
    lines = (TARGET_SOURCES / source).read_text().splitlines()
    return {m.group(1): n for n, text in enumerate(lines, 1) for m in re.finditer(r"LINE:(\w+)", text)}


# ------------------------------------------------------------- targets


class Target:
    """A running test target.  stdin is a pipe; stdout is read line by line."""

    def __init__(self, argv, env=None, cwd=None):
        self.argv = [str(a) for a in argv]
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd)
        self.pid = self.proc.pid
        self._buffer = b""

    def readline(self, timeout=10.0):
        """The next stdout line without its newline; fails on timeout or EOF."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        who = f"{self.argv[0]} (pid {self.pid})"
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                pytest.fail(f"{who} printed no line within {timeout}s; got {self._buffer!r}")
            chunk = os.read(fd, 4096)
            if not chunk:
                pytest.fail(f"{who} closed stdout (exit {self.proc.poll()}); got {self._buffer!r}")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    def wait_ready(self, timeout=10.0):
        line = self.readline(timeout)
        assert line == "ready", f"{self.argv} printed {line!r} instead of 'ready'"

    def alive(self):
        return self.proc.poll() is None

    def kill(self):
        if self.alive():
            self.proc.kill()  # works on stopped and traced processes too
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass


class Targets:
    """Paths of the meson-built targets and their library."""

    def __init__(self, directory):
        self.dir = directory
        self.chain = directory / "target_chain"
        self.cpp = directory / "target_cpp"
        self.epoll = directory / "target_epoll"
        self.lib = directory / "libprofd_testlib.so"


@pytest.fixture(scope="session")
def targets():
    found = Targets(TARGET_DIR)
    missing = [str(p) for p in (found.chain, found.cpp, found.epoll, found.lib) if not p.is_file()]
    if missing:
        pytest.fail(
            f"test targets not built: {', '.join(missing)} (run `meson setup build && ninja -C build`, "
            f"or set SPLUNK_PROFD_BUILD to the build directory)",
            pytrace=False,
        )
    return found


@pytest.fixture
def start_target():
    """start_target(argv, env=None, cwd=None) -> Target, once it printed
    "ready".  Every target is killed at teardown."""
    started = []

    def start(argv, env=None, cwd=None):
        target = Target(argv if isinstance(argv, (list, tuple)) else [argv], env=env, cwd=cwd)
        started.append(target)
        target.wait_ready()
        return target

    yield start
    for target in started:
        target.kill()


# ------------------------------------------------------------ profiles


def functions(sample):
    """The function names of a sample's frames, leaf first."""
    return [frame["function"] for frame in sample["frames"]]


def stack_matches(sample, expected):
    """True if the sample's leaf-first frames start with `expected`
    (strings match exactly, compiled patterns with fullmatch)."""
    names = functions(sample)
    if len(names) < len(expected):
        return False
    return all(
        name == want if isinstance(want, str) else bool(want.fullmatch(name))
        for name, want in zip(names, expected)
    )


def common_stacks(samples, depth=8, count=5):
    """The most common leaf-first stacks, for failure messages."""
    return collections.Counter(tuple(functions(s)[:depth]) for s in samples).most_common(count)


def assert_stack_prefix(samples, expected, min_share=0.95, what="samples"):
    """Asserts that at least min_share of samples start with `expected`;
    returns the samples that do."""
    assert samples, f"no {what} in the profile"
    matched = [s for s in samples if stack_matches(s, expected)]
    share = len(matched) / len(samples)
    assert share >= min_share, (
        f"only {len(matched)}/{len(samples)} ({share:.0%}) {what} start with {expected}; "
        f"most common stacks: {common_stacks(samples)}"
    )
    return matched


class Profile:
    """A profile as printed by pprofcheck (see tests/pprofcheck/main.go)."""

    def __init__(self, data):
        self.data = data
        self.samples = data["samples"]
        self.mappings = data["mappings"]
        self.summary_line = ""  # the daemon's summary, for failure messages

    def thread(self, name):
        """The samples whose thread.name label is `name`."""
        return [s for s in self.samples if s["labels"].get("thread.name") == [name]]

    def thread_names(self):
        """Samples per thread.name (and the daemon's summary), for failure messages."""
        counts = collections.Counter(tuple(s["labels"].get("thread.name", ())) for s in self.samples)
        return f"{dict(counts)} {self.summary_line}"

    def mapping_with_build_id(self, build_id_hex):
        return [m for m in self.mappings if m["build_id"].lower() == build_id_hex]


@pytest.fixture(scope="session")
def pprofcheck(tmp_path_factory):
    """Path of pprofcheck, built from tests/pprofcheck (needs `go`)."""
    binary = tmp_path_factory.mktemp("pprofcheck") / "pprofcheck"
    env = dict(os.environ, GOFLAGS="-mod=mod")
    try:
        built = subprocess.run(
            ["go", "build", "-o", str(binary), "."],
            cwd=REPO / "tests" / "pprofcheck", env=env, capture_output=True, text=True, timeout=600,
        )
    except FileNotFoundError:
        pytest.fail("`go` is not on PATH: it is needed to build tests/pprofcheck", pytrace=False)
    if built.returncode:
        pytest.fail(f"building tests/pprofcheck failed:\n{built.stderr}", pytrace=False)
    return binary


@pytest.fixture(scope="session")
def read_profile(pprofcheck):
    """read_profile(path) -> Profile; fails unless path is a gzip pprof
    that github.com/google/pprof/profile accepts."""

    def read(path):
        path = Path(path)
        assert path.is_file(), f"no profile written at {path}"
        raw = path.read_bytes()
        assert raw[:2] == b"\x1f\x8b", f"{path} is not gzip (starts with {raw[:8]!r})"
        parsed = subprocess.run([str(pprofcheck), str(path)], capture_output=True, text=True, timeout=60)
        assert parsed.returncode == 0, f"pprofcheck rejected {path}: {parsed.stderr.strip()}"
        return Profile(json.loads(parsed.stdout))

    return read


# -------------------------------------------------------------- daemon


def parse_summary(stderr):
    """The key=value pairs of the last `splunk-profd: summary:` line, with
    numeric values as int or float.  Fails if there is none."""
    lines = [l for l in stderr.splitlines() if l.startswith("splunk-profd: summary: ")]
    assert lines, f"no 'splunk-profd: summary:' line on stderr:\n{stderr}"
    summary = {}
    for pair in lines[-1].split(": ", 2)[2].split():
        key, _, value = pair.partition("=")
        try:
            summary[key] = int(value)
        except ValueError:
            try:
                summary[key] = float(value)
            except ValueError:
                summary[key] = value
    missing = [k for k in SUMMARY_KEYS if not isinstance(summary.get(k), (int, float))]
    assert not missing, f"summary line lacks numeric {missing}: {lines[-1]!r}"
    return summary


class Result:
    """A finished daemon run."""

    def __init__(self, argv, returncode, stdout, stderr, output):
        self.argv, self.returncode, self.stdout, self.stderr, self.output = argv, returncode, stdout, stderr, output

    @property
    def summary(self):
        return parse_summary(self.stderr)

    @property
    def error_lines(self):
        return [l for l in self.stderr.splitlines() if l.startswith(ERROR_PREFIX)]

    def __str__(self):
        return f"{' '.join(self.argv)} -> exit {self.returncode}\nstderr:\n{self.stderr}"


class Profd:
    """Runs the daemon.  Every run gets --output in the test's tmp dir
    unless output=None; SPLUNK_PROFILER_CALL_STACK_INTERVAL is removed from
    the environment unless given in env."""

    def __init__(self, binary, tmp_path, read_profile):
        self.binary, self.tmp_path, self.read_profile = binary, tmp_path, read_profile
        self._runs = 0
        self._started = []

    def _prepare(self, args, output, env, prefix):
        self._runs += 1
        if output == "auto":
            output = self.tmp_path / f"profile-{self._runs}.pb.gz"
        argv = [*prefix, str(self.binary), *(str(a) for a in args)]
        if output is not None:
            argv += ["--output", str(output)]
        full_env = {k: v for k, v in os.environ.items() if k != INTERVAL_ENV}
        full_env.update(env or {})
        return argv, output, full_env

    def run(self, *args, output="auto", env=None, prefix=(), timeout=60):
        argv, output, full_env = self._prepare(args, output, env, prefix)
        try:
            done = subprocess.run(argv, capture_output=True, text=True, env=full_env, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"{' '.join(argv)} did not exit within {timeout}s; stderr: {e.stderr}")
        return Result(argv, done.returncode, done.stdout, done.stderr, output)

    def start(self, *args, output="auto", env=None):
        """Starts the daemon in the background; see finish()."""
        argv, output, full_env = self._prepare(args, output, env, ())
        stderr = open(self.tmp_path / f"stderr-{self._runs}.txt", "w+")
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr, env=full_env, text=True)
        proc.argv, proc.output, proc.stderr_file = argv, output, stderr
        self._started.append(proc)
        return proc

    def finish(self, proc, timeout=30):
        """Waits for a started daemon and returns its Result."""
        try:
            stdout, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{' '.join(proc.argv)} did not exit within {timeout}s")
        proc.stderr_file.seek(0)
        return Result(proc.argv, proc.returncode, stdout, proc.stderr_file.read(), proc.output)

    def profile(self, pids, duration=3, interval=10, extra=()):
        """Profiles pids; asserts exit 0 and returns (Result, Profile)."""
        args = [a for pid in pids for a in ("--pid", pid)]
        result = self.run(*args, "--duration", duration, "--interval", interval, *extra, timeout=duration + 60)
        assert result.returncode == 0, str(result)
        prof = self.read_profile(result.output)
        prof.summary_line = next((l for l in result.stderr.splitlines() if "summary:" in l), "")
        return result, prof

    def cleanup(self):
        for proc in self._started:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stderr_file.close()


@pytest.fixture(scope="session")
def profd_binary():
    if not (PROFD.is_file() and os.access(PROFD, os.X_OK)):
        pytest.fail(
            f"splunk-profd binary not found (or not executable) at {PROFD}: build it with "
            f"`meson setup build && ninja -C build`, or set SPLUNK_PROFD=/path/to/splunk-profd",
            pytrace=False,
        )
    return PROFD


@pytest.fixture
def profd(profd_binary, tmp_path, read_profile):
    runner = Profd(profd_binary, tmp_path, read_profile)
    yield runner
    runner.cleanup()


def send_signal_when_attached(proc, target_pid, sig, sample_for=1.0):
    """Waits until the daemon proc traces target_pid, lets it sample for a
    while, then sends it sig."""
    tracer = wait_traced(target_pid)
    assert tracer_process(tracer) == proc.pid, f"{target_pid} is traced by {tracer}, not by the daemon {proc.pid}"
    time.sleep(sample_for)
    assert proc.poll() is None, f"daemon exited early with {proc.returncode}"
    proc.send_signal(sig)



# ------------------------------------------------- Python interpreters
# Real CPython interpreters from Debian releases (tests/test_python.py):
# chroots made by scripts/setup-pythons.sh in $SPLUNK_PROFD_PYTHONS
# (default /var/cache/splunk-profd/pythons), plus the machine's own 3.11.

PYTHONS_CACHE = Path(os.environ.get("SPLUNK_PROFD_PYTHONS", "/var/cache/splunk-profd/pythons"))
PYTHONS_SETUP = REPO / "scripts" / "setup-pythons.sh"
PYTHON_TARGETS = REPO / "tests" / "python_targets"
HOST_PYTHON = Path("/usr/bin/python3.11")
PYTHON_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}


class Interpreter:
    """One CPython: `root` is its chroot (None for the host's 3.11 and the
    free-threaded builds), `command` its interpreter inside the chroot;
    `executable` runs on the host instead (free-threaded builds)."""

    def __init__(self, name, minor, root, command="python3", executable=None, free_threaded=False):
        self.name, self.minor, self.root, self.command = name, minor, root, command
        self.executable, self.free_threaded = executable, free_threaded

    def install(self, files):
        """Copies files into a new directory the interpreter sees (inside
        the chroot) and returns that directory's path as the target sees it."""
        import shutil
        import uuid

        seen = Path("/tmp") / f"profd-pytest-{uuid.uuid4().hex[:10]}"
        host = Path(f"{self.root}{seen}") if self.root else seen
        host.mkdir(parents=True)
        for f in files:
            shutil.copy(f, host / Path(f).name)
        return seen

    def host_path(self, seen):
        """The host path of a path as the target sees it."""
        return Path(f"{self.root}{seen}") if self.root else Path(seen)

    def argv(self, script, *args, nice=True):
        if self.executable:
            # The targets' busy threads really run in parallel on a
            # free-threaded build: six of workload.py's take both cores of
            # the test machine from the profiler, whose ticks then wait
            # for CPU (99 of 300 taken at load 4, 23 at load 19).  nice
            # execs, so the pid is python's.  nice=False for targets
            # without busy threads (churn.py).
            python = ["/usr/bin/nice", "-n", "10"] if nice else []
            python.append(str(self.executable))
        else:
            python = ["/usr/sbin/chroot", str(self.root), self.command] if self.root else [str(HOST_PYTHON)]
        return [*python, str(script), *(str(a) for a in args)]

    def __repr__(self):
        return self.name


# name: (minor, interpreter in the chroot)
PYTHON_CHROOTS = {
    "3.9-bullseye": ((3, 9), "python3"),
    "3.13-trixie": ((3, 13), "python3"),
    "3.14-forky": ((3, 14), "python3"),
    "3.15-forky": ((3, 15), "python3.15"),
}
PYTHON_NAMES = ["3.9-bullseye", "3.11-host", "3.13-trixie", "3.14-forky", "3.15-forky"]

# Free-threaded (--disable-gil) builds of Debian's source packages, made by
# scripts/setup-pythons-ft.sh (minutes of compiling: scripts/test.sh runs it
# in the background; the fixture never does) into <cache>/<name>/python and
# run in place on the host.  A test of one that is absent is skipped, with
# the command that builds it.  3.14t is built by that script too when the
# mirror serves its sources, but the reader refuses it so far: not listed.
PYTHONS_FT_SETUP = REPO / "scripts" / "setup-pythons-ft.sh"
PYTHON_FT_BUILDS = {"3.13t-trixie": (3, 13)}
PYTHON_FT_NAMES = list(PYTHON_FT_BUILDS)
# Free-threaded first: pytest keeps the last parameter's instance of a
# module-scoped fixture until the module ends, and a free-threaded
# workload.py left running keeps both cores busy for the tests after it.
PYTHON_ALL_NAMES = PYTHON_FT_NAMES + PYTHON_NAMES


def python_ft_missing(name):
    """Why the free-threaded build `name` cannot be used, or None."""
    d = PYTHONS_CACHE / name
    if (d / "stamp").is_file() and (d / "python").exists():
        return None
    return f"free-threaded {name} not built in {d}: run {PYTHONS_FT_SETUP} (as root, ~5 min)"


def _pythons_ready():
    missing = [
        name for name, (_, executable) in PYTHON_CHROOTS.items()
        if not ((PYTHONS_CACHE / name / "stamp").is_file()
                and (PYTHONS_CACHE / name / "root/usr/bin" / executable).exists())
    ]
    return missing


@pytest.fixture(scope="session")
def pythons():
    """{name: Interpreter} for PYTHON_NAMES.  Runs scripts/setup-pythons.sh
    (a few minutes, once; cached) when a chroot is missing."""
    missing = _pythons_ready()
    if missing:
        print(f"\nPython interpreters {missing} missing in {PYTHONS_CACHE}: running {PYTHONS_SETUP}", flush=True)
        done = subprocess.run(["bash", str(PYTHONS_SETUP)], capture_output=True, text=True, timeout=1800)
        if done.returncode or _pythons_ready():
            pytest.fail(
                f"{PYTHONS_SETUP} failed (exit {done.returncode}); run it by hand (as root; "
                f"SPLUNK_PROFD_PYTHONS chooses the cache, now {PYTHONS_CACHE}):\n{done.stdout}\n{done.stderr}",
                pytrace=False,
            )
    if not HOST_PYTHON.is_file():
        pytest.fail(f"{HOST_PYTHON} missing: apt-get install python3.11", pytrace=False)
    found = {
        name: Interpreter(name, minor, PYTHONS_CACHE / name / "root", command)
        for name, (minor, command) in PYTHON_CHROOTS.items()
    }
    found["3.11-host"] = Interpreter("3.11-host", (3, 11), None)
    for name, minor in PYTHON_FT_BUILDS.items():
        if not python_ft_missing(name):
            found[name] = Interpreter(name, minor, None, executable=PYTHONS_CACHE / name / "python",
                                      free_threaded=True)
    return found


def python_interpreter(pythons, name):
    """pythons[name], or skips the test when that free-threaded build is
    absent (the chroots and the host's 3.11 are always there)."""
    if name not in pythons:
        pytest.skip(python_ft_missing(name) or f"{name} unavailable")
    return pythons[name]


def python_source_lines(path):
    """{name: line} of the `# LINE:name` markers of a Python target."""
    lines = Path(path).read_text().splitlines()
    return {m.group(1): n for n, text in enumerate(lines, 1) for m in re.finditer(r"# LINE:(\w+)", text)}


# -------------------------------------------------------------- markers


# The interpreters whose parameters the ASan+UBSan run leaves out.  Their
# readers are the 3.11+ code driven by other offsets: 3.9 (the old frame
# chain), 3.11 (the host's), 3.15 (_Py_DebugOffsets) and 3.13t (free-
# threaded) keep every C path under the sanitizers, and the normal build
# runs all six.  CI's 30 minutes: the two cost ~2 min of the ASan run.
ASAN_SKIPPED_PYTHONS = {"3.13-trixie", "3.14-forky"}


# SPLUNK_PROFD_FT_TESTS=none runs every test but those of the free-threaded
# builds, =only just those: scripts/test.sh runs the first while a fresh
# machine still compiles the builds, the second once they are there.
FT_TESTS = os.environ.get("SPLUNK_PROFD_FT_TESTS", "all")


def leaves_out(params):
    """Whether this run leaves out a test with these parameters."""
    values = {str(v) for v in params.values()}
    if is_asan_build(PROFD) and ASAN_SKIPPED_PYTHONS & values:
        return True
    free_threaded = bool(set(PYTHON_FT_NAMES) & values)
    return (FT_TESTS == "none" and free_threaded) or (FT_TESTS == "only" and not free_threaded)


def pytest_collection_modifyitems(config, items):
    kept, left_out = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        (left_out if leaves_out(params) else kept).append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "soak: minutes-long daemon soak test (tests/test_watch_soak.py); runs against the normal "
        "build only, skipped for ASan builds; `-m 'not soak'` leaves it out",
    )
