"""Export through a real OpenTelemetry Collector (otlp receiver -> batch
processor -> file exporter), built with the Collector Builder by
scripts/setup-collector.sh (called from scripts/setup.sh) and cached
outside the repository.  What the file exporter writes (OTLP JSON, one
ExportLogsServiceRequest a line) is parsed with the official
opentelemetry-proto classes and the bodies decoded like the grpcio
receiver's (tests/test_export.py).  A missing collector fails the tests:
run scripts/setup.sh."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import PROFD, REPO, is_asan_build  # noqa: E402
from otlp_receiver import SlowProxy, any_value, free_port  # noqa: E402
from test_export import (  # noqa: E402,F401
    LOG_ATTRIBUTES, attributes, clean_export_env, decode_body, exported_samples, sample_key,
)


@pytest.fixture(scope="session")
def otelcol_binary():
    found = subprocess.run([str(REPO / "scripts" / "setup-collector.sh"), "--path"], capture_output=True,
                           text=True, timeout=60)
    path = found.stdout.strip()
    assert found.returncode == 0, f"no OpenTelemetry Collector at {path}: run scripts/setup.sh"
    return path


class Collector:
    """One otelcol process on 127.0.0.1:port writing to `output`."""

    def __init__(self, binary, directory, port=None):
        self.binary, self.directory = binary, Path(directory)
        self.port = port or free_port()
        self.proc, self.outputs, self.runs = None, [], 0

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        self.runs += 1
        output = self.directory / f"otelcol-{self.runs}.json"
        config = self.directory / f"otelcol-{self.runs}.yaml"
        config.write_text(f"""\
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{self.port}
processors:
  batch:
    timeout: 200ms
exporters:
  file:
    path: {output}
    flush_interval: 100ms
service:
  telemetry:
    logs:
      level: warn
    metrics:
      level: none
  pipelines:
    logs:
      receivers: [otlp]
      processors: [batch]
      exporters: [file]
""")
        self.log = open(self.directory / f"otelcol-{self.runs}.log", "w+")
        self.proc = subprocess.Popen([self.binary, "--config", str(config)], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        self.outputs.append(output)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # listening?
            assert self.proc.poll() is None, f"otelcol exited: {self.log_text()}"
            try:
                import socket
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.1)
        pytest.fail(f"otelcol did not listen on {self.port}: {self.log_text()}")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()  # graceful: the batch and the file are flushed
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log_text(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-3000:]

    def records(self):
        """[(resource attributes dict, scope, LogRecord)] from every run's file."""
        out = []
        for path in self.outputs:
            if not path.exists():
                continue
            for line in path.read_text().splitlines():
                if not line.strip():
                    continue
                request = json_format.Parse(line, logs_service_pb2.ExportLogsServiceRequest())
                for rl in request.resource_logs:
                    resource = {kv.key: any_value(kv.value) for kv in rl.resource.attributes}
                    for sl in rl.scope_logs:
                        out.extend((resource, sl.scope, r) for r in sl.log_records)
        return out


@pytest.fixture
def collector(otelcol_binary, tmp_path):
    started = []

    def make(port=None):
        c = Collector(otelcol_binary, tmp_path, port)
        started.append(c)
        return c

    yield make
    for c in started:
        c.stop()


def check_contract(records, decode_body, pid):
    assert records
    for resource, scope, record in records:
        assert resource["process.pid"] == pid and resource["telemetry.distro.name"] == "splunk-profd", resource
        assert scope.name == "otel.profiling" and scope.version == "0.1.0"
        attrs = attributes(record)
        assert set(attrs) == set(LOG_ATTRIBUTES) | {"profiling.data.total.frame.count"}, attrs
        for key, value in LOG_ATTRIBUTES.items():
            assert attrs[key] == ("string_value", value), attrs
        samples = decode_body(record)["samples"]
        assert samples and attrs["profiling.data.total.frame.count"][1] == sum(len(s["frames"]) for s in samples)


def test_records_pass_through_a_real_collector(profd, targets, start_target, collector, decode_body):
    target = start_target(targets.chain)
    otelcol = collector().start()
    result = profd.run("--pid", target.pid, "--duration", 3.5, "--interval", 100, "--endpoint", otelcol.endpoint,
                       timeout=60)
    assert result.returncode == 0, str(result)
    otelcol.stop()  # flushes the batch processor and the file
    records = otelcol.records()
    summary = result.summary
    assert summary["export_records"] == len(records) >= 3, (len(records), str(result))
    check_contract(records, decode_body, target.pid)
    keys = [sample_key(s) for _, s in exported_samples(records, decode_body)]
    assert len(keys) == len(set(keys)) == summary["samples"], (len(keys), summary["samples"])


def test_slow_handshake_to_a_real_collector(profd, targets, start_target, collector, decode_body):
    """A 3 s handshake (a proxy holds each connection 3 s) in front of the
    real collector: every record still arrives."""
    target = start_target(targets.chain)
    otelcol = collector().start()
    with SlowProxy(otelcol.port, delay=3.0) as proxy:
        result = profd.run("--pid", target.pid, "--duration", 6, "--interval", 100, "--endpoint", proxy.endpoint,
                           timeout=60)
    assert result.returncode == 0, str(result)
    otelcol.stop()
    records = otelcol.records()
    summary = result.summary
    assert summary["export_unsent"] == 0 and summary["export_records"] == len(records) > 0, str(result)
    check_contract(records, decode_body, target.pid)


@pytest.mark.skipif(is_asan_build(PROFD), reason="50 s of mostly waiting: the normal build runs it; "
                    "the ASan run covers the same retry path in test_export's shorter outages")
def test_a_30_second_collector_outage_loses_nothing(profd, targets, start_target, collector, decode_body):
    """The collector is stopped 30 s, then started again on the same port:
    the records made meanwhile wait in the queue and arrive, once each."""
    target = start_target(targets.chain)
    otelcol = collector().start()
    daemon = profd.start("--pid", target.pid, "--duration", 45, "--interval", 100, "--endpoint", otelcol.endpoint)
    time.sleep(5)
    otelcol.stop()
    down_at = time.time() * 1000
    time.sleep(30)
    otelcol.start()
    up_at = time.time() * 1000
    result = profd.finish(daemon, timeout=90)
    assert result.returncode == 0, str(result)
    otelcol.stop()
    records = otelcol.records()
    summary = result.summary
    assert summary["export_retries"] > 0, "the collector was down: retries expected"
    assert summary["export_dropped"] == 0 and summary["export_unsent"] == 0, str(result)
    check_contract(records, decode_body, target.pid)
    times = [s["num_labels"]["source.event.time"][0] for _, s in exported_samples(records, decode_body)]
    during = [t for t in times if down_at + 1000 < t < up_at - 1000]
    assert len(during) >= 25 * 10 * 0.8, f"only {len(during)} samples of the outage arrived"
    keys = [sample_key(s) for _, s in exported_samples(records, decode_body)]
    assert len(keys) == len(set(keys)), "a record arrived twice"
    assert len(keys) == summary["samples"], (len(keys), summary["samples"])
