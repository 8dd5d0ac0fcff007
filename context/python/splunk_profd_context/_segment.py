"""The span-context segment seen from the writing process.

Layout and rules: context/FORMAT.md and context/context_format.h in the
splunk-profd repository.  A memfd named "splunk-profd-ctx" mapped
MAP_SHARED: a 64-byte header, then 64-byte slots, one per OS thread.

Only a slot's own thread writes its span; claims, releases and the
"internal" flag are serialised by one lock.  Each span write is a seqlock
(sequence odd, fields, sequence even); splunk-profd reads a slot only while
its thread is stopped, so an odd sequence means "torn, ignore".
"""

from __future__ import annotations

import os
import struct
import threading
from typing import Dict, List, Optional

MEMFD_NAME = "splunk-profd-ctx"
MAGIC = b"SPLKCTX1"
VERSION = 1
HEADER_SIZE = 64
SLOT_SIZE = 64
DEFAULT_SLOTS = 1024
MAX_SLOTS = 16384
FLAG_INTERNAL = 1
HEADER_HOME_SLOTS = 1  # header.flags: slots are claimed from the tid's home slot on

_HEADER = struct.Struct("<8sIIIIiIQI20x")  # magic .. owner_start, flags, see context_format.h
_U32 = struct.Struct("<I")
_CLAIM = struct.Struct("<IiQ")  # seq, tid, start_time
_IDS = struct.Struct(">QQQBB")  # trace_id (2 x 64 bits), span_id, valid, trace_flags
_CLAIMS_AT = 28
_IDS_AT = 16
_FLAGS_AT = 44


def start_time(tid: Optional[int] = None) -> int:
    """Field 22 (starttime) of /proc/self/task/TID/stat (or /proc/self/stat)."""
    path = f"/proc/self/task/{tid}/stat" if tid else "/proc/self/stat"
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError:
        return 0
    fields = text[text.rindex(b")") + 2 :].split()
    return int(fields[19])  # fields[0] is field 3 (state)


class Segment:
    """One process's segment.  Not shared across fork: see reopen_after_fork."""

    def __init__(self, slots: int = DEFAULT_SLOTS) -> None:
        if not 0 < slots <= MAX_SLOTS:
            raise ValueError(f"slots must be in 1..{MAX_SLOTS}")
        self.slots = slots
        self.lock = threading.Lock()
        self.by_tid: Dict[int, int] = {}
        self.owners: List[int] = [0] * slots  # tid per slot, 0: free
        self.starts: List[int] = [0] * slots
        self.claims = 0
        import mmap  # here: an interpreter built without it can still publish OTEP records

        size = HEADER_SIZE + slots * SLOT_SIZE
        fd = os.memfd_create(MEMFD_NAME, os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, size)
            self.mem = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        header = _HEADER.pack(b"\0" * 8, VERSION, HEADER_SIZE, SLOT_SIZE, slots, os.getpid(), 0, start_time(),
                              HEADER_HOME_SLOTS)
        self.mem[0 : len(header)] = header
        self.mem[0:8] = MAGIC  # last: a reader never sees a half-written header

    def close(self) -> None:
        self.mem.close()

    # -- claims (under self.lock) ---------------------------------------

    def _bump_claims(self) -> None:
        self.claims = (self.claims + 1) & 0xFFFFFFFF
        _U32.pack_into(self.mem, _CLAIMS_AT, self.claims)

    def _reclaim_dead(self) -> None:
        for tid, index in list(self.by_tid.items()):
            if not os.path.exists(f"/proc/self/task/{tid}"):
                self._release(index, tid)

    def _free_slot(self, tid: int) -> int:
        """The first free slot from tid's home slot on (wrapping), or -1.

        splunk-profd finds a thread it has not indexed yet (a new thread's
        first span) by reading the few slots from its home slot on: a
        slot taken there is labelled from the first sample."""
        home = tid % self.slots
        owners = self.owners
        try:
            return owners.index(0, home)
        except ValueError:
            pass
        try:
            return owners.index(0, 0, home)
        except ValueError:
            return -1

    def claim(self, tid: int, flags: int = 0) -> int:
        """The slot index of thread tid (claimed if needed), or -1 when full."""
        started = start_time(tid)
        with self.lock:
            index = self.by_tid.get(tid)
            if index is not None and self.starts[index] == started and started:
                if flags:
                    _U32.pack_into(self.mem, HEADER_SIZE + index * SLOT_SIZE + _FLAGS_AT, flags)
                return index  # already ours (claimed for us, e.g. marked internal)
            # else: a dead thread's slot whose tid was recycled: re-initialised below
            if index is None:
                index = self._free_slot(tid)
                if index < 0:
                    self._reclaim_dead()
                    index = self._free_slot(tid)
                if index < 0:
                    return -1
                self.by_tid[tid] = index
                self.owners[index] = tid
            offset = HEADER_SIZE + index * SLOT_SIZE
            seq = (_U32.unpack_from(self.mem, offset)[0] + 1) | 1  # odd
            _U32.pack_into(self.mem, offset, seq)
            self.mem[offset + _IDS_AT : offset + SLOT_SIZE] = bytes(SLOT_SIZE - _IDS_AT)
            _CLAIM.pack_into(self.mem, offset, seq, tid, started)
            self.starts[index] = started
            _U32.pack_into(self.mem, offset + _FLAGS_AT, flags)
            _U32.pack_into(self.mem, offset, seq + 1)
            self._bump_claims()
            return index

    def _release(self, index: int, tid: int) -> None:
        offset = HEADER_SIZE + index * SLOT_SIZE
        seq = (_U32.unpack_from(self.mem, offset)[0] + 1) | 1  # odd
        _U32.pack_into(self.mem, offset, seq)
        self.mem[offset + 4 : offset + SLOT_SIZE] = bytes(SLOT_SIZE - 4)
        _U32.pack_into(self.mem, offset, seq + 1)
        del self.by_tid[tid]
        self.owners[index] = 0
        self._bump_claims()

    def release(self, index: int, tid: int) -> None:
        with self.lock:
            if self.by_tid.get(tid) == index:
                self._release(index, tid)

    def set_flags(self, index: int, flags: int) -> None:
        with self.lock:
            _U32.pack_into(self.mem, HEADER_SIZE + index * SLOT_SIZE + _FLAGS_AT, flags)

    # -- span writes (the slot's own thread only) ------------------------


class SlotWriter:
    """Writes spans into one slot; used only by the slot's own thread.

    Kept lean, it runs on every attach/detach that changes the span.  Only
    the low byte of `seq` is written: readers look at its parity only."""

    __slots__ = ("segment", "mem", "index", "offset", "seq")

    def __init__(self, segment: Segment, index: int) -> None:
        self.segment, self.mem, self.index = segment, segment.mem, index
        self.offset = HEADER_SIZE + index * SLOT_SIZE
        self.seq = segment.mem[self.offset] & 0xFE

    def write_packed(self, data: bytes) -> None:
        """Publishes bytes 16..42 of the slot: trace_id, span_id, valid,
        trace_flags, packed by the caller (_thread_record.RECORD, the
        layout an OTEP 4947 record shares; span_id 0 and valid 0: none)."""
        mem, offset = self.mem, self.offset
        mem[offset] = self.seq + 1  # odd: write in progress
        mem[offset + 16 : offset + 42] = data
        self.seq = seq = (self.seq + 2) & 0xFF
        mem[offset] = seq
