"""OpenTelemetry process context (OTEP 4719, version 2), from pure Python.

A memfd named "OTEL_CTX", mapped privately (2 pages) with MADV_DONTFORK,
holds the 32-byte header (signature, version 2, payload size, published-at
in CLOCK_BOOTTIME ns, payload address) followed by the payload: a protobuf
opentelemetry.proto.processcontext.v1development.ProcessContext whose
resource carries the process's resource attributes.  It is encoded here by
hand (a few dozen lines; no protobuf dependency).

The mapping is made with libc's mmap through ctypes rather than with
Python's mmap module: MADV_DONTFORK leaves nothing at that address in a
fork child, and a Python mmap object inherited there would munmap
whatever the child maps at that address later.  A raw mapping is never
unmapped (readers may hold its address); a new publication in the same
process rewrites it with the OTEP's update protocol.

When the package publishes OTEP 4947 thread records (_thread_record.py),
the context's attributes say how to read them, as the C library's do:
threadlocal.schema_version and threadlocal.attribute_key_map (empty: our
records carry no attributes).  Without them (no native part) no
threadlocal.* attribute is published.
"""

from __future__ import annotations

import ctypes
import os
import struct
import time
from typing import Any, Dict, Mapping, Optional

NAME = "OTEL_CTX"
SIGNATURE = b"OTEL_CTX"
VERSION = 2
HEADER_SIZE = 32
MAP_BYTES = 8192
MAX_VALUE = 1024  # bytes of a published string
MAX_ATTRIBUTES = 64

_PROT_READ, _PROT_WRITE = 1, 2
_MAP_PRIVATE, _MAP_ANONYMOUS = 0x02, 0x20
_MADV_DONTFORK = 10
_PR_SET_VMA, _PR_SET_VMA_ANON_NAME = 0x53564D41, 0


def _varint(v: int) -> bytes:
    out = bytearray()
    v &= (1 << 64) - 1  # int64 as two's complement, as protobuf does
    while True:
        byte = v & 0x7F
        v >>= 7
        if v:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, data: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _any_value(value: Any) -> Optional[bytes]:
    """AnyValue for a string, bool, int or float (others: None)."""
    if isinstance(value, bool):
        return _varint(2 << 3) + _varint(int(value))
    if isinstance(value, int):
        return _varint(3 << 3) + _varint(value)
    if isinstance(value, float):
        return _varint(4 << 3 | 1) + struct.pack("<d", value)
    if isinstance(value, str):
        return _field(1, value.encode("utf-8", "replace")[:MAX_VALUE])
    return None


def _thread_attributes(schema: str) -> bytes:
    """ProcessContext.attributes (field 2): the schema version and an empty
    key map (AnyValue.array_value, field 5, an ArrayValue with no values)."""
    schema_kv = _field(1, b"threadlocal.schema_version") + _field(2, _any_value(schema) or b"")
    key_map_kv = _field(1, b"threadlocal.attribute_key_map") + _field(2, _field(5, b""))
    return _field(2, schema_kv) + _field(2, key_map_kv)


def encode(resource: Mapping[str, Any], cap: int = MAP_BYTES - HEADER_SIZE,
           thread_schema: Optional[str] = None) -> bytes:
    """ProcessContext{resource: Resource{attributes}, attributes: the
    threadlocal.* pair when thread_schema is given}; resource attributes
    that do not fit in `cap` bytes (or past MAX_ATTRIBUTES) are left out."""
    thread = _thread_attributes(thread_schema) if thread_schema else b""
    cap -= len(thread)
    attributes = b""
    for n, (key, value) in enumerate(resource.items()):
        any_value = _any_value(value)
        if n >= MAX_ATTRIBUTES or any_value is None or not key:
            continue
        kv = _field(1, str(key).encode("utf-8", "replace")[:MAX_VALUE]) + _field(2, any_value)
        attribute = _field(1, kv)
        if len(_field(1, attributes + attribute)) <= cap:
            attributes += attribute
    return _field(1, attributes) + thread


def resource_attributes() -> Dict[str, Any]:
    """The resource the OpenTelemetry SDK would use: the configured tracer
    provider's, else the SDK's default (Resource.create() reads
    OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES), else service.name from
    OTEL_SERVICE_NAME alone (no SDK installed)."""
    try:
        from opentelemetry import trace

        resource = None
        # get_tracer_provider() would itself install the provider named by
        # OTEL_PYTHON_TRACER_PROVIDER: not ours to do.
        if "OTEL_PYTHON_TRACER_PROVIDER" not in os.environ:
            resource = getattr(trace.get_tracer_provider(), "resource", None)
        if resource is None:
            from opentelemetry.sdk.resources import Resource

            resource = Resource.create()
        return dict(resource.attributes)
    except Exception:
        name = os.environ.get("OTEL_SERVICE_NAME", "").strip()
        return {"service.name": name} if name else {}


class _Libc:
    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.mmap = libc.mmap
        self.mmap.restype = ctypes.c_void_p
        self.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.c_long]
        self.madvise = libc.madvise
        self.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.munmap = libc.munmap
        self.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self.prctl = libc.prctl
        self.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_char_p]


def _boottime_ns() -> int:
    return max(1, time.clock_gettime_ns(time.CLOCK_BOOTTIME))  # 0 means "update in progress"


class ProcessContext:
    """This process's published context (one per process)."""

    def __init__(self, thread_schema: Optional[str] = None) -> None:
        self.libc = _Libc()
        self.address = 0
        self.pid = 0
        self.thread_schema = thread_schema  # set when OTEP 4947 records are published

    def _map(self) -> int:
        libc = self.libc
        fd = -1
        try:
            fd = os.memfd_create(NAME, os.MFD_CLOEXEC)
            os.ftruncate(fd, MAP_BYTES)
        except OSError:
            if fd >= 0:
                os.close(fd)
            fd = -1  # no memfd (seccomp, old kernel): an anonymous mapping, named below
        flags = _MAP_PRIVATE if fd >= 0 else _MAP_PRIVATE | _MAP_ANONYMOUS
        address = libc.mmap(None, MAP_BYTES, _PROT_READ | _PROT_WRITE, flags, fd, 0)
        if fd >= 0:
            os.close(fd)
        if address in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap of the process context failed")
        if libc.madvise(address, MAP_BYTES, _MADV_DONTFORK) != 0:
            libc.munmap(address, MAP_BYTES)
            raise OSError(ctypes.get_errno(), "madvise(MADV_DONTFORK) failed")
        if fd < 0:
            libc.prctl(_PR_SET_VMA, _PR_SET_VMA_ANON_NAME, address, MAP_BYTES, NAME.encode())
        return address

    def publish(self, resource: Mapping[str, Any]) -> None:
        """Publishes `resource` (first call, or in a fork child: a new
        mapping; later: the update protocol on the same one)."""
        payload = encode(resource, thread_schema=self.thread_schema)
        header = self.address if self.pid == os.getpid() else 0
        published_at = ctypes.c_uint64.from_address(header + 16) if header else None
        if not header:
            header = self._map()
            published_at = ctypes.c_uint64.from_address(header + 16)
            self.address, self.pid = header, os.getpid()
        else:
            published_at.value = 0  # update in progress
        # Each store is an opaque C call, so they happen in program order,
        # and x86-64 keeps stores in order for other observers; the reader
        # re-checks published-at around its read of the payload.
        ctypes.memmove(header + HEADER_SIZE, payload, len(payload))
        ctypes.memmove(header + 8, struct.pack("<IIQQ", VERSION, len(payload), 0, header + HEADER_SIZE), 24)
        ctypes.memmove(header, SIGNATURE, len(SIGNATURE))
        published_at.value = _boottime_ns()
