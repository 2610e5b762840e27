"""Compare the SASS of two folders of PTX files written by ptxsnap.py:

    python benchmarks/h200-2026-12-02c/perf/sasscmp.py OLD NEW

One line a kernel: instruction count old -> new, "same" for an identical
instruction list, else the opcodes whose counts changed."""
import collections
import os
import re
import sys

from numba_asynccopy import toolchain


def sass(path):
    text = open(path).read()
    if text.startswith("ERROR"):
        return None
    s = toolchain.disassemble(toolchain.assemble(text, verbose=True)[0])
    ins = [m.group(1).strip() for m in re.finditer(r"/\*[0-9a-f]{4}\*/\s+([@A-Z][^;]*);", s)]
    return [i for i in ins if not i.startswith("NOP")]


def opcodes(ins):
    return collections.Counter(i.split()[1] if i.startswith("@") else i.split()[0] for i in ins)


old, new = sys.argv[1], sys.argv[2]
for f in sorted(os.listdir(old)):
    a, b = sass(f"{old}/{f}"), sass(f"{new}/{f}")
    if a is None or b is None:
        print(f, "ERROR")
        continue
    oa, ob = opcodes(a), opcodes(b)
    d = {k: ob[k] - oa[k] for k in set(oa) | set(ob) if ob[k] != oa[k]}
    tag = "same" if a == b else ("same opcodes" if not d else "")
    print(f"{f:40s} {len(a):5d} -> {len(b):5d} {tag} {dict(sorted(d.items())) if d else ''}")
