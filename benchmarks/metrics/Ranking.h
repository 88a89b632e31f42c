// Ranking inversions between two conditions (docs/metrics.md, "Ranking inversions").
// Items (archetypes, targets, compilers) carry latency samples under condition A (e.g. uncompiled) and
// condition B (e.g. compiled); lower median latency ranks first.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "benchmarks/metrics/Stats.h"

namespace friction::metrics {

// Kendall tau-b between two paired score vectors (ties handled):
//   tau_b = (n_c - n_d) / sqrt((n_0 - n_1)(n_0 - n_2)),
// n_c / n_d: concordant / discordant pairs, n_0 = n(n-1)/2, n_1 / n_2: pairs tied in x / in y.
// NaN when either vector is constant (denominator 0). Throws on length mismatch or n < 2.
double kendallTauB(const std::vector<double>& x, const std::vector<double>& y);

// Ratio of medians r = median(a) / median(b) with a percentile-bootstrap CI: each bootstrap replicate resamples
// a and b independently and takes median(a*) / median(b*).
// direction: +1 when the CI lies above 1 (a significantly slower than b), -1 when below 1 (a significantly
// faster), 0 when the CI contains 1 (not significant).
struct RatioCI {
  double ratio = 0;
  Interval ci;
  int direction = 0;
};
// minEffect: the direction is 0 unless the CI also clears 1 by this relative margin (Paired.h, ratioDirection).
RatioCI medianRatioCI(const std::vector<double>& a, const std::vector<double>& b, uint64_t seed = 0,
                      int resamples = 2000, double confidence = 0.95, double minEffect = 0);

struct RankedItem {
  std::string name;
  std::vector<double> samplesA;  // latencies (ms) under condition A
  std::vector<double> samplesB;  // latencies (ms) under condition B
  // Per-round values (Paired.h) when every item of a condition was measured in the same interleaved rounds;
  // then that condition's pair ratios are paired round by round (pairedRatio). Empty: independent samples.
  std::vector<double> roundsA, roundsB;
};

// Pair (i, j), i < j, inverted: both ratio CIs exclude 1 and point in opposite directions. Under a condition
// with rounds, the ratio is the paired one (exp of the median per-round log ratio) and its CI resamples rounds;
// otherwise the ratio of medians with independent bootstraps (medianRatioCI).
struct InvertedPair {
  size_t i = 0, j = 0;
  RatioCI underA;  // median_A(i) / median_A(j)
  RatioCI underB;  // median_B(i) / median_B(j)
};

struct RankingComparison {
  std::vector<double> mediansA, mediansB;
  std::vector<size_t> rankA, rankB;  // rank (0 = fastest) of each item by median; ties broken by index
  std::vector<InvertedPair> inversions;
  double kendallTau = 0;  // tau-b between the two rankings by median (tau-b of mediansA vs mediansB)
};

struct RankingOptions {
  uint64_t seed = 0;
  int resamples = 2000;
  double confidence = 0.95;
  double minEffect = 0;  // an ordering is significant only when its CI clears 1 by this margin (ratioDirection)
};

// Every item needs samples under both conditions. Deterministic for a given seed: the bootstrap medians of
// item k under condition c use the seed mix(seed, 2k + c) and are shared by all pairs containing k.
RankingComparison compareRankings(const std::vector<RankedItem>& items, const RankingOptions& options = {});

}  // namespace friction::metrics
