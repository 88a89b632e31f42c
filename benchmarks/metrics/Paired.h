// Statistics over rounds (docs/metrics.md, "Interleaved rounds"). Configurations measured in the same
// interleaved rounds are compared round by round: drift between rounds moves every configuration of a round
// alike and cancels in a per-round ratio or difference, which independent per-configuration CIs cannot do.
// Each round contributes one value per configuration (the median of its block of repetitions).
#pragma once
#include <cstdint>
#include <functional>
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

// A statistic of several series of per-round values measured apart (one per batch: each batch of a sweep is
// a group of rounds of its own) with its percentile-bootstrap CI: each replicate resamples every series' rounds
// independently and evaluates `statistic` on the replicate's per-series medians; the value is `statistic` of
// the series' own medians. Throws when there is no series or one is empty. With a handful of rounds a
// series' bootstrap median takes few values: the interval is coarse and may under-cover.
RoundEstimate statisticOverSeries(const std::vector<std::vector<double>>& series,
                                  const std::function<double(const std::vector<double>& medians)>& statistic,
                                  uint64_t seed = 0, int resamples = 2000, double confidence = 0.95);

// The median of each round's block (`samples` holds the blocks one after another, of sizes `blockSizes`).
std::vector<double> blockMedians(const std::vector<double>& samples, const std::vector<size_t>& blockSizes);

// CI of the median of samples taken in rounds (`samples` holds the rounds' blocks one after another, of sizes
// `blockSizes`): each bootstrap replicate draws whole rounds with replacement and takes the median of their
// pooled samples, so variation between rounds (drift) widens the interval as it should.
Interval roundBootstrapMedianCI(const std::vector<double>& samples, const std::vector<size_t>& blockSizes,
                                uint64_t seed = 0, int resamples = 2000, double confidence = 0.95);

// The direction of a ratio's CI given the smallest effect worth reporting: +1 when the CI lies above 1 + minEffect
// (A slower), -1 when it lies below 1 / (1 + minEffect) (A faster), 0 otherwise. Two separately compiled copies
// of one program differ consistently by up to ~1.5% here (memory placement: the A/A control measures it), an
// effect of the instance, not the program; minEffect = 0.02 keeps such differences from being called findings.
constexpr double kDefaultMinEffect = 0.02;
int ratioDirection(const Interval& ci, double minEffect = 0);

// Paired ratio of A to B measured in the same rounds: r_k = a_k / b_k per round k (a_k, b_k the round values),
// ratio = exp(median_k log r_k), CI = exp of the bootstrap CI of that median, direction = ratioDirection(CI,
// minEffect). Throws when the lengths differ, a list is empty, or a value is not positive.
struct PairedRatio {
  double ratio = 1;
  Interval ci{1, 1};
  int direction = 0;
  size_t rounds = 0;
  double relHalfWidth() const { return ci.halfWidth() / ratio; }
};
PairedRatio pairedRatio(const std::vector<double>& a, const std::vector<double>& b, uint64_t seed = 0,
                        int resamples = 2000, double confidence = 0.95, double minEffect = 0);

}  // namespace friction::metrics
