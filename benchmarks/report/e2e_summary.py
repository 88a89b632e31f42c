#!/usr/bin/env python3
"""The table of benchmarks/e2e_vs_ort.sh: per cell (model, batch), friction cpu's median latency and the
median of its per-round ratios to ONNX Runtime (and to a baseline friction build, when measured), each
with the order-statistic 95% interval of paired_ratio.py; then, per batch, the geometric mean of the
cells' ratios and the worst cell; with MACHINE.tsv, the machine state the rounds' calibrations read.
Usage: e2e_summary.py SAMPLES.tsv [MACHINE.tsv]
  SAMPLES rows: round, model, batch, executor, median_ms
  MACHINE rows: memory_gbps, cross_core_ns (one per round, from `bench --compare --json`)
"""
import collections
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paired_ratio import median_ci  # noqa: E402
from report_json import quantile  # noqa: E402


def ratio_cell(ratios):
    ci = median_ci(ratios)
    interval = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "[n<6]"
    return f"{statistics.median(ratios):6.3f} {interval:>16}"


def main(path):
    ms = collections.defaultdict(dict)  # (model, batch) -> {(round, executor): ms}
    for line in open(path):
        r, model, batch, executor, value = line.split()
        ms[(model, int(batch))][(int(r), executor)] = float(value)
    baseline = any(e == "baseline" for cell in ms.values() for (_, e) in cell)
    header = f"{'model':<20} {'batch':>5} {'cpu ms':>9} {'cpu/ort (95% CI)':>24}"
    if baseline:
        header += f" {'cpu/baseline (95% CI)':>24}"
    print(header)
    by_batch = collections.defaultdict(list)  # batch -> [(median cpu/ort, model)]
    for (model, batch), cell in ms.items():
        rounds = sorted({r for (r, _) in cell})
        cpu = [cell[(r, "cpu")] for r in rounds]
        row = f"{model:<20} {batch:>5} {statistics.median(cpu):9.2f} "
        ratios = [cell[(r, "cpu")] / cell[(r, "ort")] for r in rounds]
        by_batch[batch].append((statistics.median(ratios), model))
        row += ratio_cell(ratios)
        if baseline:
            row += " " + ratio_cell([cell[(r, "cpu")] / cell[(r, "baseline")] for r in rounds])
        print(row)
    for batch, cells in sorted(by_batch.items()):
        geomean = math.exp(statistics.mean(math.log(r) for r, _ in cells))
        worst = max(cells)
        print(f"batch {batch}: geometric mean cpu/ort {geomean:.3f} over {len(cells)} models, "
              f"worst {worst[0]:.3f} ({worst[1]})")


def machine(path):
    rows = [tuple(map(float, line.split())) for line in open(path) if line.strip()]
    if not rows:
        return
    memory, cross = [r[0] for r in rows], [r[1] for r in rows]
    print(f"machine over {len(rows)} rounds: memory bandwidth median {statistics.median(memory):.1f} GB/s "
          f"(p10-p90 {quantile(memory, 0.1):.1f}-{quantile(memory, 0.9):.1f}), core-to-core round trip median "
          f"{statistics.median(cross):.0f} ns")


if __name__ == "__main__":
    main(sys.argv[1])
    if len(sys.argv) > 2:
        machine(sys.argv[2])
