"""The Python package publishes OTEP 4947 thread records (issue 19, item 3):
its native part (_otel_thread_ctx.so, built at pip-install time) exports
otel_thread_ctx_v1 and Python writes each thread's record on attach/detach.

Every test runs the package with our own segment left out
(SPLUNK_PROFD_CONTEXT_SEGMENT=0, checked in the maps), so the labels can
only come from the OTEP 4947 record (and the key map / schema from the
OTEP 4719 process context): an app of the real opentelemetry-sdk with two
threads in nested spans on every cached interpreter, a span that crosses
fork, and the record read back in-process through dlsym (cleared on
detach and by uninstall).  Last, the fallback: installed without a C
compiler, the package stays pure Python (segment only) with one warning."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import PYTHON_ALL_NAMES, PYTHON_ENV, Target, functions, python_interpreter  # noqa: E402
from test_asyncio import otel_packages, share  # noqa: E402,F401
from test_context import APPS, check_full_width, check_two_threads, span_labels  # noqa: E402

# opentelemetry-sdk 1.45 (the runner's, copied in) needs Python 3.10+.
OTEP_PYTHONS = [name for name in PYTHON_ALL_NAMES if name != "3.9-bullseye"]
NO_SEGMENT = {"SPLUNK_PROFD_CONTEXT_SEGMENT": "0"}
APP_FILES = [APPS / "otel_common.py", APPS / "py_spans.py", APPS / "py_otep_fork.py", APPS / "py_otep_records.py"]


def start(interpreter, packages, script, *args, env=None):
    """Starts script (with the package, the SDK and the apps where the
    interpreter sees them); returns (target, its JSON report, the shared
    directory's path as the target sees it)."""
    seen = share(interpreter, packages)
    for f in APP_FILES:
        shutil.copy(f, interpreter.host_path(seen))
    env = {**PYTHON_ENV, "PYTHONPATH": str(seen), **NO_SEGMENT, **(env or {})}
    target = Target(interpreter.argv(seen / script, *args), env=env, cwd="/")
    report = json.loads(target.readline(timeout=60))
    target.wait_ready(timeout=30)
    return target, report, seen


def check_standards_only(pid, stderr):
    maps = Path(f"/proc/{pid}/maps").read_text()
    assert "/memfd:OTEL_CTX" in maps, maps
    assert "splunk-profd-ctx" not in maps, "SPLUNK_PROFD_CONTEXT_SEGMENT=0 must leave our segment out"
    assert "ignoring OpenTelemetry" not in stderr, stderr
    assert re.search(r"otel_thread_ctx_v1 in \S*splunk_profd_context/_otel_thread_ctx\.so", stderr), stderr
    assert re.search(r"OpenTelemetry process context: \d+ resource attributes, 0 thread attribute keys, "
                     r"schema tlsdesc_v1_dev", stderr), stderr


@pytest.mark.parametrize("name", OTEP_PYTHONS)
def test_sdk_spans_labelled_through_the_otep_record_alone(name, pythons, profd, otel_packages):
    """Two threads, nested spans and work outside them (py_spans.py): the
    samples in each span carry its ids (>= 95%), those outside carry none
    (detach cleared the record)."""
    interpreter = python_interpreter(pythons, name)
    target, report, seen = start(interpreter, otel_packages, "py_spans.py")
    try:
        result, prof = profd.profile([target.pid], duration=2.5, interval=10, extra=("-vv",))
        check_standards_only(target.pid, result.stderr)
        check_two_threads(prof.samples, report)
    finally:
        target.kill()
        shutil.rmtree(interpreter.host_path(seen), ignore_errors=True)


def test_records_in_dynamic_tls_label_samples(pythons, profd, otel_packages):
    """glibc puts a dlopen'ed module's TLS in its static surplus when there
    is room (so in the test above); a big app may have used it up.
    optional_static_tls=0 leaves none: the reader then walks the DTV."""
    interpreter = pythons["3.11-host"]
    tunables = {"GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=0"}
    target, report, seen = start(interpreter, otel_packages, "py_spans.py", env=tunables)
    try:
        result, prof = profd.profile([target.pid], duration=2.5, interval=10, extra=("-vv",))
        check_standards_only(target.pid, result.stderr)
        assert re.search(r"otel_thread_ctx_v1: TLS module \d+, dynamic offset", result.stderr), result.stderr
        check_two_threads(prof.samples, report)
    finally:
        target.kill()
        shutil.rmtree(interpreter.host_path(seen), ignore_errors=True)


def test_a_span_crossing_fork_labels_the_child(pythons, profd, otel_packages):
    """The child was forked inside the span and never attaches: its record
    (inherited TLS, re-published by the at-fork hook) labels it; the
    parent left the span, so its free work carries none."""
    interpreter = pythons["3.11-host"]
    target, report, seen = start(interpreter, otel_packages, "py_otep_fork.py")
    try:
        assert report["records"] is True
        result, prof = profd.profile([report["parent"], report["child"]], duration=2.5, interval=10, extra=("-vv",))
        check_standards_only(report["child"], result.stderr)
    finally:
        target.kill()
        shutil.rmtree(interpreter.host_path(seen), ignore_errors=True)
    check_full_width(prof.samples)
    ids = ([report["ids"][0]], [report["ids"][1]])
    child = [s for s in prof.samples if s["num_labels"]["process.pid"] == [report["child"]]
             and "inherited_work" in functions(s)]
    assert len(child) >= 10, f"{len(child)} samples of the child in inherited_work"
    right = [s for s in child if span_labels(s) == ids]
    assert len(right) >= 0.95 * len(child), f"{len(right)}/{len(child)} child samples carry {ids}"
    parent = [s for s in prof.samples if s["num_labels"]["process.pid"] == [report["parent"]]
              and "free_work" in functions(s)]
    assert len(parent) >= 10 and not [s for s in parent if "span_id" in s["labels"]]


@pytest.mark.parametrize("name", ["3.11-host", "3.13t-trixie"])
def test_records_read_back_in_process(name, pythons, otel_packages):
    """py_otep_records.py: the record dlsym finds for each thread holds its
    current span, its parent's after an inner detach, nothing after the
    outer one, and uninstall() clears a thread still inside a span."""
    interpreter = python_interpreter(pythons, name)
    seen = share(interpreter, otel_packages)
    for f in APP_FILES:
        shutil.copy(f, interpreter.host_path(seen))
    try:
        done = subprocess.run(interpreter.argv(seen / "py_otep_records.py", nice=False), capture_output=True,
                              text=True, timeout=60, env={**PYTHON_ENV, "PYTHONPATH": str(seen)}, cwd="/")
    finally:
        shutil.rmtree(interpreter.host_path(seen), ignore_errors=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr
    assert "RuntimeWarning" not in done.stderr, done.stderr


def test_without_a_compiler_the_package_stays_pure_python(tmp_path):
    """pip install with no working C compiler succeeds (the native part is
    optional); install() then warns once, publishes our segment and no
    thread records."""
    target, source = tmp_path / "nocc", tmp_path / "source"
    # A copy: the tree's build/ may hold a .so from an earlier install.
    shutil.copytree(APPS.parent.parent / "context" / "python", source,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "*.so"))
    env = {**PYTHON_ENV, "CC": "/bin/false", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "--target", str(target),
         str(source)],
        capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert not list(target.glob("splunk_profd_context/*.so"))
    script = ("import warnings, splunk_profd_context as s\n"
              "with warnings.catch_warnings(record=True) as w:\n"
              "    warnings.simplefilter('always')\n"
              "    s.install(); s.uninstall(); s.install()\n"
              "print(len([x for x in w if 'OTEP 4947' in str(x.message)]), s.thread_records_published(),\n"
              "      s.segment() is not None)\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                         env={**PYTHON_ENV, "PYTHONPATH": str(target)})
    assert run.stdout.split() == ["1", "False", "True"], run.stdout + run.stderr
