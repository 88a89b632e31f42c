#!/usr/bin/env python3
"""Two runs of one sweep spec (e.g. the small study twice, an hour apart; docs/study.md, "Reproducibility"):
what survives. For every executor against the reference executor, from `friction report`'s data:
  - per-cell executor ratios (same model and batch): the share of cells whose ratios in the two runs agree
    within 5%, and the p10-p90 of ratio(run 2) / ratio(run 1);
  - significant ranking inversions: how many in each run, how many in both;
and each run's A/A false-difference rate when the spec had `aa_control = true`.
Usage: compare_runs.py RUN1.db RUN2.db [--reference EXECUTOR] [--friction build/bin/friction]
"""
import argparse

from report_json import inversion_set, quantile, ratios, report


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("first")
    ap.add_argument("second")
    ap.add_argument("--reference", default="ort?level=disabled&threads=2|all-off")
    ap.add_argument("--friction", default="build/bin/friction")
    a = ap.parse_args()
    runs = [report(a.friction, db, a.reference) for db in (a.first, a.second)]
    for db, data in zip((a.first, a.second), runs):
        aa = data.get("aa") or {}
        if aa.get("count"):
            print(f"{db}: A/A controls {aa['count']}, false differences {aa['false_difference_rate']:.0%}, "
                  f"within 3% {aa['within_3_percent']:.0%}")
    print(f"against {a.reference}:")
    print(f"  {'executor':40} {'cells':>5} {'agree 5%':>8} {'p10-p90 run2/run1':>18} {'inversions 1 / 2 / both':>24}")
    for e in sorted({r["executor"] for r in runs[0]["executor_ratios"]}):
        first, second = ratios(runs[0], e), ratios(runs[1], e)
        common = [k for k in first if k in second]
        if not common:
            continue
        moved = [second[k]["ratio"] / first[k]["ratio"] for k in common]
        agree = sum(abs(m - 1) <= 0.05 for m in moved) / len(moved)
        i1, i2 = inversion_set(runs[0], e), inversion_set(runs[1], e)
        print(f"  {e:40} {len(common):5} {agree:8.0%} {quantile(moved, 0.1):8.3f}-{quantile(moved, 0.9):.3f}"
              f" {len(i1):>13} / {len(i2)} / {len(i1 & i2)}")


if __name__ == "__main__":
    main()
