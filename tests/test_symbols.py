"""Unwinding and symbolization corner cases: frame-pointer code sampled
while blocked (RBP recovered from the stack copy, never an interrupt that
would make epoll_wait fail with EINTR), a fake frame-record cycle where RBP
is recovered (the unwind ends instead of repeating frames), and a stripped
binary whose debug information is found through .gnu_debuglink."""

import collections
import os
import shutil
import subprocess

from conftest import (
    CHAIN_STACK,
    TARGET_DIR,
    assert_stack_prefix,
    functions,
    source_lines,
    wait_released,
)


def test_blocked_frame_pointer_code_unwinds_without_interrupts(profd, start_target):
    target = start_target([str(TARGET_DIR / "target_fp")])
    result, prof = profd.profile([target.pid], duration=1.5)
    for thread, chain in (
        ("fp-epoll", ["fp_wait_epoll", "fp_outer_epoll", "fp_epoll_main"]),
        ("fp-read", ["fp_wait_read", "fp_outer_read", "fp_read_main"]),
    ):
        samples = prof.thread(thread)
        assert len(samples) >= 20, f"only {len(samples)} {thread} samples: {prof.thread_names()}"
        complete = [s for s in samples if chain == [f for f in functions(s) if f.startswith("fp_")]]
        assert len(complete) >= 0.95 * len(samples), (
            f"{thread}: {len(complete)}/{len(samples)} stacks reach {chain}; e.g. {functions(samples[0])}"
        )
        assert all(s["labels"]["thread.state"] == ["blocked"] for s in samples), thread
    wait_released(target.pid)
    target.proc.stdin.write(b"x\n")
    target.proc.stdin.flush()
    assert target.readline() == "eintr=0"


def test_fake_frame_record_cycle_ends_the_unwind(profd, start_target):
    """tests/targets/target_fp_stale.c: the record the unwinder takes for
    RBP starts a cycle, and a walk that follows it repeats stale_outer
    (which the unwinder before the loop guard did in every sample).  The
    walk must end where the stack pointer stops growing and never show
    stale_outer twice: a stack is the real one (taken with the thread's
    registers after a stop) or ends at stale_outer, marked truncated."""
    target = start_target([str(TARGET_DIR / "target_fp_stale")])
    result, prof = profd.profile([target.pid], duration=1.5)
    chain = ["stale_wait", "stale_outer", "stale_main"]
    samples = prof.thread("fp-stale")
    assert len(samples) >= 20, f"only {len(samples)} fp-stale samples: {prof.thread_names()}"
    seen = collections.Counter(tuple(functions(s)) for s in samples)
    repeated = [s for s in samples if functions(s).count("stale_outer") > 1]
    assert not repeated, f"{len(repeated)}/{len(samples)} stacks repeat stale_outer: {seen}"

    def sound(sample):
        ours = [f for f in functions(sample) if f.startswith("stale_")]
        return ours == chain or (ours == chain[:2] and "thread.stack.truncated" in sample["labels"])

    assert all(sound(s) for s in samples), f"stacks other than {chain} or a truncated {chain[:2]}: {seen}"
    wait_released(target.pid)


def test_stripped_binary_with_debuglink(profd, start_target, tmp_path):
    for name in ("target_chain", "libprofd_testlib.so"):
        shutil.copy(TARGET_DIR / name, tmp_path / name)
    binary = tmp_path / "target_chain"
    debug = tmp_path / "target_chain.debug"
    subprocess.run(["objcopy", "--only-keep-debug", str(binary), str(debug)], check=True)
    subprocess.run(["strip", "--strip-debug", "--strip-unneeded", str(binary)], check=True)
    subprocess.run(["objcopy", f"--add-gnu-debuglink={debug}", str(binary)], check=True, cwd=tmp_path)
    sections = subprocess.run(["readelf", "-S", str(binary)], capture_output=True, text=True).stdout
    assert ".debug_info" not in sections and ".gnu_debuglink" in sections
    target = start_target([str(binary)], env={**os.environ, "LD_LIBRARY_PATH": str(tmp_path)})
    result, prof = profd.profile([target.pid], duration=2)
    busy = prof.thread("busy-chain")
    assert len(busy) >= 50, f"only {len(busy)} busy-chain samples"
    matched = assert_stack_prefix(busy, CHAIN_STACK, what="busy-chain samples of the stripped binary")
    lines = source_lines("target_chain.c")
    located = [
        s for s in matched
        if s["frames"][3]["file"].endswith("target_chain.c") and s["frames"][3]["line"] == lines["chain_a"]
    ]
    assert len(located) >= 0.95 * len(matched), f"chain_a lacks file:line: {matched[0]['frames'][:5]}"
    wait_released(target.pid)
