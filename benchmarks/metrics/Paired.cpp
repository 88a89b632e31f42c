#include "benchmarks/metrics/Paired.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace friction::metrics {

RoundEstimate medianOverRounds(const std::vector<double>& perRound, uint64_t seed, int resamples, double confidence) {
  RoundEstimate e;
  e.value = median(perRound);
  e.ci = bootstrapMedianCI(perRound, seed, resamples, confidence);
  e.rounds = perRound.size();
  return e;
}

RoundEstimate statisticOverSeries(const std::vector<std::vector<double>>& series,
                                  const std::function<double(const std::vector<double>& medians)>& statistic,
                                  uint64_t seed, int resamples, double confidence) {
  if (series.empty()) throw std::invalid_argument("statisticOverSeries: no series");
  std::vector<double> medians;
  RoundEstimate e;
  for (const auto& s : series) {
    if (s.empty()) throw std::invalid_argument("statisticOverSeries: a series without rounds");
    medians.push_back(median(s));
    e.rounds += s.size();
  }
  e.value = statistic(medians);
  Resampler r(seed);
  std::vector<double> values(size_t(std::max(resamples, 1))), drawn;
  for (double& v : values) {
    for (size_t i = 0; i < series.size(); ++i) {
      drawn.resize(series[i].size());
      for (double& x : drawn) x = series[i][r.index(series[i].size())];
      medians[i] = median(drawn);
    }
    v = statistic(medians);
  }
  e.ci = percentileInterval(std::move(values), confidence);
  return e;
}

namespace {
// Where each block starts; throws unless the sizes add up to the sample count.
std::vector<size_t> blockStarts(const std::vector<double>& samples, const std::vector<size_t>& blockSizes) {
  std::vector<size_t> starts;
  size_t total = 0;
  for (size_t n : blockSizes) {
    if (n == 0) throw std::invalid_argument("round blocks must not be empty");
    starts.push_back(total), total += n;
  }
  if (total != samples.size() || samples.empty())
    throw std::invalid_argument("the round block sizes do not add up to the sample count");
  return starts;
}
}  // namespace

std::vector<double> blockMedians(const std::vector<double>& samples, const std::vector<size_t>& blockSizes) {
  std::vector<size_t> starts = blockStarts(samples, blockSizes);
  std::vector<double> out;
  for (size_t k = 0; k < starts.size(); ++k)
    out.push_back(median(std::vector<double>(samples.begin() + long(starts[k]),
                                             samples.begin() + long(starts[k] + blockSizes[k]))));
  return out;
}

Interval roundBootstrapMedianCI(const std::vector<double>& samples, const std::vector<size_t>& blockSizes,
                                uint64_t seed, int resamples, double confidence) {
  std::vector<size_t> starts = blockStarts(samples, blockSizes);
  Resampler r(seed);
  std::vector<double> medians(size_t(std::max(resamples, 1))), pooled;
  for (double& m : medians) {
    pooled.clear();
    for (size_t k = 0; k < blockSizes.size(); ++k) {
      size_t b = r.index(blockSizes.size());
      pooled.insert(pooled.end(), samples.begin() + long(starts[b]), samples.begin() + long(starts[b] + blockSizes[b]));
    }
    m = median(pooled);
  }
  return percentileInterval(std::move(medians), confidence);
}

int ratioDirection(const Interval& ci, double minEffect) {
  return ci.low > 1 + minEffect ? 1 : ci.high < 1 / (1 + minEffect) ? -1 : 0;
}

PairedRatio pairedRatio(const std::vector<double>& a, const std::vector<double>& b, uint64_t seed, int resamples,
                        double confidence, double minEffect) {
  if (a.size() != b.size()) throw std::invalid_argument("pairedRatio: the two configurations have different round counts");
  if (a.empty()) throw std::invalid_argument("pairedRatio: no rounds");
  std::vector<double> logRatios(a.size());
  for (size_t k = 0; k < a.size(); ++k) {
    if (!(a[k] > 0 && b[k] > 0)) throw std::invalid_argument("pairedRatio: round values must be positive");
    logRatios[k] = std::log(a[k] / b[k]);
  }
  RoundEstimate e = medianOverRounds(logRatios, seed, resamples, confidence);
  PairedRatio p;
  p.ratio = std::exp(e.value);
  p.ci = {std::exp(e.ci.low), std::exp(e.ci.high)};
  p.direction = ratioDirection(p.ci, minEffect);
  p.rounds = a.size();
  return p;
}

}  // namespace friction::metrics
