#!/usr/bin/env python3
"""One row of benchmarks/vendor_agreement.sh: the median of paired per-round ratios (bridge / tool)
with a distribution-free 95% confidence interval, and a verdict against a +-5% agreement band.

The interval is the order-statistic interval for a median (the sign-test interval): with n ratios
sorted, [r_k, r_(n-k+1)] for the largest k with P(Binomial(n, 1/2) < k) <= 2.5%. It assumes only
that rounds are independent, not that the machine noise is normal; it needs at least 6 rounds.
Verdict: "agrees" when the whole interval lies in [0.95, 1.05], "differs" when it lies wholly
outside, otherwise "inconclusive" (more rounds, or a quieter machine).
Usage: paired_ratio.py NAME "BRIDGE_MS..." "TOOL_MS..." ROUNDS_TEXT
"""
import math
import statistics
import sys

BAND = (0.95, 1.05)


def median_ci(values, level=0.95):
    """(lo, hi) order-statistic interval for the median, or None when n is too small."""
    v = sorted(values)
    n = len(v)
    tail = (1 - level) / 2
    k, cdf = 0, 0.0
    while True:  # grow k while P(B < k + 1) stays within the tail
        cdf += math.comb(n, k) / 2**n
        if cdf > tail:
            break
        k += 1
    return None if k == 0 else (v[k - 1], v[n - k])


def verdict(ci):
    if ci is None:
        return "inconclusive (needs >= 6 rounds)"
    lo, hi = ci
    if BAND[0] <= lo and hi <= BAND[1]:
        return "agrees within 5%"
    if hi < BAND[0] or lo > BAND[1]:
        return "differs by more than 5%"
    return "inconclusive"


def main():
    name, bridge, tool, rounds = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4]
    pairs = [(float(b), float(t)) for b, t in zip(bridge, tool)
             if not math.isnan(float(b)) and not math.isnan(float(t))]
    if not pairs:
        print(f"{name:<10} no round measured both sides ({rounds.strip()})")
        return
    ratios = [b / t for b, t in pairs]
    ci = median_ci(ratios)
    ci_text = "n/a" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"
    print(f"{name:<10} {statistics.median(b for b, _ in pairs):12.3f} {statistics.median(t for _, t in pairs):12.3f} "
          f"{statistics.median(ratios):8.3f}  {ci_text:<15} {verdict(ci)}  (rounds bridge/tool ms:{rounds})")


if __name__ == "__main__":
    main()
