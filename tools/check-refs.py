#!/usr/bin/env python3
"""check-refs.py SRCDIR: every file that a comment in src/ names (a .c, .h,
.def or .md name or path) exists in the repository, so that "see gate.c" or
"cuda-facts.md §3" cannot point at nothing. Headers of other projects
(cuda.h, uthash.h) are not ours to check. Exits 1 naming each dangling
reference, with where it was found."""
import os
import re
import sys

EXTERNAL = {"cuda.h", "cuda_runtime_api.h", "uthash.h"}
NAME = re.compile(r"[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*\.(?:c|h|def|md)\b")

root = sys.argv[1]
known = set()
for d, dirs, files in os.walk(root):
    dirs[:] = [x for x in dirs if not x.startswith(".") and not x.startswith("build")]
    for f in files:
        rel = os.path.relpath(os.path.join(d, f), root)
        known.add(f)
        known.add(rel)
        if rel.startswith("src/"):
            known.add(rel[4:])

bad = 0
for d, _, files in os.walk(os.path.join(root, "src")):
    for f in sorted(files):
        if not f.endswith((".c", ".h", ".def")):
            continue
        path = os.path.join(d, f)
        in_comment = False
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            text = ""
            rest = line
            # The comment parts of the line only: code names fields like self.h.
            while rest:
                if in_comment:
                    end = rest.find("*/")
                    text += rest if end < 0 else rest[:end]
                    if end < 0:
                        break
                    rest, in_comment = rest[end + 2:], False
                else:
                    start = rest.find("/*")
                    if start < 0:
                        break
                    rest, in_comment = rest[start + 2:], True
            for m in NAME.finditer(text):
                # "launch.c/remap.c" names two files.
                parts = re.split(r"(?<=\.c)/|(?<=\.h)/", m.group(0))
                for ref in parts:
                    ref = ref.lstrip("./") if ref.startswith("../") else ref
                    if ref in EXTERNAL or ref in known:
                        continue
                    print(f"{os.path.relpath(path, root)}:{n}: dangling reference {ref}",
                          file=sys.stderr)
                    bad = 1
sys.exit(bad)
