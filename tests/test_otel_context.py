"""Span correlation by the OpenTelemetry standards: OTEP 4947 thread
records (otel_thread_ctx_v1) and OTEP 4719 process context (OTEL_CTX).

Writers: tests/context_targets/otel_tls.c (by hand: the variable in the
executable, or in a dlopen'ed library built global-dynamic and TLSDESC),
ddtrace from PyPI (its Rust extension publishes both standards), and our
own: the C library (both standards, in libsplunk-profd-context.so, and a
build without our segment, the variable in the executable) and the Python
package (the process context here; its thread records in
tests/test_python_otep.py)."""

import json
import os
import time
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import BUILD, REPO  # noqa: E402
from otlp_receiver import Receiver  # noqa: E402
from test_export import clean_export_env, decode_body, exported_samples, run_export  # noqa: E402,F401
from test_context import app_env, check_no_span_work, check_span_work, writer_path  # noqa: E402,F401

APPS = REPO / "tests" / "context_targets"
CTX_TARGETS = BUILD / "tests" / "context_targets"
VARIANTS = {
    "exe": [CTX_TARGETS / "otel_tls_exe", "exe"],
    "dlopen-gd": [CTX_TARGETS / "otel_tls_dlopen", "dlopen", CTX_TARGETS / "libotel_tls_gnu.so"],
    "dlopen-tlsdesc": [CTX_TARGETS / "otel_tls_dlopen", "dlopen", CTX_TARGETS / "libotel_tls_gnu2.so"],
}


@pytest.fixture
def start_lines():
    from conftest import Target

    started = []

    def start(argv, n, env=None, timeout=10):
        target = Target([str(a) for a in argv], env=env)
        started.append(target)
        lines = [target.readline(timeout=timeout) for _ in range(n)]
        target.wait_ready(timeout=timeout)
        return target, lines

    yield start
    for target in started:
        target.kill()


def tid_of(sample):
    return sample["num_labels"]["thread.os.id"][0]


def check_labelled(samples, expected, attributes=None):
    """Every sample of each expected thread carries its ids (>= 99%), from
    its first on: a thread blocked since before the attach gets the fs_base
    that locates its record from glibc's thread lists, without a stop
    (context/thread_tcb.c)."""
    for tid, (trace, span) in expected.items():
        mine = [s for s in samples if tid_of(s) == tid]
        assert len(mine) >= 20, f"thread {tid}: only {len(mine)} samples"
        right = [s for s in mine if s["labels"].get("trace_id") == [trace] and s["labels"].get("span_id") == [span]]
        assert len(right) >= 0.99 * len(mine), f"thread {tid}: {len(right)}/{len(mine)} labelled {trace}/{span}"
        for key, value in (attributes or {}).get(tid, {}).items():
            assert all(s["labels"].get(key) == [value] for s in right), (key, value, right[0]["labels"])
    others = [s for s in samples if tid_of(s) not in expected and "trace_id" in s["labels"]]
    assert not others, f"unexpected spans on other threads: {others[0]['labels']}"


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_thread_records_label_samples(profd, start_lines, variant):
    target, lines = start_lines(VARIANTS[variant], 3)
    expected = {int(t): (tr, sp) for t, tr, sp in (l.split() for l in lines)}
    routes = {int(l.split()[0]): {"http.route": f"/w/{i}"} for i, l in enumerate(sorted(lines, key=lambda l: l.split()[1]))}
    result, prof = profd.profile([target.pid], duration=2.5, interval=10, extra=("-vv",))
    assert "ignoring OpenTelemetry" not in result.stderr, result.stderr
    check_labelled(prof.samples, expected, routes)


def test_process_context_feeds_the_export_resource(profd, start_lines, decode_body, clean_export_env):
    env = dict(os.environ, OTEL_SERVICE_NAME="from-environment")
    target, lines = start_lines(VARIANTS["exe"], 3, env=env)
    with Receiver() as receiver:
        run_export(profd, [target.pid], receiver.endpoint, 2.5, 100)
        records = receiver.records()
    assert records
    for resource, _, _ in records:
        # The SDK's own resource wins over what the environment says.
        assert resource["service.name"] == "otel-tls-test", resource
        assert resource["deployment.environment.name"] == "otep-test", resource
        assert resource["telemetry.distro.name"] == "splunk-profd", resource
    samples = [s for _, s in exported_samples(records, decode_body)]
    tids = {int(l.split()[0]) for l in lines}
    assert any(s["labels"].get("http.route") for s in samples if tid_of(s) in tids)


def test_garbage_records_and_process_context_never_crash_the_reader(profd, start_lines):
    """Random records, pointers and payloads (otel_tls garbage); meant for
    the ASan build too (SPLUNK_PROFD_BUILD=build-asan)."""
    target, lines = start_lines([CTX_TARGETS / "otel_tls_exe", "garbage", "7"], 1)
    busy = int(lines[0])
    result, prof = profd.profile([target.pid], duration=4, interval=5)
    assert "AddressSanitizer" not in result.stderr and "runtime error" not in result.stderr, result.stderr
    for what in ("thread context", "process context"):
        warnings = [l for l in result.stderr.splitlines() if f"ignoring OpenTelemetry {what}" in l]
        assert len(warnings) <= 1, warnings
    samples = [s for s in prof.samples if tid_of(s) == busy]
    assert len(samples) >= 200, f"sampling stalled: {len(samples)} samples"
    for s in samples:
        for key in ("trace_id", "span_id"):
            for value in s["labels"].get(key, []):
                assert len(value) in (32, 16) and all(c in "0123456789abcdef" for c in value)
    assert target.alive()


@pytest.fixture(scope="session")
def ddtrace_python():
    """ddtrace 4.16.0 from PyPI, in the venv scripts/setup.sh makes."""
    python = Path(os.environ.get("SPLUNK_PROFD_DDTRACE_VENV", "/var/cache/splunk-profd/ddtrace-venv")) / "bin" / "python"
    done = subprocess.run([str(python), "-c", "import ddtrace; print(ddtrace.__version__)"], capture_output=True,
                          text=True)
    assert done.returncode == 0, f"no ddtrace venv at {python} (scripts/setup.sh makes it): {done.stderr[-300:]}"
    return python


def test_ddtrace_app_samples_carry_ddtrace_ids(profd, start_lines, ddtrace_python):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DD_", "OTEL_", "SPLUNK_"))}
    env.update(DD_TRACE_ENABLED="true", DD_INSTRUMENTATION_TELEMETRY_ENABLED="false", DD_REMOTE_CONFIGURATION_ENABLED="false")
    target, lines = start_lines([ddtrace_python, APPS / "dd_spans.py"], 1, env=env, timeout=60)
    expected = {int(t): tuple(ids) for t, ids in json.loads(lines[0]).items()}
    result, prof = profd.profile([target.pid], duration=3, interval=10, extra=("-vv",))
    assert "otel_thread_ctx_v1 in" in result.stderr and "_native" in result.stderr, result.stderr
    check_labelled(prof.samples, expected)
    # ddtrace's key 0 is datadog.local_root_span_id: the span itself here.
    for tid, (_, span) in expected.items():
        roots = {s["labels"].get("datadog.local_root_span_id", [None])[0] for s in prof.samples
                 if tid_of(s) == tid and s["labels"].get("span_id") == [span]}
        assert roots == {span}, roots


# Our C writer: as installed (libsplunk-profd-context.so, linked at start,
# TLSDESC: static TLS), the same library loaded with dlopen, and built into
# the executable without our own segment (SPLUNK_PROFD_CONTEXT_SEGMENT=0),
# where only the standards can label the samples.
C_WRITERS = {
    "library": ([CTX_TARGETS / "ctx_c_spans"], r"libsplunk-profd-context\.so"),
    "dlopen": ([CTX_TARGETS / "ctx_c_spans_dlopen", BUILD / "context" / "libsplunk-profd-context.so"],
               r"libsplunk-profd-context\.so"),
    "no-segment": ([CTX_TARGETS / "ctx_c_spans_otep"], r"ctx_c_spans_otep"),
}


@pytest.mark.parametrize("variant", sorted(C_WRITERS))
def test_c_writer_publishes_the_standards(profd, start_lines, variant):
    argv, module = C_WRITERS[variant]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "SPLUNK_"))}
    env["OTEL_SERVICE_NAME"] = "c-writer"
    target, lines = start_lines(argv, 2, env=env)
    maps = Path(f"/proc/{target.pid}/maps").read_text()
    assert "/memfd:OTEL_CTX" in maps, maps
    assert ("/memfd:splunk-profd-ctx" in maps) == (variant != "no-segment"), maps
    result, prof = profd.profile([target.pid], duration=2.5, interval=10, extra=("-vv",))
    assert "ignoring OpenTelemetry" not in result.stderr, result.stderr
    assert re.search(rf"OpenTelemetry thread context: otel_thread_ctx_v1 in \S*{module}", result.stderr), result.stderr
    assert re.search(r"OpenTelemetry process context: 1 resource attributes, 0 thread attribute keys, "
                     r"schema tlsdesc_v1_dev", result.stderr), result.stderr
    for tid, trace, span in (line.split() for line in lines):
        check_span_work(prof.samples, int(tid), "in_span_work", (trace, span))
        check_no_span_work(prof.samples, int(tid), "out_span_work")


def test_threads_blocked_since_before_the_attach_are_labelled(profd, start_lines):
    """A thread that entered its span and blocked before the attach never
    runs again, so no sampling stop ever gave its fs_base: it is found in
    glibc's thread lists instead (no stop: every thread here is blocked,
    so none is re-stopped), and every sample from the first carries its
    ids (only the standards can label it here)."""
    argv, _ = C_WRITERS["no-segment"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "SPLUNK_"))}
    env["CTX_WORKERS_BLOCK"] = "1"
    target, lines = start_lines(argv, 2, env=env)
    time.sleep(0.3)  # both workers in pause()
    result, prof = profd.profile([target.pid], duration=2, interval=10, extra=("--wall",))
    expected = {int(tid): (trace, span) for tid, trace, span in (line.split() for line in lines)}
    check_labelled(prof.samples, expected)
    assert result.summary["eintr_repaired"] == 0, result.summary
    assert result.summary["restopped"] == 0, result.summary


@pytest.mark.parametrize("variant", ["library", "no-segment"])
def test_spans_read_after_the_main_thread_exited(profd, start_lines, variant):
    """The leader called pthread_exit: its /proc entry has no maps or
    memory, and every reader (our segment, OTEP 4947 records, the process
    context) goes through a live thread."""
    argv, _ = C_WRITERS[variant]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "SPLUNK_"))}
    env["CTX_MAIN_EXITS"] = "1"
    target, lines = start_lines(argv, 2, env=env)
    deadline = time.monotonic() + 5
    while not Path(f"/proc/{target.pid}/status").read_text().count("State:\tZ"):
        assert time.monotonic() < deadline, "the main thread did not exit"
        time.sleep(0.02)
    result, prof = profd.profile([target.pid], duration=2.5, interval=10)
    for tid, trace, span in (line.split() for line in lines):
        check_span_work(prof.samples, int(tid), "in_span_work", (trace, span))
        check_no_span_work(prof.samples, int(tid), "out_span_work")


def test_python_writer_publishes_the_process_context(profd, writer_path, start_lines, clean_export_env):
    """The SDK's resource reaches the export through OTEL_CTX: telemetry.sdk.name
    and service.instance.id exist only there (not in the environment)."""
    env = app_env(writer_path, OTEL_SERVICE_NAME="py-writer")
    target, lines = start_lines([sys.executable, APPS / "py_spans.py"], 1, env=env, timeout=30)
    assert "/memfd:OTEL_CTX" in Path(f"/proc/{target.pid}/maps").read_text()
    with Receiver() as receiver:
        result = run_export(profd, [target.pid], receiver.endpoint, 2.5, 100, extra=("-v",))
        records = receiver.records()
    assert "ignoring OpenTelemetry" not in result.stderr, result.stderr
    assert records
    for resource, _, _ in records:
        assert resource["service.name"] == "py-writer", resource
        assert resource["telemetry.sdk.name"] == "opentelemetry", resource
        assert resource.get("service.instance.id"), resource
        assert resource["telemetry.distro.name"] == "splunk-profd", resource
