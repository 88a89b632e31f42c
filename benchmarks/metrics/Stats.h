// Summary statistics of latency samples (the measurement protocol of docs/metrics.md).
// Units: whatever the samples are in; the harness records latencies in milliseconds.
// Every function throws std::invalid_argument on empty input.
#pragma once
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace friction::metrics {

// q-quantile, q in [0, 1], by linear interpolation between order statistics (numpy's default,
// Hyndman-Fan type 7): with x sorted ascending and h = (n - 1) q,
//   Q(q) = x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)]).
double quantile(std::vector<double> samples, double q);
double median(std::vector<double> samples);  // Q(0.5)
double mean(const std::vector<double>& samples);  // (1/n) sum x_i
// Sample standard deviation, sqrt( sum (x_i - mean)^2 / (n - 1) ); 0 for n = 1.
double stddev(const std::vector<double>& samples);

// A confidence interval [low, high].
struct Interval {
  double low = 0, high = 0;
  bool contains(double x) const { return low <= x && x <= high; }
  // The whole interval lies more than `margin` above or below x: an effect, not noise.
  bool clears(double x, double margin = 0) const { return low > x + margin || high < x - margin; }
  double halfWidth() const { return (high - low) / 2; }
};

// Resampling indices: a 64-bit Mersenne Twister (fully specified by the standard, so the same seed gives
// the same resamples everywhere) and index = draw mod n (bias < n / 2^64, negligible).
class Resampler {
 public:
  explicit Resampler(uint64_t seed) : rng_(seed) {}
  size_t index(size_t n) { return static_cast<size_t>(rng_() % n); }
  // One resample with replacement of the same size as `samples`.
  std::vector<double> resample(const std::vector<double>& samples);

 private:
  std::mt19937_64 rng_;
};

// Medians of B bootstrap resamples (each: n draws with replacement), in resample order.
std::vector<double> bootstrapMedians(const std::vector<double>& samples, int resamples, uint64_t seed);

// Percentile bootstrap CI: the (alpha/2, 1 - alpha/2) quantiles (type 7, as above) of the bootstrap
// distribution, alpha = 1 - confidence.
Interval percentileInterval(std::vector<double> bootstrapValues, double confidence = 0.95);

// Percentile-bootstrap CI of the median: percentileInterval(bootstrapMedians(samples, B, seed)).
Interval bootstrapMedianCI(const std::vector<double>& samples, uint64_t seed = 0, int resamples = 2000,
                           double confidence = 0.95);

struct SummaryOptions {
  uint64_t seed = 0;                   // bootstrap seed: same seed, same CI
  int resamples = 2000;                // B
  double confidence = 0.95;            // CI level
  double instabilityThreshold = 0.05;  // unstable when relHalfWidth > this
};

struct Summary {
  size_t n = 0;
  double median = 0, p10 = 0, p90 = 0, mean = 0, stddev = 0;
  Interval medianCI;          // bootstrap CI of the median
  double relHalfWidth = 0;    // (ci.high - ci.low) / 2 / median
  bool unstable = false;      // relHalfWidth > instabilityThreshold
};

Summary summarize(const std::vector<double>& samples, const SummaryOptions& options = {});

// The same with the CI of the median given: samples measured in rounds resample whole rounds
// (roundBootstrapMedianCI), not single runs.
Summary summarizeWithCI(const std::vector<double>& samples, const Interval& medianCI, const SummaryOptions& options = {});

// Relative CI half-width: ((high - low) / 2) / median; +inf when median = 0 and the CI has width.
double relativeHalfWidth(const Interval& ci, double median);

// Adaptive stop: true when at least `minSamples` samples exist and the relative half-width of the
// bootstrap CI of the median is below `target`. The harness repeats until this holds (or its budget ends).
bool precisionReached(const std::vector<double>& samples, double target = 0.05, size_t minSamples = 5,
                      uint64_t seed = 0, int resamples = 2000);

// Ordinary least squares y = intercept + slope * x.
//   slope = Sxy / Sxx, intercept = ybar - slope * xbar, with Sxx = sum (x - xbar)^2, Sxy = sum (x - xbar)(y - ybar);
//   slopeStdErr = sqrt( SSE / (n - 2) / Sxx ) (NaN when n < 3), SSE = sum of squared residuals;
//   r2 = 1 - SSE / SST, SST = sum (y - ybar)^2 (defined as 1 when SST = 0: a constant is fitted exactly).
// Throws when n < 2 or all x are equal.
struct LinearFit {
  double slope = 0, intercept = 0, slopeStdErr = 0, r2 = 0;
  size_t n = 0;
};
LinearFit fitLine(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace friction::metrics
