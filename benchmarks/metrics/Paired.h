// Statistics over rounds (docs/metrics.md, "Interleaved rounds"). Configurations measured in the same
// interleaved rounds are compared round by round: drift between rounds moves every configuration of a round
// alike and cancels in a per-round ratio or difference, which independent per-configuration CIs cannot do.
// Each round contributes one value per configuration (the median of its block of repetitions).
#pragma once
#include <cstdint>
#include <vector>

#include "benchmarks/metrics/Stats.h"

namespace friction::metrics {

// A statistic of per-round values: the median over rounds and its percentile-bootstrap CI (rounds resampled).
struct RoundEstimate {
  double value = 0;
  Interval ci;
  size_t rounds = 0;
  bool excludes(double x) const { return !ci.contains(x); }
};
RoundEstimate medianOverRounds(const std::vector<double>& perRound, uint64_t seed = 0, int resamples = 2000,
                               double confidence = 0.95);

// The median of each round's block (`samples` holds the blocks one after another, of sizes `blockSizes`).
std::vector<double> blockMedians(const std::vector<double>& samples, const std::vector<size_t>& blockSizes);

// CI of the median of samples taken in rounds (`samples` holds the rounds' blocks one after another, of sizes
// `blockSizes`): each bootstrap replicate draws whole rounds with replacement and takes the median of their
// pooled samples, so variation between rounds (drift) widens the interval as it should.
Interval roundBootstrapMedianCI(const std::vector<double>& samples, const std::vector<size_t>& blockSizes,
                                uint64_t seed = 0, int resamples = 2000, double confidence = 0.95);

// Paired ratio of A to B measured in the same rounds: r_k = a_k / b_k per round k (a_k, b_k the round values),
// ratio = exp(median_k log r_k), CI = exp of the bootstrap CI of that median. direction: +1 when the CI lies
// above 1 (A slower), -1 below 1 (A faster), 0 when it contains 1. Throws when the lengths differ, a list is
// empty, or a value is not positive.
struct PairedRatio {
  double ratio = 1;
  Interval ci{1, 1};
  int direction = 0;
  size_t rounds = 0;
  double relHalfWidth() const { return ci.halfWidth() / ratio; }
};
PairedRatio pairedRatio(const std::vector<double>& a, const std::vector<double>& b, uint64_t seed = 0,
                        int resamples = 2000, double confidence = 0.95);

}  // namespace friction::metrics
