#!/usr/bin/env python3
"""The layering test: src/ calls one way only.

Reads the symbol tables of libspillway's objects (nm): file A depends on
file B when A leaves undefined a symbol B defines. Fails on a file with no
layer, on an edge from a lower layer to a higher one, and on any cycle of
files, naming the symbols that make each bad edge; and on a file of src/
that includes a component's private header (window.h, launch.h) it does
not belong to, or that is longer than 1,000 lines. Usage:
    check-layers.py OBJECT_DIR
OBJECT_DIR holds one NAME.c.o per file of src/ (meson's libspillway.so.p).
"""
import collections
import os
import subprocess
import sys

# Highest first. A file calls its own layer (without a cycle) or those
# below. A callback handed down is a function pointer: no edge.
LAYERS = [
    ("api", "hooks runtime init api fork graphnodes"),
    ("residency", "ordered appvmm launch serve promote marks layouts replay control alloc ptrinfo winroom remap place window_use window_capture window_touch window window_copy window_cost tensormap untracked"),
    ("device", "vmm fingerprint streams devices pool timers"),
    ("driver", "driver opts stats log"),
]
# A component's private header: the types its files share, included by
# those files alone (the rest of the layer sees its functions in the
# layer's header, not its state).
PRIVATE = {
    "window.h": "window window_use window_copy window_cost window_touch window_capture",
    "launch.h": "launch marks serve promote layouts",
}
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
RANK = {f: len(LAYERS) - i for i, (_, files) in enumerate(LAYERS) for f in files.split()}
NAME = {f: name for name, files in LAYERS for f in files.split()}


def symbols(path):
    out = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRVW":
            yield "def", parts[2]
        elif len(parts) == 2 and parts[0] == "U":
            yield "use", parts[1]


def graph(objdir):
    defines, uses = {}, collections.defaultdict(set)
    for obj in sorted(os.listdir(objdir)):
        if not obj.endswith(".c.o"):
            continue
        name = obj[: -len(".c.o")]
        for kind, sym in symbols(os.path.join(objdir, obj)):
            if kind == "def":
                defines[sym] = name
            else:
                uses[name].add(sym)
    edges = collections.defaultdict(lambda: collections.defaultdict(set))
    for f, syms in uses.items():
        for s in syms:
            g = defines.get(s)
            if g and g != f:
                edges[f][g].add(s)
    files = set(uses) | set(defines.values())
    return files, edges


def cycles(files, edges):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(files):
        if v not in index:
            visit(v)
    return found


# style.md's files of one job: 150 to 1,000 lines. Over that, a file has
# grown a second job (window.c was 1,693 lines, launch.c 1,357).
MAX_LINES = 1000


def long_files():
    """Each source file of src/ and src/core/ longer than MAX_LINES."""
    bad = []
    for d in (SRC, os.path.join(SRC, "core")):
        for name in sorted(os.listdir(d)):
            if name.endswith((".c", ".h")):
                with open(os.path.join(d, name), encoding="utf-8") as f:
                    n = sum(1 for _ in f)
                if n > MAX_LINES:
                    bad.append(f"{os.path.relpath(os.path.join(d, name), SRC)} has {n} lines, "
                               f"over {MAX_LINES}: split it by job")
    return bad


def private_includes():
    """Each file of src/ that includes a private header it does not own."""
    bad = []
    for name in sorted(os.listdir(SRC)):
        if not name.endswith((".c", ".h")):
            continue
        text = open(os.path.join(SRC, name), encoding="utf-8").read()
        for header, owners in PRIVATE.items():
            if f'#include "{header}"' in text and name[:-2] not in owners.split():
                bad.append(f"{name} includes {header}, private to {', '.join(owners.split())}")
    return bad


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print("usage: check-layers.py OBJECT_DIR (a directory of NAME.c.o)", file=sys.stderr)
        return 2
    files, edges = graph(sys.argv[1])
    if len(files) < 10:
        print(f"check-layers: only {len(files)} objects in {sys.argv[1]}: wrong directory?")
        return 1
    bad = [f"{f}.c has no layer: add it to LAYERS in {__file__}" for f in sorted(files) if f not in RANK]
    bad += private_includes() + long_files()
    for f in sorted(edges):
        for g, syms in sorted(edges[f].items()):
            if f in RANK and g in RANK and RANK[f] < RANK[g]:
                bad.append(f"upward: {f}.c ({NAME[f]}) -> {g}.c ({NAME[g]}): {', '.join(sorted(syms))}")
    for comp in cycles(files, edges):
        links = [f"{f}->{g} ({', '.join(sorted(edges[f][g]))})" for f in comp for g in comp if g in edges[f]]
        bad.append("cycle: " + "; ".join(links))
    for line in bad:
        print("check-layers: " + line)
    if bad:
        return 1
    for name, names in LAYERS:
        print(f"{name:10} {names}")
    print(f"ok: {len(files)} files, {sum(len(e) for e in edges.values())} edges, none upward, no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
