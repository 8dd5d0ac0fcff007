#!/usr/bin/env python3
"""check-includes.py — the layout's one rule, checked: every include points
one way, down the data flow.

The folders of the profiler's core, in order (README.md, "Layout"):

    util  proto  attach  symbolize  unwind  python  context
    pprof  render  otlp  engine  cli

A file may include a project header of its own folder or of a folder
*earlier* in that list, never a later one.  On top of that, no two files
may include each other, directly or through others (a cycle), even inside
one folder: a cycle means neither file can be understood alone.

Reads only the sources; prints one line per violation and exits 1 when
there is any, 0 otherwise.  Run by scripts/test.sh (and so by CI).
"""
import os
import re
import subprocess
import sys

ORDER = ["util", "proto", "attach", "symbolize", "unwind", "python", "context",
         "pprof", "render", "otlp", "engine", "cli"]
RANK = {folder: i for i, folder in enumerate(ORDER)}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def project_files(top):
    listed = subprocess.run(["git", "-C", top, "ls-files", "--cached", "--others",
                             "--exclude-standard", "*.c", "*.h"],
                            check=True, capture_output=True, text=True).stdout.split()
    return [f for f in listed if f.split("/", 1)[0] in RANK and os.path.exists(os.path.join(top, f))]


def includes(top, path):
    with open(os.path.join(top, path), encoding="utf-8", errors="replace") as f:
        return [m.group(1) for m in INCLUDE.finditer(f.read())]


def direction_errors(graph):
    errors = []
    for src, targets in sorted(graph.items()):
        here = src.split("/", 1)[0]
        for dst in targets:
            there = dst.split("/", 1)[0]
            if there not in RANK:
                continue  # a context writer header, a test helper, ...
            if RANK[there] > RANK[here]:
                errors.append(f"{src}: includes {dst}: {here}/ may not include {there}/ "
                              f"(later in the data flow)")
    return errors


def cycle_errors(graph):
    """A depth-first search that reports each back edge (one cycle) once."""
    errors, state = [], {}

    def visit(node, path):
        state[node] = "open"
        for nxt in graph.get(node, ()):
            if nxt not in graph:
                continue
            if state.get(nxt) == "open":
                loop = path[path.index(nxt):] + [nxt]
                errors.append("include cycle: " + " -> ".join(loop))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return errors


def unit_of(path):
    """x.c, x.h and x_internal.h are one unit (an object and its private
    header): x.c including y.h while y.c includes x.h is a cycle."""
    unit = path[:-2] if path.endswith((".c", ".h")) else path
    return unit[:-len("_internal")] if unit.endswith("_internal") else unit


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = project_files(top)
    graph = {f: includes(top, f) for f in files}
    units = {}
    for src, targets in graph.items():
        edges = units.setdefault(unit_of(src), set())
        edges.update(unit_of(t) for t in targets if unit_of(t) != unit_of(src))
    units = {u: sorted(e) for u, e in units.items()}
    errors = direction_errors(graph) + cycle_errors(units)
    for line in errors:
        print("check-includes: " + line)
    print(f"check-includes: {len(files)} files, {len(errors)} violations")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
