"""Export to Splunk: OTLP/gRPC log records carrying base64(gzip(pprof)).

Real parts only: the daemon profiles real targets and exports to a real
grpcio server (tests/otlp_receiver.py) that decodes with the official
opentelemetry-proto classes; bodies are decoded with google/pprof through
`pprofcheck -splunk`.  The contract is ../shared/reference/
splunk-wire-format.md (scope, attributes, labels, resource)."""

import base64
import binascii
import collections
import gzip
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import CHAIN_STACK, ERROR_PREFIX, assert_stack_prefix, parse_summary  # noqa: E402
from otlp_receiver import Receiver, SlowProxy, free_port  # noqa: E402

LOG_ATTRIBUTES = {
    "com.splunk.sourcetype": "otel.profiling",
    "profiling.data.format": "pprof-gzip-base64",
    "profiling.data.type": "cpu",
    "profiling.instrumentation.source": "continuous",
}
EXPORT_ENV_KEYS = [
    "SPLUNK_PROFILER_ENABLED", "SPLUNK_PROFILER_LOGS_ENDPOINT", "SPLUNK_ACCESS_TOKEN",
    "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_LOGS_HEADERS", "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_LOGS_TIMEOUT", "OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE",
]


@pytest.fixture(autouse=True)
def clean_export_env(monkeypatch):
    """No export setting of the caller's shell leaks into a test."""
    for key in EXPORT_ENV_KEYS:
        monkeypatch.delenv(key, raising=False)


@pytest.fixture(scope="module")
def decode_body(pprofcheck, tmp_path_factory):
    """decode_body(record) -> profile dict (see pprofcheck): strict base64,
    gunzip, then google/pprof via `pprofcheck -splunk`."""
    directory = tmp_path_factory.mktemp("bodies")
    count = [0]

    def decode(record):
        text = record.body.string_value
        assert text and "\n" not in text, "body must be one base64 line"
        raw = base64.b64decode(text, validate=True)
        assert raw[:2] == b"\x1f\x8b", f"body is not gzip: {raw[:8]!r}"
        count[0] += 1
        path = directory / f"body-{count[0]}.pb"
        path.write_bytes(gzip.decompress(raw))
        parsed = subprocess.run([str(pprofcheck), "-splunk", str(path)], capture_output=True, text=True, timeout=60)
        assert parsed.returncode == 0, f"pprofcheck -splunk rejected a body: {parsed.stderr.strip()}"
        return json.loads(parsed.stdout)

    return decode


def attributes(record):
    out = {}
    for kv in record.attributes:
        kind = kv.value.WhichOneof("value")
        out[kv.key] = (kind, getattr(kv.value, kind))
    return out


def sample_key(sample):
    return (sample["num_labels"]["thread.os.id"][0], sample["num_labels"]["source.event.time"][0])


def exported_samples(records, decode_body):
    """[(record, sample)] over every record's decoded body."""
    return [(record, s) for _, _, record in records for s in decode_body(record)["samples"]]


def run_export(profd, pids, endpoint, duration, interval, extra=(), env=None):
    args = [a for pid in pids for a in ("--pid", pid)]
    result = profd.run(*args, "--duration", duration, "--interval", interval, "--endpoint", endpoint, *extra,
                       env=env, timeout=duration + 60)
    assert result.returncode == 0, str(result)
    return result


def test_record_layout_resource_and_body(profd, targets, start_target, decode_body, read_profile):
    env = dict(os.environ, OTEL_SERVICE_NAME="checkout",
               OTEL_RESOURCE_ATTRIBUTES="deployment.environment=staging, team=pro%20filing,k8s.pod.name=a%2Cb")
    target = start_target([targets.chain, "--chain"] if False else targets.chain, env=env)
    export_env = {"SPLUNK_ACCESS_TOKEN": "s3cret", "OTEL_EXPORTER_OTLP_HEADERS": "X-Tenant=blue%20team"}
    started_ns = time.time_ns()
    with Receiver() as receiver:
        result = run_export(profd, [target.pid], receiver.endpoint, 3.5, 100, env=export_env)
        records = receiver.records()
        metadata = receiver.metadata
    summary = result.summary
    assert records, f"nothing exported: {result}"
    assert summary["export_records"] == len(records) and summary["export_dropped"] == 0, str(result)

    # Headers: X-SF-Token from SPLUNK_ACCESS_TOKEN, the rest from OTEL_EXPORTER_OTLP_HEADERS.
    assert all(m.get("x-sf-token") == "s3cret" and m.get("x-tenant") == "blue team" for m in metadata), metadata

    # One ResourceLogs per target and request, one ScopeLogs otel.profiling.
    for request in receiver.requests:
        assert len(request.resource_logs) == 1
        assert len(request.resource_logs[0].scope_logs) == 1

    exe = os.path.realpath(targets.chain)
    expected_resource = {
        "service.name": "checkout",
        "deployment.environment": "staging",
        "team": "pro filing",
        "k8s.pod.name": "a,b",
        "host.name": socket.gethostname(),
        "process.pid": target.pid,
        "process.executable.name": os.path.basename(exe),
        "process.executable.path": exe,
        "process.command_line": str(targets.chain),
        "telemetry.distro.name": "splunk-profd",
    }
    cgroup = Path(f"/proc/{target.pid}/cgroup").read_text()
    for resource, scope, record in records:
        for key, value in expected_resource.items():
            assert resource.get(key) == value, f"resource {key}={resource.get(key)!r}, want {value!r}: {resource}"
        assert isinstance(resource["process.pid"], int)
        assert resource["telemetry.distro.version"], resource
        assert "telemetry.sdk.language" not in resource, "a C target is not Python"
        assert ("container.id" in resource) == any(len(w) == 64 for w in cgroup.replace("/", " ").replace("-", " ").split())
        assert scope.name == "otel.profiling" and scope.version == "0.1.0"
        attrs = attributes(record)
        assert set(attrs) == set(LOG_ATTRIBUTES) | {"profiling.data.total.frame.count"}, attrs
        for key, value in LOG_ATTRIBUTES.items():
            assert attrs[key] == ("string_value", value), attrs
        assert attrs["profiling.data.total.frame.count"][0] == "int_value"
        assert record.severity_number == 0 and not record.trace_id and not record.span_id

    now_ns = time.time_ns()
    all_samples = []
    inlined_seen = False
    for resource, scope, record in records:
        prof = decode_body(record)
        samples = prof["samples"]
        assert samples and prof["sample_type"] == [], "Splunk CPU bodies carry no sample_type"
        assert all(s["values"] is None or s["values"] == [] for s in samples)
        times = sorted({s["num_labels"]["source.event.time"][0] for s in samples})
        # time_unix_nano is the first sample's time; observed is when the record was made.
        assert record.time_unix_nano // 1_000_000 == times[0], (record.time_unix_nano, times)
        assert started_ns - 2e9 < record.time_unix_nano <= record.observed_time_unix_nano <= now_ns
        assert record.observed_time_unix_nano - record.time_unix_nano < 3e9
        # 100 ms ticks, 1 s records: several instants per record, each with its own time.
        assert len(times) <= 12, times
        # Frames, not locations: every Line of every Location (inlined functions count).
        assert attributes(record)["profiling.data.total.frame.count"][1] == sum(len(s["frames"]) for s in samples)
        inlined_seen = inlined_seen or any(len(s["frames"]) > s["locations"] for s in samples)
        for s in samples:
            num, text = s["num_labels"], s["labels"]
            assert num["source.event.period"] == [100]
            assert num["thread.id"] and num["thread.os.id"] and text["thread.name"], s
            assert "trace_id" not in text and "span_id" not in text
            assert all(f["function"] and f["system_name"] == f["function"] for f in s["frames"]), s["frames"]
        all_samples += samples
    assert inlined_seen, "chain_inline is inlined: some sample must have more frames than locations"
    assert max(len({s["num_labels"]["source.event.time"][0] for s in decode_body(r)["samples"]}) for _, _, r in records) > 1

    busy_tid = next(tid for tid, name in ((int(t.name), (t / "comm").read_text().strip())
                                          for t in Path(f"/proc/{target.pid}/task").iterdir()) if name == "busy-chain")
    busy = [s for s in all_samples if s["num_labels"]["thread.os.id"] == [busy_tid]]
    assert_stack_prefix(busy, CHAIN_STACK, what="exported busy-chain samples")

    # The same samples as in the file, only the envelope differs; no duplicates.
    keys = [sample_key(s) for s in all_samples]
    assert len(keys) == len(set(keys)), "a sample was exported twice"
    file_profile = read_profile(result.output)
    assert sorted(keys) == sorted(sample_key(s) for s in file_profile.samples)
    by_key = {sample_key(s): s for s in file_profile.samples}
    for s in all_samples:
        assert [f["function"] for f in s["frames"]] == [f["function"] for f in by_key[sample_key(s)]["frames"]]


def test_one_record_per_tick_at_one_second_or_more(profd, targets, start_target, decode_body):
    target = start_target(targets.chain)
    with Receiver() as receiver:
        run_export(profd, [target.pid], receiver.endpoint, 3.3, 1000)
        records = receiver.records()
    assert 2 <= len(records) <= 4, len(records)
    for _, _, record in records:
        times = {s["num_labels"]["source.event.time"][0] for s in decode_body(record)["samples"]}
        assert len(times) == 1, f"one tick per record expected, got {sorted(times)}"


def test_records_span_the_flush_interval_when_ticks_run_late(profd, targets, start_target, decode_body):
    """Ticks that run late (here: the daemon is stopped 250 ms out of every
    300 ms, as on a starved host) must not stretch a record: it closes
    once its first sample is a flush interval old, by the samples' clock.
    Counting ticks once made a "1000 ms" record span 4.8 s."""
    import signal
    import threading

    target = start_target(targets.chain)
    interval, flush, duration = 100, 1000, 8
    with Receiver() as receiver:
        daemon = profd.start("--pid", target.pid, "--duration", duration, "--interval", interval,
                             "--flush-interval", flush, "--endpoint", receiver.endpoint)
        done = threading.Event()

        def starve():
            time.sleep(1.5)  # attached and sampling
            while not done.is_set() and daemon.poll() is None:
                os.kill(daemon.pid, signal.SIGSTOP)
                time.sleep(0.25)
                os.kill(daemon.pid, signal.SIGCONT)
                time.sleep(0.05)
            os.kill(daemon.pid, signal.SIGCONT)

        starver = threading.Thread(target=starve)
        starver.start()
        time.sleep(duration - 1)
        done.set()
        starver.join()
        result = profd.finish(daemon, timeout=60)
        records = receiver.records()
    assert result.returncode == 0, str(result)
    spans = sorted(sorted({s["num_labels"]["source.event.time"][0] for s in decode_body(record)["samples"]})
                   for _, _, record in records)
    late = spans[2:-1]  # whole records while starved (it begins during the second)
    print(f"record spans (ms): {[t[-1] - t[0] for t in spans]}")
    # Closed at the first tick at least flush - 1.5 periods after the first
    # sample (the next would be half a period short of the flush interval),
    # so only that tick's own lateness adds to the span.  The last record
    # is the one flushed at exit.
    for t in (t for t in spans[:-1] if len(t) > 1):
        assert t[-2] - t[0] <= flush - 1.5 * interval, f"a {flush} ms record went on too long: {t}"
        assert t[-1] - t[0] <= flush + 2 * interval, f"a {flush} ms record spans {t[-1] - t[0]} ms: {t}"
    assert len(late) >= 2, spans
    mean_gap = sum(t[-1] - t[0] for t in late) / sum(len(t) - 1 for t in late)
    assert mean_gap >= 1.3 * interval, f"ticks were not slowed (mean gap {mean_gap:.0f} ms): {spans}"


def test_python_target_resource(profd, start_target):
    script = "import sys\nprint('ready', flush=True)\nwhile True:\n    sum(range(1000))\n"
    env = {k: v for k, v in os.environ.items() if k not in ("OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES")}
    target = start_target([sys.executable, "-c", script], env=env)
    with Receiver() as receiver:
        run_export(profd, [target.pid], receiver.endpoint, 1.5, 100)
        records = receiver.records()
    assert records
    resource = records[0][0]
    assert resource["service.name"] == "unnamed-python-service", resource
    assert resource["telemetry.sdk.language"] == "python"
    assert resource["process.runtime.name"] == "cpython"
    assert resource["process.runtime.version"] == f"{sys.version_info.major}.{sys.version_info.minor}", resource


def test_collector_down_at_start_then_up(profd, targets, start_target, decode_body):
    target = start_target(targets.chain)
    receiver = Receiver(port=free_port())
    started_ms = time.time() * 1000
    # 10 s down, then 10 s up: time for the backed-off retries to get
    # through even on a loaded machine.
    daemon = profd.start("--pid", target.pid, "--duration", 20, "--interval", 100, "--endpoint", receiver.endpoint,
                         "--export-memory-mb", 16)
    try:
        time.sleep(10)
        receiver.start()
        result = profd.finish(daemon, timeout=40)
    finally:
        receiver.stop()
    assert result.returncode == 0, str(result)
    summary = result.summary
    assert summary["export_retries"] > 0, "the collector was down: retries expected"
    assert summary["export_dropped"] == 0 and summary["export_unsent"] == 0, str(result)
    assert summary["export_peak_queue_bytes"] <= 16 * 1024 * 1024
    times = sorted(s["num_labels"]["source.event.time"][0] for _, s in exported_samples(receiver.records(), decode_body))
    assert times and times[0] - started_ms < 2000, "the data of the outage did not arrive"
    keys = [sample_key(s) for _, s in exported_samples(receiver.records(), decode_body)]
    assert len(keys) == len(set(keys)) and len(keys) == summary["samples"], (len(keys), len(set(keys)), summary["samples"])
    warnings = [l for l in result.stderr.splitlines() if "export to" in l and "failed" in l]
    assert 1 <= len(warnings) <= 2, f"export failures must be rate-limited: {warnings}"


def test_unavailable_then_ok_is_retried_without_duplicates(profd, targets, start_target, decode_body):
    target = start_target(targets.chain)
    with Receiver(fail_first=3, fail_code=grpc.StatusCode.UNAVAILABLE) as receiver:
        result = run_export(profd, [target.pid], receiver.endpoint, 4, 100)
        calls = receiver.calls
        records = receiver.records()
    summary = result.summary
    assert calls >= 4 and summary["export_retries"] >= 3, (calls, str(result))
    keys = [sample_key(s) for _, s in exported_samples(records, decode_body)]
    assert len(keys) == len(set(keys)), "a retried record arrived twice"
    assert len(keys) == summary["samples"], "every sample arrives once UNAVAILABLE is over"


def test_collector_with_a_slow_handshake_gets_every_record(profd, targets, start_target, decode_body):
    """A collector whose handshake takes 3 s (a proxy holds each connection
    3 s before it forwards a byte): the connection attempt must be given
    that long.  grpc's connect timeout once followed its 250 ms..2 s
    reconnect backoff, so no attempt ever completed and nothing arrived."""
    target = start_target(targets.chain)
    with Receiver() as receiver, SlowProxy(receiver.port, delay=3.0) as proxy:
        result = run_export(profd, [target.pid], proxy.endpoint, 6, 100)
        records = receiver.records()
        connections = proxy.connections
    summary = result.summary
    assert records, f"nothing arrived through a 3 s handshake ({connections} connection attempts): {result}"
    assert summary["export_unsent"] == 0 and summary["export_dropped"] == 0, str(result)
    assert summary["export_records"] == len(records), str(result)
    keys = [sample_key(s) for _, s in exported_samples(records, decode_body)]
    assert len(keys) == len(set(keys)) == summary["samples"], (len(keys), summary["samples"])
    assert connections <= 3, f"{connections} connection attempts: attempts are abandoned early"


def rss_kb(pid, field="VmHWM"):
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(l.split()[1] for l in status.splitlines() if l.startswith(field + ":")))


def cadence(prof, interval):
    """(ticks, median and p90 |deviation| from the tick grid in ms) of a
    profile, leaving out the first 0.5 s (the first tick loads debug info)."""
    ticks = sorted({s["num_labels"]["source.event.time"][0] for s in prof.samples})
    ticks = [t for t in ticks if t >= ticks[0] + 500]
    offsets = sorted((t - ticks[0]) - round((t - ticks[0]) / interval) * interval for t in ticks)
    center = offsets[len(offsets) // 2]
    deviations = sorted(abs(o - center) for o in offsets)
    return len(ticks), deviations[len(deviations) // 2], deviations[int(len(deviations) * 0.9)]


def test_collector_never_answering_does_not_disturb_sampling(profd, targets, start_target, read_profile):
    """The tracer only links records into a queue: a collector that never
    answers changes neither the tick cadence nor memory beyond the budget.
    Compared with a --no-export daemon running at the same time on a twin
    target, since the shared machine's own load also delays ticks."""
    twin, target = start_target(targets.chain), start_target(targets.chain)
    interval, duration = 50, 5
    with Receiver(hang=True) as receiver:
        begin = time.monotonic()
        baseline = profd.start("--pid", twin.pid, "--duration", duration, "--interval", interval, "--no-export")
        daemon = profd.start("--pid", target.pid, "--duration", duration, "--interval", interval, "--endpoint",
                             receiver.endpoint, "--export-memory-mb", 8, env={"OTEL_EXPORTER_OTLP_TIMEOUT": "2000"})
        time.sleep(duration - 0.5)
        peak_kb = rss_kb(daemon.pid)
        baseline = profd.finish(baseline, timeout=30)
        result = profd.finish(daemon, timeout=30)
        elapsed = time.monotonic() - begin
    assert baseline.returncode == 0 and result.returncode == 0, f"{baseline}\n{result}"
    assert elapsed < duration + 5 + 3, f"shutdown must respect its 5 s flush deadline (took {elapsed:.1f} s)"
    summary = result.summary
    assert summary["export_records"] == 0 and summary["export_retries"] >= 1
    assert summary["export_peak_queue_bytes"] <= 8 * 1024 * 1024
    assert peak_kb < 64 * 1024, f"daemon peak RSS {peak_kb} kB"
    base = cadence(read_profile(baseline.output), interval)
    hung = cadence(read_profile(result.output), interval)
    print(f"cadence (ticks, median, p90 jitter ms): no export {base}, collector hung {hung}; peak RSS {peak_kb} kB")
    assert hung[0] >= base[0] * 0.85, f"ticks lost while the collector hangs: {hung} vs {base}"
    assert hung[1] <= interval * 0.1, f"tick jitter {hung[1]} ms exceeds 10% of {interval} ms: {hung} vs {base}"


def make_ca(directory):
    """A self-signed certificate for 127.0.0.1/localhost; returns (cert, key) paths."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True)
    return cert, key


def test_tls_with_custom_ca_from_standard_env(profd, targets, start_target, tmp_path):
    cert, key = make_ca(tmp_path)
    target = start_target(targets.chain)
    with Receiver(tls=(cert.read_bytes(), key.read_bytes())) as receiver:
        assert receiver.endpoint.startswith("https://")
        result = run_export(profd, [target.pid], receiver.endpoint, 2, 100,
                            env={"OTEL_EXPORTER_OTLP_CERTIFICATE": str(cert)})
        records = receiver.records()
    assert records and result.summary["export_records"] == len(records), str(result)


@pytest.mark.parametrize("endpoint, why", [
    ("localhost:4317", "no scheme"),
    ("127.0.0.1", "no scheme"),
    ("ftp://localhost:4317", "unknown scheme"),
    ("grpc://localhost:4317", "unknown scheme"),
    ("http://localhost:99999", "port"),
    ("http://localhost:0", "port"),
    ("http://localhost:43x7", "port"),
    ("http://:4317", "host"),
    ("http://localhost:4317/v1/logs", "after"),
])
def test_bad_endpoint_is_a_usage_error(profd, endpoint, why):
    for args, env in (([ "--endpoint", endpoint], None), ([], {"SPLUNK_PROFILER_LOGS_ENDPOINT": endpoint})):
        result = profd.run("--pid", os.getpid(), *args, output=None, env=env, timeout=10)
        assert result.returncode == 2, str(result)
        assert len(result.error_lines) == 1 and why in result.error_lines[0], str(result)
        assert result.stderr.count("\n") == 1, f"one line expected:\n{result.stderr}"


@pytest.mark.parametrize("args, env, message", [
    (["--endpoint", "http://localhost:4317", "--no-export"], {}, "exclude"),
    ([], {"SPLUNK_PROFILER_ENABLED": "maybe"}, "SPLUNK_PROFILER_ENABLED"),
    ([], {"SPLUNK_PROFILER_ENABLED": "true", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, "OTEL_EXPORTER_OTLP_HEADERS"),
    ([], {"SPLUNK_PROFILER_ENABLED": "true", "OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}, "OTEL_EXPORTER_OTLP_TIMEOUT"),
    (["--endpoint", "https://localhost:4317"], {"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, "CA file"),
    (["--export-memory-mb", "2"], {}, "--export-memory-mb"),
    (["--flush-interval", "0"], {}, "--flush-interval"),
])
def test_bad_export_settings_are_usage_errors(profd, args, env, message):
    result = profd.run("--pid", os.getpid(), *args, output=None, env=env, timeout=10)
    assert result.returncode == 2 and len(result.error_lines) == 1 and message in result.error_lines[0], str(result)


@pytest.mark.parametrize("env, message", [
    ({"OTEL_EXPORTER_OTLP_HEADERS": "x-a=b%0D%0AX-Evil: 1"}, "byte 0x0d"),
    ({"OTEL_EXPORTER_OTLP_HEADERS": "x-a=b\nc"}, "byte 0x0a"),
    ({"OTEL_EXPORTER_OTLP_LOGS_HEADERS": "x-a=tab\there"}, "byte 0x09"),
    ({"OTEL_EXPORTER_OTLP_HEADERS": "x-a=caf%C3%A9"}, "byte 0xc3"),
    ({"OTEL_EXPORTER_OTLP_HEADERS": "x%0D%0Aa=b"}, "not a valid gRPC metadata key"),
    ({"SPLUNK_ACCESS_TOKEN": "s3cret\r\n"}, "SPLUNK_ACCESS_TOKEN"),
    ({"SPLUNK_ACCESS_TOKEN": "s3\x1bcret"}, "byte 0x1b"),
], ids=["header-crlf-encoded", "header-lf", "header-tab", "header-utf8", "key-crlf", "token-crlf",
        "token-escape"])
def test_control_bytes_in_headers_or_token_are_usage_errors(profd, env, message):
    """Old code accepted them (exit 0) and then every request failed."""
    result = profd.run("--pid", os.getpid(), "--duration", 1, "--endpoint", "http://127.0.0.1:9",
                       output=None, env=env, timeout=10)
    assert result.returncode == 2 and len(result.error_lines) == 1 and message in result.error_lines[0], str(result)
    assert result.stderr.count("\n") == 1, f"one line expected:\n{result.stderr!r}"


def test_binary_header_value_may_hold_any_byte(profd, targets, start_target):
    """A "-bin" key's value is base64'd by gRPC: no byte is refused."""
    target = start_target(targets.chain)
    with Receiver() as receiver:
        result = profd.run("--pid", target.pid, "--duration", 1.2, "--interval", 100, "--endpoint",
                           receiver.endpoint, env={"OTEL_EXPORTER_OTLP_HEADERS": "x-a-bin=%01%FF%0D"})
        records, metadata = receiver.records(), receiver.metadata
    assert result.returncode == 0 and not result.error_lines, str(result)
    assert records and all(m.get("x-a-bin") == b"\x01\xff\r" for m in metadata), metadata


@pytest.mark.parametrize("kind, message", [
    ("directory", "a directory"), ("not-pem", "no PEM certificate"), ("fifo", "not a regular file"),
    ("empty", "no PEM certificate"),
])
def test_bad_ca_file_is_a_usage_error(profd, tmp_path, kind, message):
    """Old code: a directory gave exit 1 (read only when the exporter
    started), a non-PEM file was accepted."""
    path = tmp_path / "ca.pem"
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.write_bytes(b"" if kind == "empty" else b"this is not a certificate\n")
    result = profd.run("--pid", os.getpid(), "--duration", 1, "--endpoint", "https://127.0.0.1:9",
                       output=None, env={"OTEL_EXPORTER_OTLP_CERTIFICATE": str(path)}, timeout=10)
    assert result.returncode == 2 and len(result.error_lines) == 1, str(result)
    assert message in result.error_lines[0] and "CA file" in result.error_lines[0], str(result)


def test_grpc_log_lines_go_through_our_log_and_rate_limit(profd):
    """grpc's own lines (here its trace output, thousands a second) are
    ours: prefixed, one line each, and held to --watch's limit of 100 lines
    per 10 s.  Old code let 200+ raw grpc lines through in 3 s."""
    proc = profd.start("--watch", "-vv", "--deny", "!env:PROFD_NEVER_SET=1", "--endpoint", "http://127.0.0.1:9",
                       output=None, env={"GRPC_VERBOSITY": "debug", "GRPC_TRACE": "all"})
    time.sleep(3)
    proc.send_signal(2)
    result = profd.finish(proc)
    lines = result.stderr.splitlines()
    foreign = [l for l in lines if not l.startswith("splunk-profd: ")]
    assert not foreign, f"{len(foreign)} lines bypass our log, e.g. {foreign[:3]}"
    assert any(": grpc: " in l for l in lines), "no grpc line at all: is the trace on?"
    assert len(lines) <= 100 + 5, f"{len(lines)} lines in 3 s: the rate limit does not hold"


@pytest.mark.parametrize("args, env, exported", [
    ([], {}, False),                                                      # plain --pid: local only
    ([], {"SPLUNK_PROFILER_LOGS_ENDPOINT": "ENDPOINT"}, True),             # endpoint in env: on
    ([], {"SPLUNK_PROFILER_ENABLED": "true", "SPLUNK_PROFILER_LOGS_ENDPOINT": "ENDPOINT"}, True),
    ([], {"SPLUNK_PROFILER_ENABLED": "false", "SPLUNK_PROFILER_LOGS_ENDPOINT": "ENDPOINT"}, False),
    (["--endpoint", "ENDPOINT"], {"SPLUNK_PROFILER_ENABLED": "false"}, True),  # flag over env
    (["--no-export"], {"SPLUNK_PROFILER_ENABLED": "true", "SPLUNK_PROFILER_LOGS_ENDPOINT": "ENDPOINT"}, False),
])
def test_export_switch_precedence(profd, targets, start_target, args, env, exported):
    target = start_target(targets.chain)
    with Receiver() as receiver:
        args = [receiver.endpoint if a == "ENDPOINT" else a for a in args]
        env = {k: receiver.endpoint if v == "ENDPOINT" else v for k, v in env.items()}
        result = profd.run("--pid", target.pid, "--duration", 1.2, "--interval", 100, *args, env=env)
        records = receiver.records()
    assert result.returncode == 0, str(result)
    assert bool(records) == exported, f"records={len(records)}: {result}"
    assert ("export_records" in result.summary) == exported
