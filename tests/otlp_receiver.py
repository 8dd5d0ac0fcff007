"""A real OTLP/gRPC logs receiver for the export tests.

A grpcio server on 127.0.0.1 that decodes requests with the official
`opentelemetry-proto` Python classes (never splunk-profd's own protos), and
can misbehave on purpose:

  fail_first=N, fail_code=grpc.StatusCode.UNAVAILABLE
                   the first N calls are answered with that status and
                   their records are NOT kept (the collector did not take them)
  hang=True        calls are never answered (until the server stops)
  tls=(cert_pem, key_pem)
                   serve TLS with that certificate

`requests` holds every accepted ExportLogsServiceRequest; `calls` counts
every call, accepted or not; `metadata` the invocation metadata of each
accepted call.
"""

import socket
import threading
from concurrent import futures

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Servicer(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self, receiver):
        self.receiver = receiver

    def Export(self, request, context):
        r = self.receiver
        with r.lock:
            r.calls += 1
            call = r.calls
        if r.hang:
            r.stopped.wait()
            context.abort(grpc.StatusCode.UNAVAILABLE, "receiver stopped")
        if call <= r.fail_first:
            context.abort(r.fail_code, f"test receiver: failing call {call} of {r.fail_first}")
        with r.lock:
            r.requests.append(request)
            r.metadata.append(dict(context.invocation_metadata()))
            r.sizes.append(request.ByteSize())
            r.arrived.notify_all()
        return logs_service_pb2.ExportLogsServiceResponse()


class Receiver:
    def __init__(self, port=None, fail_first=0, fail_code=grpc.StatusCode.UNAVAILABLE, hang=False, tls=None):
        self.port = port or free_port()
        self.fail_first, self.fail_code, self.hang, self.tls = fail_first, fail_code, hang, tls
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)
        self.stopped = threading.Event()
        self.calls = 0
        self.requests, self.metadata, self.sizes = [], [], []
        self.server = None

    @property
    def endpoint(self):
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def start(self):
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=8),
            options=[("grpc.max_receive_message_length", 4 * 1024 * 1024), ("grpc.so_reuseport", 0)],
        )
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(_Servicer(self), self.server)
        address = f"127.0.0.1:{self.port}"
        if self.tls:
            creds = grpc.ssl_server_credentials([(self.tls[1], self.tls[0])])
            bound = self.server.add_secure_port(address, creds)
        else:
            bound = self.server.add_insecure_port(address)
        assert bound == self.port, f"could not bind {address}"
        self.server.start()
        return self

    def stop(self):
        self.stopped.set()
        if self.server:
            self.server.stop(grace=0).wait()

    def records(self):
        """[(resource attributes dict, scope, LogRecord)] of accepted calls."""
        out = []
        with self.lock:
            requests = list(self.requests)
        for request in requests:
            for rl in request.resource_logs:
                resource = {kv.key: any_value(kv.value) for kv in rl.resource.attributes}
                for sl in rl.scope_logs:
                    for record in sl.log_records:
                        out.append((resource, sl.scope, record))
        return out

    def wait_records(self, predicate, timeout):
        """Waits until predicate(records()) is true; returns the records."""
        import time

        deadline = time.monotonic() + timeout
        while True:
            records = self.records()
            if predicate(records) or time.monotonic() > deadline:
                return records
            with self.lock:
                self.arrived.wait(0.2)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def any_value(value):
    """An OTLP AnyValue as a Python value (str/int/bool/float/bytes)."""
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


class SlowProxy:
    """A TCP proxy on 127.0.0.1 in front of `backend_port` that holds every
    new connection `delay` seconds before it connects to the backend and
    forwards a byte: a collector whose handshake (up to its HTTP/2
    SETTINGS) takes that long, as behind a slow load balancer or on a
    loaded host."""

    def __init__(self, backend_port, delay):
        self.backend_port, self.delay = backend_port, delay
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.stopped = threading.Event()
        self.connections = 0
        self.sockets = []
        self.lock = threading.Lock()

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def _accept(self):
        while not self.stopped.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
                self.sockets.append(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        if self.stopped.wait(self.delay):
            return
        try:
            backend = socket.create_connection(("127.0.0.1", self.backend_port))
        except OSError:
            client.close()
            return
        with self.lock:
            self.sockets.append(backend)
        threading.Thread(target=self._pipe, args=(backend, client), daemon=True).start()
        self._pipe(client, backend)

    @staticmethod
    def _pipe(source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self):
        self.stopped.set()
        self.listener.close()
        with self.lock:
            for s in self.sockets:
                s.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
