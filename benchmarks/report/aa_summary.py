#!/usr/bin/env python3
"""The A/A test of the measurement protocol (docs/metrics.md, "Interleaved rounds"; spec:
benchmarks/specs/aa-small.toml): a store whose executors are two spellings of each program. For each pair of
spellings, from `friction report`'s data (the numbers are the report's, computed in C++):
  - cells the report calls different (the CI of the ratio spelling B / spelling A clears 1 by the report's
    minimum effect: false differences), the share of ratios within 3%, and the p10-p90 range of the ratios;
  - whether the two spellings of the second program get the same set of significant ranking inversions
    against the first program (they must: they are one executor).
Two runs of any spec are compared by compare_runs.py.
Usage: aa_summary.py STORE.db [STORE.db ...] [--friction build/bin/friction]
"""
import argparse

from report_json import inversion_set, quantile, ratios, report

PAIRS = [("cpu|default", "cpu?profile=off|default"),
         ("ort?level=all&threads=2|all-off", "ort?threads=2&level=all|all-off")]


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
    for db in a.stores:
        s, _ = summarize(a.friction, db)
        print(f"== {db}")
        for twin, r in s.items():
            if twin == "inversion_sets":
                print(f"  ranking inversions vs cpu|default, the two ORT spellings: {r['first']} and {r['second']}, "
                      f"{'identical' if r['identical'] else 'DIFFERENT: ' + str(r['only_first']) + ' / ' + str(r['only_second'])}")
                continue
            print(f"  {twin}: {r['cells']} cells{' (paired over rounds)' if r['paired'] else ''}, false differences "
                  f"{r['false_differences']} ({r['false_differences'] / r['cells']:.0%}), within 3%: "
                  f"{r['within_3_percent']:.0%}, ratios p10-p90 {r['p10']:.3f}-{r['p90']:.3f}")


if __name__ == "__main__":
    main()
