#!/usr/bin/env python3
"""pprof_readback.py TEST_PROFILE_BUILDER PPROFCHECK — reads the profiles
that test_profile_builder writes back with an independent decoder.

test_profile_builder cannot check its own encoding: protobuf-c code
generated from proto/profile.proto agrees with the encoder about every
field number, right or wrong.  pprofcheck (tests/pprofcheck) decodes with
github.com/google/pprof/profile, so a field numbered differently from
upstream's profile.proto shows up here as a missing or misplaced value.
Exits non-zero on the first difference."""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

CPU_TYPES = [["samples", "count"], ["cpu", "nanoseconds"]]


def frame(function, file, line, address=0, mapping="", system_name=None):
    return {"function": function, "system_name": function if system_name is None else system_name,
            "file": file, "line": line, "address": address, "mapping": mapping}


def sample(values, frames, labels=None, num_labels=None, num_units=None):
    return {"values": values, "locations": len(frames), "frames": frames,
            "labels": labels or {}, "num_labels": num_labels or {}, "num_units": num_units or {}}


def cpu_profile(samples, mappings=(), duration=0):
    return {"sample_type": CPU_TYPES, "default_sample_type": "cpu",
            "period_type": ["cpu", "nanoseconds"], "period": 10000000,
            "duration_nanos": duration, "time_nanos": 1700000000000000000,
            "mappings": list(mappings), "samples": samples}


EXPECTED = {
    "dedup": cpu_profile(
        mappings=[
            {"file": "/usr/bin/app", "build_id": "abcd", "start": 0x400000, "limit": 0x500000,
             "offset": 0x1000, "has": [True, False, True, False]},
            {"file": "/usr/lib/libx.so", "build_id": "", "start": 0x600000, "limit": 0x680000,
             "offset": 0, "has": [True, True, False, False]},
        ],
        samples=[{
            "values": [3, 30000000],
            "locations": 3,  # the inlined pair is one Location
            "frames": [
                frame("inner", "a.c", 10, 0x401000, "/usr/bin/app", system_name="_Z5innerv"),
                frame("outer", "a.c", 20, 0x401000, "/usr/bin/app"),
                frame("outer", "a.c", 25, 0x402000, "/usr/bin/app"),
                frame("handle", "app.py", 7),
            ],
            "labels": {}, "num_labels": {}, "num_units": {},
        }]),
    "encoding": cpu_profile(
        duration=5000000000,
        samples=[
            sample([1, 10000000], [frame("", "", 3)], labels={"thread.name": ["main"]},
                   num_labels={"thread.id": [42]}, num_units={"thread.id": ["id"]}),
            sample([0, 0], [frame("", "", 3)]),
        ]),
    "splunk": {"sample_type": [], "default_sample_type": "", "period_type": ["", ""], "period": 0, "duration_nanos": 0,
               "time_nanos": 1, "mappings": [],
               "samples": [sample(None, [frame("f", "f.py", -1)])]},
    "empty": cpu_profile(samples=[]),
}


def read(pprofcheck, path, *flags):
    done = subprocess.run([pprofcheck, *flags, str(path)], capture_output=True, text=True,
                          timeout=120)
    if done.returncode:
        sys.exit(f"pprofcheck rejected {path.name}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def check(name, got, want):
    if got != want:
        sys.exit(f"{name}.pb.gz read back differently:\n got  {json.dumps(got, sort_keys=True)}\n"
                 f" want {json.dumps(want, sort_keys=True)}")


def check_bounds(got):
    """One sample of 5000 copies of a 100-line Location: the builder keeps
    4096 Locations of 64 Lines, innermost (f0) first."""
    samples = got["samples"]
    if len(samples) != 1 or samples[0]["locations"] != 4096:
        sys.exit(f"bounds.pb.gz: want one sample of 4096 locations, got "
                 f"{[s['locations'] for s in samples]}")
    frames = samples[0]["frames"]
    want = [frame(f"f{i}", "x.c", i, 0x10) for i in range(64)]
    if len(frames) != 4096 * 64 or frames[:64] != want or frames[-64:] != want:
        sys.exit(f"bounds.pb.gz: {len(frames)} frames, first {frames[:2]}")


def main():
    test, pprofcheck = sys.argv[1:3]
    with tempfile.TemporaryDirectory(prefix="pprof_readback.") as out:
        subprocess.run([test, out], check=True, timeout=300)
        out = Path(out)
        written = sorted(p.name for p in out.iterdir())
        want = sorted(f"{n}.pb.gz" for n in [*EXPECTED, "bounds"])
        if written != want:
            sys.exit(f"test_profile_builder wrote {written}, want {want}")
        for name, expected in EXPECTED.items():
            flags = ["-splunk"] if name == "splunk" else []
            check(name, read(pprofcheck, out / f"{name}.pb.gz", *flags), expected)
        check_bounds(read(pprofcheck, out / "bounds.pb.gz"))
    print("ok")


if __name__ == "__main__":
    main()
