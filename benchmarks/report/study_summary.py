#!/usr/bin/env python3
"""Headline numbers of a compiler-study store (docs/study.md), across executors.

Superseded by `friction report --db STORE -o report.html [--reference EXECUTOR]`, whose report.json has
"executors" (phi per model, depth slopes) and "executor_rankings" (inversions against a reference executor,
tested with the bootstrap CI of the ratio of medians on the raw samples; docs/metrics.md, "Comparing
executors"). Kept because the Findings of docs/study.md were computed with it. This prints, per executor:
  - the friction exponent phi (slope of ln L over ln b) per archetype at the middle depth,
  - the latency slope per added block (ms/block at batch 1, depths >= 4 for the staged CNNs),
  - the archetype ranking at each (depth, batch) and the pairs whose order differs from the reference
    executor's, counted only when both orderings are significant (bootstrap 95% CIs of the two medians
    do not overlap: a conservative stand-in for the CI of their ratio), with Kendall tau.
Usage: study_summary.py STORE.db [--reference EXECUTOR]   (executor = backend|config, e.g. "cpu|all-off")
"""
import argparse
import itertools
import math
import re
import sqlite3
import statistics
from collections import defaultdict


def executor(backend, passes):
    return f"{backend}|{'all-off' if passes == '' else 'default' if backend == 'cpu' else passes}"


def slope(xs, ys):
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else float("nan")


def kendall(a, b):
    pairs = list(itertools.combinations(a, 2))
    s = sum(1 if (a.index(x) < a.index(y)) == (b.index(x) < b.index(y)) else -1 for x, y in pairs)
    return s / len(pairs) if pairs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--reference", default="ort?level=disabled&threads=2|all-off")
    args = ap.parse_args()
    con = sqlite3.connect(args.db)
    cells = {}
    for model, backend, batch, passes, med, lo, hi in con.execute(
            "select model, backend, batch, passes, median_ms, ci_low_ms, ci_high_ms from measurements"):
        arch = model.split("?")[0].replace("zoo:", "")
        depth = int(re.search(r"depth=(\d+)", model).group(1))
        cells[(executor(backend, passes), arch, depth, batch)] = (med, lo, hi)
    execs = sorted({k[0] for k in cells})
    archs = sorted({k[1] for k in cells})
    depths = sorted({k[2] for k in cells})
    batches = sorted({k[3] for k in cells})
    mid = depths[len(depths) // 2]

    print(f"{len(cells)} cells; executors: {', '.join(execs)}\n")
    print(f"friction exponent phi (slope of ln L over ln b), depth {mid}:")
    print("  " + "executor".ljust(36) + "".join(a.rjust(12) for a in archs))
    for e in execs:
        row = []
        for a in archs:
            pts = [(b, cells[(e, a, mid, b)][0]) for b in batches if (e, a, mid, b) in cells]
            row.append(slope([math.log(b) for b, _ in pts], [math.log(l) for _, l in pts]) if len(pts) > 1 else float("nan"))
        print("  " + e.ljust(36) + "".join(f"{v:12.2f}" for v in row))

    print("\nlatency per added block, batch 1 (ms/block; CNNs fitted on depth >= 4):")
    print("  " + "executor".ljust(36) + "".join(a.rjust(12) for a in archs))
    for e in execs:
        row = []
        for a in archs:
            ds = [d for d in depths if (a in ("vit", "mixer") or d >= 4) and (e, a, d, 1) in cells]
            row.append(slope(ds, [cells[(e, a, d, 1)][0] for d in ds]) if len(ds) > 1 else float("nan"))
        print("  " + e.ljust(36) + "".join(f"{v:12.3f}" for v in row))

    ref = args.reference
    print(f"\nranking inversions against {ref} (significant both ways), Kendall tau:")
    for e in execs:
        if e == ref:
            continue
        inv, taus = [], []
        for d, b in itertools.product(depths, batches):
            have = [a for a in archs if (e, a, d, b) in cells and (ref, a, d, b) in cells]
            if len(have) < 2:
                continue
            r_ref = sorted(have, key=lambda a: cells[(ref, a, d, b)][0])
            r_e = sorted(have, key=lambda a: cells[(e, a, d, b)][0])
            taus.append(kendall(r_ref, r_e))
            for x, y in itertools.combinations(have, 2):
                def sig_less(ex, p, q):  # p significantly faster than q under ex
                    return cells[(ex, p, d, b)][2] < cells[(ex, q, d, b)][1]
                if (sig_less(ref, x, y) and sig_less(e, y, x)) or (sig_less(ref, y, x) and sig_less(e, x, y)):
                    inv.append(f"{x}/{y}@d{d}b{b}")
        print(f"  {e:36s} tau {statistics.fmean(taus):5.2f}  inversions {len(inv):3d}  {' '.join(inv[:6])}{' ...' if len(inv) > 6 else ''}")


if __name__ == "__main__":
    main()
