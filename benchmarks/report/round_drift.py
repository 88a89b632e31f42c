#!/usr/bin/env python3
"""What moves executor ratios from round to round and from run to run (docs/metrics.md, "Memory bandwidth"):
reads a store's rounds directly and sets each round's paired ratio (executor / reference, same model) against
the machine state the round's calibration measured: memory bandwidth, core-to-core round trip, serial speed.
  - per run: the state's median and p10-p90;
  - within each run: the correlation (Spearman, over rounds, pooled over cells after removing each cell's
    median) of the round's log ratio with the round's log bandwidth, log round trip and log serial time;
  - with two runs: per cell, how far the ratio moved against how far the group's median bandwidth moved.
Usage: round_drift.py RUN.db [RUN2.db] [--reference 'ort?level=all&threads=2 all-off'] [--executor 'cpu default']
"""
import argparse
import json
import math
import sqlite3
import statistics
from collections import defaultdict

from report_json import quantile


def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(order):  # ties share their mean rank
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2
        i = j + 1
    return r


def spearman(x, y):
    if len(x) < 3:
        return float("nan")
    rx, ry = ranks(x), ranks(y)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else float("nan")


def load(db):
    """{group: {"rounds": [state per kept round], "cells": {(model, executor): [median per kept round]}}}."""
    con = sqlite3.connect(db)
    groups = defaultdict(lambda: {"rounds": [], "cells": {}})
    for g, memory, cross, serial, dropped in con.execute(
            "SELECT group_key, memory_gbps, cross_core_ns, calibration_serial_ms, dropped FROM rounds "
            "ORDER BY group_key, round"):
        if not dropped:
            groups[g]["rounds"].append({"memory": memory, "cross": cross, "serial": serial})
    for g, model, backend, config, sizes, samples in con.execute(
            "SELECT group_key, model, backend, config_json, round_sizes_json, samples_json FROM measurements "
            "WHERE group_key != ''"):
        sizes, samples = json.loads(sizes), json.loads(samples)
        executor = f"{backend} {json.loads(config).get('config', '')}"
        if "A/A" in config:
            executor += " A/A"
        medians, at = [], 0
        for n in sizes:
            medians.append(statistics.median(samples[at:at + n]))
            at += n
        groups[g]["cells"][(model, executor)] = medians
    return dict(groups)


def paired(groups, executor, reference):
    """{(group, model): [log ratio per round]} for executor / reference."""
    out = {}
    for g, d in groups.items():
        for (model, e), medians in d["cells"].items():
            ref = d["cells"].get((model, reference))
            if e == executor and ref and len(ref) == len(medians):
                out[(g, model)] = [math.log(a / b) for a, b in zip(medians, ref)]
    return out


def state_line(groups):
    parts = []
    for key, unit in (("memory", "GB/s"), ("cross", "ns"), ("serial", "ms")):
        v = [r[key] for d in groups.values() for r in d["rounds"] if r[key] is not None]
        if v:
            parts.append(f"{key} median {statistics.median(v):.3g} {unit} (p10-p90 {quantile(v, 0.1):.3g}-"
                         f"{quantile(v, 0.9):.3g})")
    return "; ".join(parts)


def within_run(groups, ratios):
    """Spearman of the cell-centred round log ratio with each centred round state, pooled over cells."""
    out = {}
    for key in ("memory", "cross", "serial"):
        xs, ys = [], []
        for (g, _), lr in ratios.items():
            states = [r[key] for r in groups[g]["rounds"]]
            if len(states) != len(lr) or any(s is None or s <= 0 for s in states):
                continue
            ls = [math.log(s) for s in states]
            mr, ms = statistics.median(lr), statistics.median(ls)
            xs += [s - ms for s in ls]
            ys += [r - mr for r in lr]
        out[key] = (spearman(xs, ys), len(xs))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--reference", default="ort?level=all&threads=2 all-off")
    ap.add_argument("--executor", default="cpu default")
    a = ap.parse_args()
    loaded = [load(db) for db in a.runs]
    all_ratios = []
    for db, groups in zip(a.runs, loaded):
        ratios = paired(groups, a.executor, a.reference)
        all_ratios.append(ratios)
        print(f"== {db}: {len(groups)} groups, {len(ratios)} cells of {a.executor} / {a.reference}")
        print(f"  machine: {state_line(groups)}")
        for key, (rho, n) in within_run(groups, ratios).items():
            print(f"  round log ratio vs round log {key}: Spearman {rho:+.2f} over {n} cell-rounds")
    if len(loaded) == 2:
        moved, bandwidth = [], []
        for cell in all_ratios[0].keys() & all_ratios[1].keys():
            g = cell[0]
            m = [[r["memory"] for r in run[g]["rounds"] if r["memory"]] for run in loaded]
            if not all(m):
                continue
            moved.append(statistics.median(all_ratios[1][cell]) - statistics.median(all_ratios[0][cell]))
            bandwidth.append(math.log(statistics.median(m[1]) / statistics.median(m[0])))
        if moved:
            agree = sum(abs(x) <= math.log(1.05) for x in moved) / len(moved)
            print(f"run 2 / run 1, {len(moved)} cells: ratios within 5% in {agree:.0%}; ratio moved p10-p90 "
                  f"{math.exp(quantile(moved, 0.1)):.3f}-{math.exp(quantile(moved, 0.9)):.3f}; group bandwidth "
                  f"moved p10-p90 {math.exp(quantile(bandwidth, 0.1)):.3f}-{math.exp(quantile(bandwidth, 0.9)):.3f}; "
                  f"Spearman(ratio moved, bandwidth moved) {spearman(bandwidth, moved):+.2f}")


if __name__ == "__main__":
    main()
