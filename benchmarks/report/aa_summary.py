#!/usr/bin/env python3
"""The A/A test of the measurement protocol (docs/metrics.md, "Interleaved rounds"; spec:
benchmarks/specs/aa-small.toml): a store whose executors are two spellings of each program. For each pair of
spellings, from `friction report`'s data (the numbers are the report's, computed in C++):
  - cells the report calls different (the CI of the ratio spelling B / spelling A clears 1 by the report's
    minimum effect: false differences), the share of ratios within 3%, and the p10-p90 range of the ratios;
  - whether the two spellings of the second program get the same set of significant ranking inversions
    against the first program (they must: they are one executor).
With a second store (the same spec measured again later), the per-cell executor ratios of the two runs are
compared: the share that agree within 5%.
Usage: aa_summary.py STORE.db [STORE2.db] [--friction build/bin/friction]
"""
import argparse
import json
import os
import subprocess
import tempfile

PAIRS = [("cpu|default", "cpu?profile=off|default"),
         ("ort?level=all&threads=2|all-off", "ort?threads=2&level=all|all-off")]


def report(friction, db, reference):
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([friction, "report", "--db", db, "-o", os.path.join(d, "r.html"), "--reference", reference],
                       check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(d, "r.json")) as f:
            return json.load(f)


def quantile(xs, q):
    xs = sorted(xs)
    h = (len(xs) - 1) * q
    lo = int(h)
    return xs[lo] if lo + 1 >= len(xs) else xs[lo] + (h - lo) * (xs[lo + 1] - xs[lo])


def ratios(data, executor):
    return {(r["model"], r["batch"]): r for r in data["executor_ratios"] if r["executor"] == executor}


def inversion_set(data, executor):
    return {(r["batch"], r["depth"], i["a"], i["b"]) for r in data["executor_rankings"] if r["executor"] == executor
            for i in r["inversions"]}


def summarize(friction, db):
    out = {}
    for ref, twin in PAIRS:
        data = report(friction, db, ref)
        rs = list(ratios(data, twin).values())
        if not rs:
            continue
        vals = [r["ratio"] for r in rs]
        out[twin] = {"cells": len(rs), "false_differences": sum(r["differs"] for r in rs),
                     "within_3_percent": sum(abs(v - 1) <= 0.03 for v in vals) / len(vals),
                     "p10": quantile(vals, 0.1), "p90": quantile(vals, 0.9), "paired": all(r["paired"] for r in rs)}
    # The two ORT spellings against cpu|default: one executor, so one set of inversions.
    data = report(friction, db, PAIRS[0][0])
    a, b = (inversion_set(data, e) for e in PAIRS[1])
    out["inversion_sets"] = {"identical": a == b, "only_first": sorted(map(str, a - b)), "only_second": sorted(map(str, b - a)),
                             "first": len(a), "second": len(b)}
    return out, data


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("stores", nargs="+")
    ap.add_argument("--friction", default="build/bin/friction")
    a = ap.parse_args()
    results = []
    for db in a.stores:
        s, data = summarize(a.friction, db)
        results.append(data)
        print(f"== {db}")
        for twin, r in s.items():
            if twin == "inversion_sets":
                print(f"  ranking inversions vs cpu|default, the two ORT spellings: {r['first']} and {r['second']}, "
                      f"{'identical' if r['identical'] else 'DIFFERENT: ' + str(r['only_first']) + ' / ' + str(r['only_second'])}")
                continue
            print(f"  {twin}: {r['cells']} cells{' (paired over rounds)' if r['paired'] else ''}, false differences "
                  f"{r['false_differences']} ({r['false_differences'] / r['cells']:.0%}), within 3%: "
                  f"{r['within_3_percent']:.0%}, ratios p10-p90 {r['p10']:.3f}-{r['p90']:.3f}")
    if len(results) == 2:  # the same executor ratios measured twice
        for e in {r["executor"] for r in results[0]["executor_ratios"]}:
            first, second = ratios(results[0], e), ratios(results[1], e)
            common = [k for k in first if k in second]
            if common:
                agree = sum(abs(second[k]["ratio"] / first[k]["ratio"] - 1) <= 0.05 for k in common) / len(common)
                print(f"  across runs, {e} / cpu|default per cell: {agree:.0%} of {len(common)} cells agree within 5%")


if __name__ == "__main__":
    main()
