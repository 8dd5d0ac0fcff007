"""Span correlation: the app-written context segment (context/FORMAT.md),
its writers (context/python/, context/c/) and trace_id/span_id on samples.

Real parts only: the Python writer is pip-installed from context/python
into a scratch directory and runs on the real opentelemetry-api/-sdk;
samples are checked in the --output profile and, for the main test, in
what the real OTLP receiver (tests/otlp_receiver.py) got.  C targets come
from tests/context_targets/ (built by meson)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import BUILD, REPO, functions  # noqa: E402
from otlp_receiver import Receiver  # noqa: E402
from test_export import clean_export_env, decode_body, exported_samples  # noqa: E402,F401

APPS = REPO / "tests" / "context_targets"
CTX_TARGETS = BUILD / "tests" / "context_targets"
HEX32, HEX16 = re.compile(r"[0-9a-f]{32}"), re.compile(r"[0-9a-f]{16}")
SEGMENT_WARNING = "span context segment"


@pytest.fixture(scope="session")
def writer_path(tmp_path_factory):
    """context/python pip-installed (no compiler, no network) into a directory for PYTHONPATH."""
    target = tmp_path_factory.mktemp("pyctx")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "--target",
         str(target), str(REPO / "context" / "python")],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, f"pip install context/python failed:\n{done.stderr}"
    return target


def app_env(writer_path, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPLUNK_", "OTEL_"))}
    env["PYTHONPATH"] = f"{writer_path}{os.pathsep}{APPS}"
    env.update(extra)
    return env


@pytest.fixture
def start_app_reported(start_target):
    """Starts an app that prints one JSON line, then "ready"."""
    import json

    from conftest import Target

    started = []

    def start(argv, env):
        target = Target([str(a) for a in argv], env=env)
        started.append(target)
        report = json.loads(target.readline(timeout=30))
        target.wait_ready(timeout=30)
        return target, report

    yield start
    for target in started:
        target.kill()


def span_labels(sample):
    labels = sample["labels"]
    return labels.get("trace_id"), labels.get("span_id")


def tid_of(sample):
    return sample["num_labels"]["thread.os.id"][0]


def check_full_width(samples):
    for s in samples:
        trace, span = span_labels(s)
        if trace or span:
            assert trace and span and HEX32.fullmatch(trace[0]) and HEX16.fullmatch(span[0]), s["labels"]


def check_span_work(samples, tid, function, ids, min_share=0.95):
    """Samples of thread tid inside `function`: >= min_share carry exactly `ids`."""
    inside = [s for s in samples if tid_of(s) == tid and function in functions(s)]
    assert len(inside) >= 5, f"only {len(inside)} samples of {tid} in {function}"
    exact = [s for s in inside if span_labels(s) == ([ids[0]], [ids[1]])]
    assert len(exact) >= min_share * len(inside), (
        f"{function}: {len(exact)}/{len(inside)} samples carry {ids}; others: "
        f"{[span_labels(s) for s in inside if s not in exact][:5]}"
    )


def check_no_span_work(samples, tid, function):
    outside = [s for s in samples if tid_of(s) == tid and function in functions(s)]
    assert len(outside) >= 5, f"only {len(outside)} samples of {tid} in {function}"
    labelled = [span_labels(s) for s in outside if span_labels(s) != (None, None)]
    assert not labelled, f"{function} runs outside any span but {len(labelled)} samples carry {labelled[:3]}"


def check_two_threads(samples, report):
    check_full_width(samples)
    for name in ("a", "b"):
        thread = report[name]
        for function in (f"outer_work_{name}", f"inner_work_{name}"):
            trace, span = thread[function]
            assert trace.startswith("0") and span.startswith("0"), "ids must have leading zero nibbles"
            check_span_work(samples, thread["tid"], function, thread[function])
        check_no_span_work(samples, thread["tid"], f"free_work_{name}")


def test_python_spans_in_profile_and_otlp_export(profd, start_app_reported, writer_path, decode_body):
    target, report = start_app_reported([sys.executable, APPS / "py_spans.py"], app_env(writer_path))
    with Receiver() as receiver:
        result = profd.run("--pid", target.pid, "--duration", 3, "--interval", 10, "--endpoint", receiver.endpoint,
                           timeout=60)
        assert result.returncode == 0, str(result)
        records = receiver.wait_records(lambda r: len(r) > 0, 10)
    exported = [s for _, s in exported_samples(records, decode_body)]
    check_two_threads(exported, report)
    check_two_threads(profd.read_profile(result.output).samples, report)


def test_opentelemetry_instrument_enables_the_writer(profd, start_app_reported, writer_path):
    instrument = shutil.which("opentelemetry-instrument")
    assert instrument, "opentelemetry-instrument not on PATH (scripts/setup.sh installs opentelemetry-distro)"
    otel_env = {"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "none"}
    argv = [instrument, sys.executable, APPS / "py_spans.py", "noinstall"]
    _, off = start_app_reported(argv, app_env(writer_path, **otel_env))
    assert off["installed"] is False, "the writer must stay off without SPLUNK_PROFILER_ENABLED=true"
    target, report = start_app_reported(argv, app_env(writer_path, SPLUNK_PROFILER_ENABLED="true", **otel_env))
    assert report["installed"] is True
    _, prof = profd.profile([target.pid], duration=2, interval=10)
    check_two_threads(prof.samples, report)


def test_fork_and_multiprocessing_children_publish_their_own_spans(profd, start_app_reported, writer_path):
    target, report = start_app_reported([sys.executable, APPS / "py_fork.py"], app_env(writer_path))
    pids = {who: report[who]["pid"] for who in ("parent", "fork", "mp")}
    assert len(set(pids.values())) == 3
    for who, pid in pids.items():  # its own OTEP 4719 process context (MADV_DONTFORK: none inherited)
        maps = Path(f"/proc/{pid}/maps").read_text()
        assert maps.count("/memfd:OTEL_CTX") == 1, f"{who}: {maps}"
    result, prof = profd.profile(list(pids.values()), duration=3, interval=10)
    assert SEGMENT_WARNING not in result.stderr, result.stderr  # an inherited segment is not "bad"
    check_full_width(prof.samples)
    all_ids = {tuple(report[who]["ids"]) for who in pids}
    for who, pid in pids.items():
        mine = [s for s in prof.samples if s["num_labels"]["process.pid"] == [pid]]
        seen = {(s["labels"]["trace_id"][0], s["labels"]["span_id"][0]) for s in mine if "span_id" in s["labels"]}
        assert seen == {tuple(report[who]["ids"])}, f"{who}: spans {seen}, expected {report[who]['ids']} of {all_ids}"
        main_tid = pid if who != "parent" else None
        inside = [s for s in mine if f"process_work_{who}" in functions(s)]
        assert len(inside) >= 5, f"{who}: {len(inside)} samples in process_work_{who}"
        exact = [s for s in inside if span_labels(s) == ([report[who]["ids"][0]], [report[who]["ids"][1]])]
        assert len(exact) >= 0.95 * len(inside), f"{who}: {len(exact)}/{len(inside)}"
        free = [s for s in mine if "free_work" in functions(s) and (main_tid is None or tid_of(s) == main_tid)]
        assert free and not [s for s in free if "span_id" in s["labels"]], f"{who}: free_work carries a span"


@pytest.mark.parametrize("include", [False, True])
def test_internal_sdk_threads_filtered_unless_asked(profd, start_app_reported, writer_path, include):
    target, report = start_app_reported([sys.executable, APPS / "py_spans.py", "internal"], app_env(writer_path))
    internal = report["internal_tid"]
    env = {"SPLUNK_PROFILER_INCLUDE_INTERNAL_STACKS": "true"} if include else {}
    result = profd.run("--pid", target.pid, "--duration", 2.5, "--interval", 10, env=env, timeout=60)
    assert result.returncode == 0, str(result)
    prof = profd.read_profile(result.output)
    worker = [s for s in prof.samples if tid_of(s) == internal]
    if include:
        assert len(worker) >= 20, f"{len(worker)} samples of the SDK worker thread {internal}"
        assert any("exporter_burn" in functions(s) for s in worker)
    else:
        assert not worker, f"{len(worker)} samples of the internal thread {internal}"
    # The application threads are unaffected either way.
    check_span_work(prof.samples, report["a"]["tid"], "inner_work_a", report["a"]["inner_work_a"])


def test_c_writer(profd, start_target_lines):
    target, lines = start_target_lines([CTX_TARGETS / "ctx_c_spans"], 2)
    report = {int(tid): (trace, span) for tid, trace, span in (line.split() for line in lines)}
    _, prof = profd.profile([target.pid], duration=2.5, interval=10)
    check_full_width(prof.samples)
    for tid, ids in report.items():
        assert ids[0].startswith("0000") and ids[1].startswith("0000")
        check_span_work(prof.samples, tid, "in_span_work", ids)
        check_no_span_work(prof.samples, tid, "out_span_work")


UNSHARE = ["/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]


def unshared_child(pid):
    """(pid of unshare's child, {its threads' ids inside its PID namespace: ours})."""
    child = int(Path(f"/proc/{pid}/task/{pid}/children").read_text().split()[0])
    ours = {}
    for task in Path(f"/proc/{child}/task").iterdir():
        nspid = next(l for l in (task / "status").read_text().splitlines() if l.startswith("NSpid:"))
        ours[int(nspid.split()[-1])] = int(task.name)
    return child, ours


def test_c_writer_in_its_own_pid_namespace(profd, start_target_lines):
    """A container's threads write their own ids (the namespace's) into their
    slots; the C writer's OTEP 4947 record needs none, its slot does."""
    target, lines = start_target_lines([*UNSHARE, CTX_TARGETS / "ctx_c_spans"], 2)
    pid, ours = unshared_child(target.pid)
    report = {int(tid): (trace, span) for tid, trace, span in (line.split() for line in lines)}
    assert all(ours[tid] != tid for tid in report), (report, ours)
    _, prof = profd.profile([pid], duration=2.5, interval=10)
    for tid, ids in report.items():
        check_span_work(prof.samples, ours[tid], "in_span_work", ids)
        check_no_span_work(prof.samples, ours[tid], "out_span_work")


def test_python_writer_in_its_own_pid_namespace(profd, start_app_reported, writer_path):
    """The Python writer has only its slots, which name threads by the container's ids."""
    target, report = start_app_reported([*UNSHARE, sys.executable, APPS / "py_spans.py"], app_env(writer_path))
    pid, ours = unshared_child(target.pid)
    for name in ("a", "b"):
        assert ours[report[name]["tid"]] != report[name]["tid"], (report, ours)
        report[name]["tid"] = ours[report[name]["tid"]]
    _, prof = profd.profile([pid], duration=3, interval=10)
    check_two_threads(prof.samples, report)


def span_phase(sample, request):
    """Where in its request's span a sample was taken: "first 10 ms", "rest"
    or None (outside, or within 1 ms of an edge: source.event.time is in ms)."""
    t = sample["num_labels"]["source.event.time"][0]
    begin, end = (ns / 1e6 for ns in request["span_ns"])
    if begin + 1 <= t < begin + 10:
        return "first 10 ms"
    return "rest" if begin + 10 <= t <= end - 1 else None


@pytest.mark.parametrize("writer", ["python", "python-otep", "c"])
def test_new_threads_are_labelled_from_their_first_sample(profd, start_target, writer_path, tmp_path, writer):
    """Thread-per-request: every request is a new thread that opens its span
    at once and spins 10 + 15 ms in it (py_new_threads.py through our Python
    writer and the OpenTelemetry SDK; ctx_c_spans with CTX_REQUESTS through
    the C library).  At a 5 ms interval >= 99% of the samples its thread
    took inside the span (by time: the app reports when the span began and
    ended) carry the span's ids, and so do >= 99% of those in the span's
    first 10 ms.  Through our segment alone, Python threads once had only
    7-27% of their first 10 ms labelled (the tid -> slot index was rebuilt
    at most every 20 ms; the home-slot probe fixed it).  "python-otep"
    leaves the segment out (SPLUNK_PROFD_CONTEXT_SEGMENT=0): the package's
    OTEP 4947 record alone labels them, as C threads are labelled by
    theirs, which needs no index.  A host too loaded to
    give 20 first-10-ms samples in 3 s gets more rounds."""
    import json

    report_file = tmp_path / "requests.jsonl"
    if writer.startswith("python"):
        extra = {"SPLUNK_PROFD_CONTEXT_SEGMENT": "0"} if writer == "python-otep" else {}
        argv, env = [sys.executable, APPS / "py_new_threads.py", report_file], app_env(writer_path, **extra)
    else:
        argv, env = [CTX_TARGETS / "ctx_c_spans"], {**os.environ, "CTX_REQUESTS": str(report_file)}
    target = start_target(argv, env=env)
    if writer == "python-otep":
        assert "splunk-profd-ctx" not in Path(f"/proc/{target.pid}/maps").read_text(), "the segment must be left out"
    samples = []
    for _ in range(4):
        _, prof = profd.profile([target.pid], duration=3, interval=5)
        print(prof.summary_line)
        samples += prof.samples
        requests = {}
        for line in report_file.read_text().splitlines():
            request = json.loads(line)
            requests.setdefault(request["tid"], []).append(request)
        counts = {phase: [0, 0, []] for phase in ("first 10 ms", "rest")}
        for s in samples:
            mine = requests.get(tid_of(s), ())
            phase = span_phase(s, mine[0]) if len(mine) == 1 else None
            if phase:
                right = span_labels(s) == tuple([x] for x in mine[0]["ids"])
                counts[phase][0] += right
                counts[phase][1] += 1
                if not right and len(counts[phase][2]) < 3:
                    counts[phase][2].append((span_labels(s), functions(s)[:3]))
        if counts["first 10 ms"][1] >= 20:
            break
    print(f"{writer}: {len(requests)} requests; right/inside (others): {counts}")
    right, inside = (sum(c[i] for c in counts.values()) for i in (0, 1))
    first_right, first_inside, _ = counts["first 10 ms"]
    assert first_inside >= 20, f"too few samples in a span's first 10 ms: {counts}"
    assert right >= 0.99 * inside, f"{right}/{inside} samples inside spans carry their ids: {counts}"
    assert first_right >= 0.99 * first_inside, (
        f"{first_right}/{first_inside} samples of a new thread's first 10 ms carry their ids: {counts}")

def test_c_writer_installs_with_pkg_config(tmp_path):
    """meson install, then build a program with `pkg-config splunk-profd-context` only."""
    destdir = tmp_path / "dest"
    done = subprocess.run(["meson", "install", "-C", str(BUILD), "--no-rebuild", "--destdir", str(destdir)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    pcs = list(destdir.rglob("splunk-profd-context.pc"))
    assert len(pcs) == 1, pcs
    env = dict(os.environ, PKG_CONFIG_PATH=str(pcs[0].parent), PKG_CONFIG_SYSROOT_DIR=str(destdir))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "splunk-profd-context"],
                           capture_output=True, text=True, env=env, check=True).stdout.split()
    program = tmp_path / "app"
    subprocess.run(["cc", "-o", str(program), str(APPS / "ctx_c_spans.c"), *flags, "-pthread"], check=True)
    libdir = next(f[2:] for f in flags if f.startswith("-L"))
    proc = subprocess.Popen([program], stdout=subprocess.PIPE, text=True, env=dict(os.environ, LD_LIBRARY_PATH=libdir))
    try:
        lines = [proc.stdout.readline().strip() for _ in range(3)]
        assert lines[2] == "ready", lines
        assert "/memfd:splunk-profd-ctx" in Path(f"/proc/{proc.pid}/maps").read_text()
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def start_target_lines():
    """Starts a target that prints n lines, then "ready"; returns (Target, lines)."""
    from conftest import Target

    started = []

    def start(argv, n):
        target = Target([str(a) for a in argv])
        started.append(target)
        lines = [target.readline() for _ in range(n)]
        target.wait_ready()
        return target, lines

    yield start
    for target in started:
        target.kill()


def test_recycled_tid_never_inherits_a_dead_threads_span(profd, start_target_lines):
    target, lines = start_target_lines([CTX_TARGETS / "ctx_raw", "stale"], 1)
    busy = int(lines[0])
    result, prof = profd.profile([target.pid], duration=3, interval=10)
    samples = [s for s in prof.samples if tid_of(s) == busy]
    assert len(samples) >= 10, prof.thread_names()
    assert not [s for s in samples if "span_id" in s["labels"]], "a stale slot's span was used"
    assert SEGMENT_WARNING not in result.stderr


def test_a_target_bumping_claims_does_not_multiply_our_cpu(profd, start_target_lines):
    """header.claims is the target's to bump: one that bumps it in a tight
    loop (ctx_raw claims, 16384 slots) may cost the reader about one index
    rebuild a second, not one every 20 ms (that raised our CPU 5x).  Both
    daemons run side by side against twin targets, one bumping and one
    spinning the same way without touching the segment, so the host's
    load hits both alike; the busy thread's span is found either way."""
    bumping, lines_b = start_target_lines([CTX_TARGETS / "ctx_raw", "claims"], 1)
    quiet, lines_q = start_target_lines([CTX_TARGETS / "ctx_raw", "quiet"], 1)
    duration, interval = 5, 5
    daemons = [profd.start("--pid", t.pid, "--duration", duration, "--interval", interval) for t in (bumping, quiet)]
    results = [profd.finish(d, timeout=duration + 60) for d in daemons]
    assert all(r.returncode == 0 for r in results), "\n".join(map(str, results))
    cpu = [r.summary["cpu_ms"] for r in results]
    print(f"daemon CPU: claims bumped {cpu[0]} ms, quiet {cpu[1]} ms over {duration} s")
    for result, busy in zip(results, (int(lines_b[0]), int(lines_q[0]))):
        samples = [s for s in profd.read_profile(result.output).samples if tid_of(s) == busy]
        spanned = [s for s in samples if span_labels(s)[1] == ["dd" * 8]]
        assert len(samples) >= 100 and len(spanned) >= 0.9 * len(samples), (len(samples), len(spanned))
    assert cpu[0] <= 1.3 * cpu[1] + 20, f"bumping claims costs the daemon {cpu[0]} ms of CPU vs {cpu[1]} ms"


def test_garbage_segments_never_crash_the_reader(profd, start_target_lines):
    """Thousands of random and adversarial segment states (ctx_raw garbage);
    meant for the ASan build too (SPLUNK_PROFD_BUILD=build-...-asan)."""
    target, lines = start_target_lines([CTX_TARGETS / "ctx_raw", "garbage", "7"], 1)
    busy = int(lines[0])
    result, prof = profd.profile([target.pid], duration=4, interval=5)
    assert "AddressSanitizer" not in result.stderr and "runtime error" not in result.stderr, result.stderr
    warnings = [l for l in result.stderr.splitlines() if SEGMENT_WARNING in l and "ignoring" in l]
    assert len(warnings) <= 1, warnings
    samples = [s for s in prof.samples if tid_of(s) == busy]
    assert len(samples) >= 200, f"sampling stalled: {len(samples)} samples; {prof.thread_names()}"
    check_full_width(prof.samples)
    assert target.alive()
