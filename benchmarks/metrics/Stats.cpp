#include "benchmarks/metrics/Stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace friction::metrics {

namespace {
void requireSamples(const std::vector<double>& samples, const char* what) {
  if (samples.empty()) throw std::invalid_argument(std::string(what) + ": no samples");
}

// Type-7 quantile of an already sorted vector.
double sortedQuantile(const std::vector<double>& x, double q) {
  double h = (x.size() - 1) * q;
  size_t lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= x.size()) return x.back();
  return x[lo] + (h - lo) * (x[lo + 1] - x[lo]);
}

// The same value as sortedQuantile after a sort, from the two order statistics around (n - 1) q found by
// selection: O(n), which matters inside a bootstrap (B medians of a few hundred samples per cell).
double selectQuantile(std::vector<double>& x, double q) {
  double h = (x.size() - 1) * q;
  size_t lo = static_cast<size_t>(std::floor(h));
  std::nth_element(x.begin(), x.begin() + long(lo), x.end());
  if (lo + 1 >= x.size()) return x[lo];
  double next = *std::min_element(x.begin() + long(lo) + 1, x.end());
  return x[lo] + (h - lo) * (next - x[lo]);
}
}  // namespace

double quantile(std::vector<double> samples, double q) {
  requireSamples(samples, "quantile");
  if (!(q >= 0 && q <= 1)) throw std::invalid_argument("quantile: q must lie in [0, 1]");
  return selectQuantile(samples, q);
}

double median(std::vector<double> samples) { return quantile(std::move(samples), 0.5); }

double mean(const std::vector<double>& samples) {
  requireSamples(samples, "mean");
  return std::accumulate(samples.begin(), samples.end(), 0.0) / samples.size();
}

double stddev(const std::vector<double>& samples) {
  double m = mean(samples);
  if (samples.size() < 2) return 0;
  double ss = 0;
  for (double x : samples) ss += (x - m) * (x - m);
  return std::sqrt(ss / (samples.size() - 1));
}

std::vector<double> Resampler::resample(const std::vector<double>& samples) {
  std::vector<double> out(samples.size());
  for (double& x : out) x = samples[index(samples.size())];
  return out;
}

std::vector<double> bootstrapMedians(const std::vector<double>& samples, int resamples, uint64_t seed) {
  requireSamples(samples, "bootstrapMedians");
  if (resamples < 1) throw std::invalid_argument("bootstrapMedians: need at least one resample");
  Resampler r(seed);
  std::vector<double> medians(resamples);
  for (double& m : medians) {
    std::vector<double> s = r.resample(samples);
    m = selectQuantile(s, 0.5);
  }
  return medians;
}

Interval percentileInterval(std::vector<double> values, double confidence) {
  requireSamples(values, "percentileInterval");
  if (!(confidence > 0 && confidence < 1)) throw std::invalid_argument("percentileInterval: confidence in (0, 1)");
  double alpha = 1 - confidence;
  std::sort(values.begin(), values.end());
  return {sortedQuantile(values, alpha / 2), sortedQuantile(values, 1 - alpha / 2)};
}

Interval bootstrapMedianCI(const std::vector<double>& samples, uint64_t seed, int resamples, double confidence) {
  return percentileInterval(bootstrapMedians(samples, resamples, seed), confidence);
}

double relativeHalfWidth(const Interval& ci, double median) {
  if (ci.halfWidth() == 0) return 0;
  if (median == 0) return std::numeric_limits<double>::infinity();
  return ci.halfWidth() / std::abs(median);
}

Summary summarize(const std::vector<double>& samples, const SummaryOptions& o) {
  requireSamples(samples, "summarize");
  return summarizeWithCI(samples, bootstrapMedianCI(samples, o.seed, o.resamples, o.confidence), o);
}

Summary summarizeWithCI(const std::vector<double>& samples, const Interval& medianCI, const SummaryOptions& o) {
  requireSamples(samples, "summarize");
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  Summary s;
  s.n = samples.size();
  s.median = sortedQuantile(sorted, 0.5);
  s.p10 = sortedQuantile(sorted, 0.1);
  s.p90 = sortedQuantile(sorted, 0.9);
  s.mean = mean(samples);
  s.stddev = stddev(samples);
  s.medianCI = medianCI;
  s.relHalfWidth = relativeHalfWidth(s.medianCI, s.median);
  s.unstable = s.relHalfWidth > o.instabilityThreshold;
  return s;
}

bool precisionReached(const std::vector<double>& samples, double target, size_t minSamples, uint64_t seed,
                      int resamples) {
  if (samples.empty() || samples.size() < minSamples) return false;
  Interval ci = bootstrapMedianCI(samples, seed, resamples);
  return relativeHalfWidth(ci, median(samples)) < target;
}

LinearFit fitLine(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) throw std::invalid_argument("fitLine: x and y differ in length");
  if (x.size() < 2) throw std::invalid_argument("fitLine: need at least two points");
  size_t n = x.size();
  double xbar = mean(x), ybar = mean(y);
  double sxx = 0, sxy = 0, sst = 0;
  for (size_t i = 0; i < n; ++i) {
    sxx += (x[i] - xbar) * (x[i] - xbar);
    sxy += (x[i] - xbar) * (y[i] - ybar);
    sst += (y[i] - ybar) * (y[i] - ybar);
  }
  if (sxx == 0) throw std::invalid_argument("fitLine: all x are equal");
  LinearFit f;
  f.n = n;
  f.slope = sxy / sxx;
  f.intercept = ybar - f.slope * xbar;
  double sse = 0;
  for (size_t i = 0; i < n; ++i) {
    double r = y[i] - (f.intercept + f.slope * x[i]);
    sse += r * r;
  }
  f.slopeStdErr = n > 2 ? std::sqrt(sse / (n - 2) / sxx) : std::numeric_limits<double>::quiet_NaN();
  f.r2 = sst == 0 ? 1.0 : 1 - sse / sst;
  return f;
}

}  // namespace friction::metrics
