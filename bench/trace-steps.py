#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Per-step medians of a cordon-launcherd spawn trace (CORDON_LAUNCHERD_TRACE=FILE).

    CORDON_LAUNCHERD_TRACE=/tmp/t.log ./bench/spawn --launcherd ./cordon-launcherd \\
        --rounds 200 --seconds 0.01
    bench/trace-steps.py /tmp/t.log

Each line of the trace is "ID STEP NANOSECONDS" (CLOCK_MONOTONIC). Lines with ID "-" come from
the daemon before the sandbox has an id (frame received, plan checked): they are counted with
the next sandbox that starts, which is right for one client spawning in sequence (the latency
part of bench/spawn). Prints, per pair of consecutive steps, the median and p90 in µs.
"""
import collections
import statistics
import sys


def main(path):
    lines = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3:
                lines.append((parts[0], parts[1], int(parts[2])))
    lines.sort(key=lambda x: x[2])
    events = collections.defaultdict(list)
    pending = []
    for sid, step, t in lines:
        if sid == "-":
            pending.append((step, t))
            continue
        if step == "start":
            events[sid].extend(pending)
            pending = []
        events[sid].append((step, t))
    deltas = collections.defaultdict(list)
    order = []
    totals = []
    for ev in events.values():
        ev.sort(key=lambda x: x[1])
        if len(ev) < 5:
            continue
        totals.append((ev[-1][1] - ev[0][1]) / 1e3)
        for (s0, t0), (s1, t1) in zip(ev, ev[1:]):
            key = s0 + " -> " + s1
            if key not in deltas:
                order.append(key)
            deltas[key].append((t1 - t0) / 1e3)
    if not totals:
        sys.exit("no complete spawn in " + path)
    print("%d spawns, first to last step: median %.0f us" % (len(totals), statistics.median(totals)))
    for key in order:
        v = sorted(deltas[key])
        if len(v) < len(totals) / 2:
            continue  # a pair that only some spawns have (interleaving)
        print("%-36s %8.1f us   p90 %8.1f" % (key, statistics.median(v), v[int(len(v) * 0.9)]))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: trace-steps.py TRACE")
    main(sys.argv[1])
