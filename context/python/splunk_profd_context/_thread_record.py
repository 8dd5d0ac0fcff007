"""OTEP 4947 thread records, written from Python.

The ELF TLS symbol otel_thread_ctx_v1 comes from a tiny shared object built
with the package (_otel_thread_ctx.c, compiled at pip-install time; not a
Python extension, so one build serves every interpreter).  ctypes loads it
and asks it, once per thread, for the addresses of that thread's
otel_thread_ctx_v1 and of its two records; after that every write is a
plain memoryview store, as cheap as the segment's (a ctypes call per
attach would cost ~3 times the whole write).

Write order (the OTEP's: a record is complete before a pointer names it):
a new span is written (ids, valid = 1, trace_flags; attrs_data_size stays
0: no attributes) into the record the pointer does not name, then the
pointer is set to it; no reader can see a record while it is written, and
the pointer goes from one complete record to the other in one store.
Detach to no span clears the pointer only.  Each store is a separate
memoryview operation, done in program order by the interpreter; readers
read a thread's record only while it is stopped.

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
DATA_SIZE = 26  # trace_id .. trace_flags: what a write changes (RECORD below)

# trace_id, span_id (canonical byte order), valid, trace_flags: bytes 0..26
# of an OTEP 4947 record, and bytes 16..42 of one of our segment's slots.
RECORD = struct.Struct(">16sQBB")


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
        out = (ctypes.c_size_t * 3)()
        self.addresses(out)
        return ThreadRecord(out[0], out[1], out[2])


def _view(address: int, size: int) -> memoryview:
    return memoryview((ctypes.c_char * size).from_address(address)).cast("B")


class ThreadRecord:
    """One thread's otel_thread_ctx_v1 and its two records."""

    __slots__ = ("pointer", "records", "addresses", "spare", "__weakref__")

    def __init__(self, pointer_address: int, record_a: int, record_b: int) -> None:
        self.pointer = _view(pointer_address, 8).cast("Q")
        self.records = (_view(record_a, RECORD_SIZE), _view(record_b, RECORD_SIZE))
        self.addresses = (record_a, record_b)
        self.spare = 0  # the record the pointer does not name

    def publish(self, data: bytes) -> None:
        """Publishes a span: data is RECORD packed, valid = 1."""
        spare = self.spare
        self.records[spare][:DATA_SIZE] = data
        self.pointer[0] = self.addresses[spare]
        self.spare = spare ^ 1

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
