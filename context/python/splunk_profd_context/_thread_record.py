"""OTEP 4947 thread records, written from Python.

The ELF TLS symbol otel_thread_ctx_v1 comes from a tiny shared object built
with the package (_otel_thread_ctx.c, compiled at pip-install time; not a
Python extension, so one build serves every interpreter).  ctypes loads it
and asks it, once per thread, for the addresses of that thread's
otel_thread_ctx_v1 and of its record; after that every write is a plain
memoryview store, as cheap as the segment's (a ctypes call per attach
would cost ~3 times the whole write).

Write order (the OTEP's): the pointer is cleared, the record written
(ids, valid = 1, trace_flags; attrs_data_size stays 0: no attributes), then
the pointer set to the record.  Detach to no span clears the pointer only.
Each store is a separate memoryview operation, done in program order by
the interpreter; readers read a thread's record only while it is stopped.

Without a compiler at install time the object is missing: the package
then stays pure Python (our own segment only) and says so once.
"""

from __future__ import annotations

import ctypes
import glob
import os
import struct
import warnings
from typing import Optional

SCHEMA_VERSION = "tlsdesc_v1_dev"  # as context/c/process_context_writer.h and dd-trace-py
LIBRARY = "_otel_thread_ctx"
RECORD_SIZE = 28  # without attribute data

_RECORD = struct.Struct(">16sQBB")  # trace_id, span_id (canonical byte order), valid, trace_flags
_pack_record = _RECORD.pack_into


class Native:
    """The loaded shared object (one per process; fork keeps it)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lib = ctypes.CDLL(path)
        self.addresses = self.lib.splunk_profd_otel_thread_addresses
        self.addresses.argtypes = [ctypes.POINTER(ctypes.c_size_t)]
        self.addresses.restype = None

    def thread_record(self) -> "ThreadRecord":
        """The calling thread's record writer (use it on this thread only)."""
        out = (ctypes.c_size_t * 2)()
        self.addresses(out)
        return ThreadRecord(out[0], out[1])


class ThreadRecord:
    """One thread's otel_thread_ctx_v1 and record."""

    __slots__ = ("pointer", "record", "address", "trace_id", "trace_bytes", "__weakref__")

    def __init__(self, pointer_address: int, record_address: int) -> None:
        self.pointer = memoryview((ctypes.c_char * 8).from_address(pointer_address)).cast("B").cast("Q")
        self.record = memoryview((ctypes.c_char * RECORD_SIZE).from_address(record_address)).cast("B")
        self.address = record_address
        self.trace_id = 0
        self.trace_bytes = bytes(16)

    def write(self, trace_id: int, span_id: int, trace_flags: int) -> None:
        """Publishes a span (span_id == 0: none, the pointer is cleared)."""
        pointer = self.pointer
        pointer[0] = 0
        if not span_id:
            return
        if trace_id != self.trace_id:
            self.trace_bytes = trace_id.to_bytes(16, "big")
            self.trace_id = trace_id
        _pack_record(self.record, 0, self.trace_bytes, span_id, 1, trace_flags)
        pointer[0] = self.address

    def clear(self) -> None:
        self.pointer[0] = 0


def _candidates() -> list:
    here = os.path.dirname(os.path.abspath(__file__))
    return sorted(glob.glob(os.path.join(here, LIBRARY + "*.so")))


def load() -> Optional[Native]:
    """The shared object, or None (with one warning) when it was not built
    or cannot be loaded."""
    problems = []
    for path in _candidates():
        try:
            return Native(path)
        except (OSError, AttributeError) as e:
            problems.append(f"{path}: {e}")
    why = "; ".join(problems) or "not built (no C compiler when the package was installed?)"
    warnings.warn(f"splunk_profd_context: OpenTelemetry thread records (OTEP 4947) not published: {why}",
                  RuntimeWarning, stacklevel=3)
    return None
