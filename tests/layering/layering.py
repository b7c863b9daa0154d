#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The controller's layering, checked on the built objects (TAP).

Dependencies run one way: controller/ -> backends/ -> ipc/, common/ (and policy/, proxy/).
  1. no source under backends/ includes a controller/ header;
  2. no object of a backend references a symbol defined by a controller/ object;
  3. the file-level call graph of controller/ (file A calls a function file B defines) has no
     cycle; a cycle is printed as the files on it.
Usage: layering.py SRCDIR BUILDDIR
"""
import os
import re
import subprocess
import sys

src, build = sys.argv[1], sys.argv[2]
CTL = "libcontroller_a-"
BK = "libbackend_a-"
n = 0
failed = 0


def tap(ok, what, detail=""):
    global n, failed
    n += 1
    if not ok:
        failed += 1
    print(f"{'ok' if ok else 'not ok'} {n} - {what}")
    for line in detail.splitlines():
        print(f"# {line}")


def objects(subdir, prefix):
    """The objects built with prefix from sources that still exist under subdir."""
    d = os.path.join(build, subdir)
    out = []
    for root, _, files in os.walk(d):
        for f in files:
            if f.startswith(prefix) and f.endswith(".o"):
                o = os.path.join(root, f)
                if os.path.exists(os.path.join(src, name(o, prefix))):
                    out.append(o)
    return sorted(out)


def symbols(obj):
    res = subprocess.run(["nm", "--defined-only", "-g", obj], capture_output=True, text=True,
                         check=True).stdout
    defined = {l.split()[-1] for l in res.splitlines() if l.split()[1:2] and
               l.split()[1] in "TDBRC"}
    res = subprocess.run(["nm", "-u", obj], capture_output=True, text=True, check=True).stdout
    undefined = {l.split()[-1] for l in res.splitlines() if l.strip()}
    return defined, undefined


def name(obj, prefix):
    rel = os.path.relpath(obj, build)
    d, f = os.path.split(rel)
    return os.path.join(d, f[len(prefix):-2] + ".c")


# 1. includes
bad = []
for root, _, files in os.walk(os.path.join(src, "backends")):
    for f in files:
        if f.endswith((".c", ".h")):
            p = os.path.join(root, f)
            with open(p, encoding="utf-8") as fh:
                for i, line in enumerate(fh, 1):
                    if re.match(r'\s*#\s*include\s+"controller/', line):
                        bad.append(f"{os.path.relpath(p, src)}:{i}: {line.strip()}")
tap(not bad, "nothing under backends/ includes a controller/ header", "\n".join(bad))

ctl = {name(o, CTL): symbols(o) for o in objects("controller", CTL)}
bk = {name(o, BK): symbols(o) for o in objects("backends", BK)}
if not ctl:
    print("1..%d" % n)
    print("# no controller objects under", build)
    sys.exit(1)

# 2. backends reference nothing the controller defines
owner = {}
for f, (d, _) in ctl.items():
    for s in d:
        owner[s] = f
bad = [f"{f} uses {s} ({owner[s]})" for f, (_, u) in bk.items() for s in sorted(u) if s in owner]
tap(bk and not bad, "no backend object references a controller/ symbol", "\n".join(bad))

# 3. no cycle among controller/ files (Tarjan's strongly connected components)
edges = {f: sorted({owner[s] for s in u if s in owner and owner[s] != f})
         for f, (_, u) in ctl.items()}
index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]


def strong(v):
    index[v] = low[v] = counter[0]
    counter[0] += 1
    stack.append(v)
    on.add(v)
    for w in edges[v]:
        if w not in index:
            strong(w)
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
        sccs.append(comp)


sys.setrecursionlimit(10000)
for v in sorted(edges):
    if v not in index:
        strong(v)
cycles = [sorted(c) for c in sccs if len(c) > 1]
detail = ""
for c in cycles:
    detail += f"cycle of {len(c)} files: " + " ".join(c) + "\n"
    for f in c:
        detail += f"  {f} -> " + " ".join(e for e in edges[f] if e in c) + "\n"
tap(not cycles, f"controller/ has no dependency cycle ({len(ctl)} files)", detail)
print("1..%d" % n)
sys.exit(1 if failed else 0)
