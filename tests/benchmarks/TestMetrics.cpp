// Metrics library on synthetic data with known answers (docs/metrics.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <numbers>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "benchmarks/metrics/Attribution.h"
#include "benchmarks/metrics/Paired.h"
#include "benchmarks/metrics/Ranking.h"
#include "benchmarks/metrics/Scaling.h"
#include "benchmarks/metrics/Stats.h"

using namespace friction::metrics;

namespace {
// Deterministic N(mu, sigma) samples (Box-Muller over mt19937_64, identical on every standard library).
std::vector<double> normalSamples(size_t n, double mu, double sigma, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return (rng() >> 11) * 0x1.0p-53 + 0x1.0p-54; };  // in (0, 1)
  std::vector<double> out;
  while (out.size() < n) {
    double r = std::sqrt(-2 * std::log(uniform())), t = 2 * std::numbers::pi * uniform();
    out.push_back(mu + sigma * r * std::cos(t));
    if (out.size() < n) out.push_back(mu + sigma * r * std::sin(t));
  }
  return out;
}

std::vector<double> shifted(std::vector<double> v, double by) {
  for (double& x : v) x += by;
  return v;
}
}  // namespace

// ---------------------------------------------------------------- summary statistics

TEST(Stats, QuantilesMatchNumpyLinear) {
  // numpy.quantile([1, 2, 3, 4], [.1, .5, .9]) = [1.3, 2.5, 3.7]   (h = 3q)
  std::vector<double> a = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(quantile(a, 0.1), 1.3);
  EXPECT_DOUBLE_EQ(median(a), 2.5);
  EXPECT_DOUBLE_EQ(quantile(a, 0.9), 3.7);
  // sorted [1, 1, 2, 3, 4, 5, 6, 9], h = 7q: q=.1 -> 1.0; q=.25 -> 1.75; q=.5 -> 3.5; q=.9 -> 6 + .3*3 = 6.9
  std::vector<double> b = {3, 1, 4, 1, 5, 9, 2, 6};
  EXPECT_DOUBLE_EQ(quantile(b, 0.1), 1.0);
  EXPECT_DOUBLE_EQ(quantile(b, 0.25), 1.75);
  EXPECT_DOUBLE_EQ(median(b), 3.5);
  EXPECT_NEAR(quantile(b, 0.9), 6.9, 1e-12);
  EXPECT_DOUBLE_EQ(quantile(b, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile(b, 1.0), 9.0);
  EXPECT_DOUBLE_EQ(median({5, 1, 3}), 3.0);
  EXPECT_DOUBLE_EQ(quantile({7}, 0.9), 7.0);
  EXPECT_THROW(median({}), std::invalid_argument);
  EXPECT_THROW(quantile(a, 1.5), std::invalid_argument);
}

TEST(Stats, QuantilesBySelectionEqualTheSortedDefinition) {
  // quantile() selects the two order statistics around (n - 1) q instead of sorting: the value must be the
  // sorted definition's to the last bit, with ties and every size a bootstrap sees.
  std::mt19937_64 rng(5);
  for (size_t n = 1; n <= 40; ++n)
    for (int trial = 0; trial < 5; ++trial) {
      std::vector<double> x(n);
      for (double& v : x) v = double(rng() % 8) + (trial % 2 ? 0.125 * double(rng() % 5) : 0);  // many ties
      std::vector<double> sorted = x;
      std::sort(sorted.begin(), sorted.end());
      for (double q : {0.0, 0.025, 0.1, 0.5, 0.9, 0.975, 1.0}) {
        double h = double(n - 1) * q;
        size_t lo = size_t(std::floor(h));
        double expected = lo + 1 >= n ? sorted.back() : sorted[lo] + (h - double(lo)) * (sorted[lo + 1] - sorted[lo]);
        EXPECT_EQ(quantile(x, q), expected) << "n " << n << " q " << q;
      }
    }
}

TEST(Stats, MeanAndSampleStddev) {
  std::vector<double> x = {2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(mean(x), 5.0);
  EXPECT_NEAR(stddev(x), std::sqrt(32.0 / 7.0), 1e-12);  // sum of squares 32, n - 1 = 7
  EXPECT_DOUBLE_EQ(stddev({3}), 0.0);
}

TEST(Stats, SummaryFields) {
  Summary s = summarize({4, 1, 3, 2});
  EXPECT_EQ(s.n, 4u);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.p10, 1.3);
  EXPECT_DOUBLE_EQ(s.p90, 3.7);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_LE(s.medianCI.low, s.median);
  EXPECT_GE(s.medianCI.high, s.median);
  EXPECT_TRUE(s.medianCI.low >= 1 && s.medianCI.high <= 4);
}

TEST(Stats, BootstrapCiCoversTrueMedianAndIsDeterministic) {
  std::vector<double> x = normalSamples(2000, 100.0, 5.0, 42);
  Interval ci = bootstrapMedianCI(x, /*seed=*/7);
  EXPECT_TRUE(ci.contains(100.0)) << ci.low << " " << ci.high;
  // Asymptotic SE of the median: sigma sqrt(pi / 2n) = 0.14; the 95% half-width is about 0.27.
  EXPECT_GT(ci.halfWidth(), 0.1);
  EXPECT_LT(ci.halfWidth(), 0.6);
  Interval again = bootstrapMedianCI(x, 7);
  EXPECT_EQ(ci.low, again.low);
  EXPECT_EQ(ci.high, again.high);
  Interval other = bootstrapMedianCI(x, 8);
  EXPECT_TRUE(other.low != ci.low || other.high != ci.high);
  EXPECT_EQ(bootstrapMedians(x, 50, 3), bootstrapMedians(x, 50, 3));
}

TEST(Stats, ConstantSamplesHaveZeroWidthCi) {
  Summary s = summarize(std::vector<double>(20, 3.5));
  EXPECT_DOUBLE_EQ(s.medianCI.low, 3.5);
  EXPECT_DOUBLE_EQ(s.medianCI.high, 3.5);
  EXPECT_DOUBLE_EQ(s.relHalfWidth, 0.0);
  EXPECT_FALSE(s.unstable);
}

TEST(Stats, InstabilityFlag) {
  Summary tight = summarize(normalSamples(200, 10.0, 0.1, 1));  // CI half-width ~ 0.2% of the median
  EXPECT_FALSE(tight.unstable);
  EXPECT_LT(tight.relHalfWidth, 0.01);
  Summary noisy = summarize(normalSamples(10, 10.0, 3.0, 1));  // ~ 20% of the median
  EXPECT_TRUE(noisy.unstable);
  EXPECT_GT(noisy.relHalfWidth, 0.05);
  SummaryOptions lax;
  lax.instabilityThreshold = 10.0;
  EXPECT_FALSE(summarize(normalSamples(10, 10.0, 3.0, 1), lax).unstable);
}

TEST(Stats, AdaptiveStop) {
  std::vector<double> tight = normalSamples(100, 10.0, 0.1, 2);
  EXPECT_TRUE(precisionReached(tight, 0.05));
  EXPECT_FALSE(precisionReached({10.0, 10.0}, 0.05));  // fewer than minSamples
  EXPECT_TRUE(precisionReached({10.0, 10.0}, 0.05, /*minSamples=*/2));
  EXPECT_FALSE(precisionReached(normalSamples(10, 10.0, 3.0, 2), 0.05));
  EXPECT_FALSE(precisionReached(tight, 0.001));  // stricter than this sample supports
  EXPECT_FALSE(precisionReached({}, 0.05, 0));
}

TEST(Stats, LineFit) {
  LinearFit exact = fitLine({1, 2, 3, 4, 5}, {5, 7, 9, 11, 13});
  EXPECT_NEAR(exact.slope, 2.0, 1e-12);
  EXPECT_NEAR(exact.intercept, 3.0, 1e-12);
  EXPECT_NEAR(exact.r2, 1.0, 1e-12);
  EXPECT_NEAR(exact.slopeStdErr, 0.0, 1e-12);
  // Hand-computed: Sxx = 5, Sxy = 4, SSE = 1.8, SST = 5.
  LinearFit f = fitLine({0, 1, 2, 3}, {1, 3, 2, 4});
  EXPECT_NEAR(f.slope, 0.8, 1e-12);
  EXPECT_NEAR(f.intercept, 1.3, 1e-12);
  EXPECT_NEAR(f.r2, 0.64, 1e-12);
  EXPECT_NEAR(f.slopeStdErr, std::sqrt(1.8 / 2 / 5), 1e-12);
  EXPECT_TRUE(std::isnan(fitLine({1, 2}, {3, 4}).slopeStdErr));
  EXPECT_THROW(fitLine({1, 1}, {3, 4}), std::invalid_argument);
  EXPECT_THROW(fitLine({1}, {3}), std::invalid_argument);
}

// ---------------------------------------------------------------- batch metrics

TEST(BatchMetrics, PowerLawGivesExponentAndClosedForms) {
  const double a = 2.0;
  for (double k : {0.7, 1.0, 1.3}) {
    std::vector<BatchPoint> pts;
    for (double b : {16.0, 1.0, 4.0, 2.0, 32.0, 8.0}) pts.push_back({b, a * std::pow(b, k)});  // unsorted on purpose
    BatchMetrics m = batchMetrics(pts);
    EXPECT_NEAR(m.phi.slope, k, 1e-12);
    EXPECT_NEAR(m.phi.intercept, std::log(a), 1e-12);
    EXPECT_NEAR(m.phi.r2, 1.0, 1e-12);
    EXPECT_NEAR(m.phi.slopeStdErr, 0.0, 1e-9);
    ASSERT_EQ(m.rows.size(), 6u);
    EXPECT_EQ(m.rows.front().batch, 1.0);
    for (const BatchRow& r : m.rows) {
      double b = r.batch;
      EXPECT_NEAR(r.throughput, 1000.0 * b / (a * std::pow(b, k)), 1e-9);  // samples/s from ms
      EXPECT_NEAR(r.costMs, a * std::pow(b, k - 1), 1e-12);
      EXPECT_NEAR(r.efficiency, std::pow(b, 1 - k), 1e-12);  // E = T(b)/T(1) = b^(1-k)
      EXPECT_NEAR(r.friction, std::max(0.0, 1 - std::pow(b, 1 - k)), 1e-12);
    }
  }
}

TEST(BatchMetrics, PerfectAmortization) {
  BatchMetrics m = batchMetrics({{1, 5.0}, {2, 5.0}, {4, 5.0}, {8, 5.0}});
  EXPECT_NEAR(m.phi.slope, 0.0, 1e-12);
  EXPECT_NEAR(m.phi.r2, 1.0, 1e-12);
  for (const BatchRow& r : m.rows) {
    EXPECT_NEAR(r.efficiency, r.batch, 1e-12);
    EXPECT_EQ(r.friction, 0.0);
  }
}

TEST(BatchMetrics, DegradationHasFriction) {
  // L(b) = b^2: E(b) = 1/b, F(b) = 1 - 1/b.
  BatchMetrics m = batchMetrics({{1, 1.0}, {2, 4.0}, {4, 16.0}});
  EXPECT_NEAR(m.phi.slope, 2.0, 1e-12);
  EXPECT_NEAR(m.rows[1].friction, 0.5, 1e-12);
  EXPECT_NEAR(m.rows[2].friction, 0.75, 1e-12);
}

TEST(BatchMetrics, RejectsBadInput) {
  EXPECT_THROW(batchMetrics({{1, 2.0}}), std::invalid_argument);
  EXPECT_THROW(batchMetrics({{1, 2.0}, {1, 3.0}}), std::invalid_argument);
  EXPECT_THROW(batchMetrics({{0, 2.0}, {1, 3.0}}), std::invalid_argument);
  EXPECT_THROW(batchMetrics({{1, 0.0}, {2, 3.0}}), std::invalid_argument);
}

TEST(BatchMetrics, Mitigation) {
  // Baseline L = 2 b^1.2, compiled L = 0.5 b^0.9: S(b) = 4 b^0.3, R(b) = b^0.3, delta-phi = -0.3.
  std::vector<BatchPoint> base, comp;
  for (double b : {1.0, 2.0, 4.0, 8.0, 16.0}) {
    base.push_back({b, 2.0 * std::pow(b, 1.2)});
    comp.push_back({b, 0.5 * std::pow(b, 0.9)});
  }
  Mitigation m = mitigation(base, comp);
  ASSERT_EQ(m.rows.size(), 5u);
  for (const MitigationRow& r : m.rows) {
    EXPECT_NEAR(r.speedup, 4.0 * std::pow(r.batch, 0.3), 1e-9);
    EXPECT_NEAR(r.mitigation, std::pow(r.batch, 0.3), 1e-12);
  }
  EXPECT_NEAR(m.phiBaseline, 1.2, 1e-12);
  EXPECT_NEAR(m.phiCompiled, 0.9, 1e-12);
  EXPECT_NEAR(m.deltaPhi, -0.3, 1e-12);
  comp.pop_back();
  EXPECT_THROW(mitigation(base, comp), std::invalid_argument);
}

// ---------------------------------------------------------------- depth scaling

TEST(DepthScaling, SlopesSpeedupAndRatio) {
  std::vector<DepthPoint> base, comp;
  for (double n : {0.0, 1.0, 2.0, 4.0, 8.0, 16.0}) {
    base.push_back({n, 3 + 2 * n});
    comp.push_back({n, 1 + 0.5 * n});
  }
  DepthScaling d = depthScaling(base, comp);
  EXPECT_NEAR(d.baseline.slope, 2.0, 1e-12);
  EXPECT_NEAR(d.baseline.intercept, 3.0, 1e-12);
  EXPECT_NEAR(d.baseline.r2, 1.0, 1e-12);
  EXPECT_NEAR(d.compiled.slope, 0.5, 1e-12);
  EXPECT_NEAR(d.slopeRatio, 4.0, 1e-12);
  for (const DepthRow& r : d.rows) EXPECT_NEAR(r.speedup, (3 + 2 * r.blocks) / (1 + 0.5 * r.blocks), 1e-12);
  comp[1].blocks = 3;
  EXPECT_THROW(depthScaling(base, comp), std::invalid_argument);
}

// ---------------------------------------------------------------- ranking inversions

TEST(Ranking, KendallTauB) {
  EXPECT_DOUBLE_EQ(kendallTauB({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(kendallTauB({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // One tie in y: n_c = 5, n_d = 0, n_0 = 6, n_1 = 0, n_2 = 1 -> 5 / sqrt(30) (scipy.stats.kendalltau agrees).
  EXPECT_NEAR(kendallTauB({1, 2, 3, 4}, {1, 1, 2, 3}), 5 / std::sqrt(30.0), 1e-12);
  // Ties in both: x = [1,1,2], y = [1,2,2]: n_c = 1, n_d = 0, n_1 = n_2 = 1 -> 1 / 2.
  EXPECT_NEAR(kendallTauB({1, 1, 2}, {1, 2, 2}), 0.5, 1e-12);
  EXPECT_TRUE(std::isnan(kendallTauB({1, 1, 1}, {1, 2, 3})));
  EXPECT_THROW(kendallTauB({1, 2}, {1}), std::invalid_argument);
}

TEST(Ranking, MedianRatioCi) {
  std::vector<double> noise = normalSamples(30, 0.0, 0.2, 5);
  RatioCI r = medianRatioCI(shifted(noise, 20.0), shifted(normalSamples(30, 0.0, 0.2, 6), 10.0), 1);
  EXPECT_NEAR(r.ratio, 2.0, 0.1);
  EXPECT_TRUE(r.ci.contains(r.ratio));
  EXPECT_EQ(r.direction, 1);
  RatioCI back = medianRatioCI(shifted(normalSamples(30, 0.0, 0.2, 6), 10.0), shifted(noise, 20.0), 1);
  EXPECT_EQ(back.direction, -1);
  RatioCI same = medianRatioCI(shifted(noise, 10.0), shifted(normalSamples(30, 0.0, 0.2, 6), 10.0), 1);
  EXPECT_EQ(same.direction, 0);
  RatioCI again = medianRatioCI(shifted(noise, 20.0), shifted(normalSamples(30, 0.0, 0.2, 6), 10.0), 1);
  EXPECT_EQ(again.ci.low, r.ci.low);
  EXPECT_EQ(again.ci.high, r.ci.high);
}

TEST(Ranking, ClearlySeparatedSwapIsAnInversion) {
  auto s = [](double mu, uint64_t seed) { return normalSamples(25, mu, 0.3, seed); };
  // A: 0 < 1 < 2 (10, 20, 30 ms). B: 1 < 0 < 2 (12, 25, 40 ms). Only (0, 1) swaps.
  std::vector<RankedItem> items = {{"a", s(10, 1), s(25, 2)}, {"b", s(20, 3), s(12, 4)}, {"c", s(30, 5), s(40, 6)}};
  RankingComparison rc = compareRankings(items, {.seed = 9});
  ASSERT_EQ(rc.inversions.size(), 1u);
  const InvertedPair& p = rc.inversions[0];
  EXPECT_EQ(p.i, 0u);
  EXPECT_EQ(p.j, 1u);
  EXPECT_LT(p.underA.ci.high, 1.0);  // a faster than b under A
  EXPECT_GT(p.underB.ci.low, 1.0);   // a slower than b under B
  EXPECT_NEAR(p.underA.ratio, 0.5, 0.05);
  EXPECT_NEAR(p.underB.ratio, 25.0 / 12.0, 0.1);
  EXPECT_NEAR(rc.kendallTau, 1.0 / 3.0, 1e-12);  // (0,1) discordant, (0,2) and (1,2) concordant
  EXPECT_EQ(rc.rankA, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(rc.rankB, (std::vector<size_t>{1, 0, 2}));
  // Deterministic per seed.
  RankingComparison again = compareRankings(items, {.seed = 9});
  EXPECT_EQ(again.inversions[0].underA.ci.low, p.underA.ci.low);
  EXPECT_EQ(again.inversions[0].underB.ci.high, p.underB.ci.high);
}

TEST(Ranking, OverlappingNoiseIsNotAnInversion) {
  // Medians differ by 0.2 ms and swap between A and B, but the noise (sd 2 ms) swamps the difference:
  // the rankings by median are reversed (tau = -1) yet no inversion is significant.
  std::vector<double> noise = normalSamples(15, 0.0, 2.0, 11);
  std::vector<RankedItem> items = {{"a", shifted(noise, 10.0), shifted(noise, 10.2)},
                                   {"b", shifted(noise, 10.2), shifted(noise, 10.0)}};
  EXPECT_EQ(medianRatioCI(items[0].samplesA, items[1].samplesA).direction, 0);
  EXPECT_EQ(medianRatioCI(items[0].samplesB, items[1].samplesB).direction, 0);
  RankingComparison rc = compareRankings(items);
  EXPECT_DOUBLE_EQ(rc.kendallTau, -1.0);
  EXPECT_TRUE(rc.inversions.empty());
}

TEST(Ranking, SignificantUnderOnlyOneConditionIsNotAnInversion) {
  std::vector<double> noise = normalSamples(15, 0.0, 2.0, 12);
  std::vector<RankedItem> items = {
      {"a", normalSamples(25, 10.0, 0.2, 1), shifted(noise, 20.2)},  // A: clearly faster; B: a tie in noise
      {"b", normalSamples(25, 20.0, 0.2, 2), shifted(noise, 20.0)}};
  EXPECT_EQ(medianRatioCI(items[0].samplesA, items[1].samplesA).direction, -1);  // significant under A
  EXPECT_EQ(medianRatioCI(items[0].samplesB, items[1].samplesB).direction, 0);   // not under B
  RankingComparison rc = compareRankings(items);
  EXPECT_DOUBLE_EQ(rc.kendallTau, -1.0);
  EXPECT_TRUE(rc.inversions.empty());
}

// Two items measured in the same rounds on a machine whose speed swings by +-30% from round to round: pooled,
// their samples overlap and no ordering is significant; paired round by round, the swap is clear.
TEST(Ranking, PairedRoundsSeeThroughDriftThatIndependentSamplesCannot) {
  std::vector<double> drift = normalSamples(12, 1.0, 0.15, 21);
  auto rounds = [&](double ms) {
    std::vector<double> v;
    for (size_t k = 0; k < drift.size(); ++k) v.push_back(ms * drift[k] * (1 + 0.002 * double(k % 3)));
    return v;
  };
  std::vector<RankedItem> items = {{"a", rounds(10.0), rounds(11.0), {}, {}}, {"b", rounds(10.6), rounds(10.0), {}, {}}};
  EXPECT_TRUE(compareRankings(items).inversions.empty());  // independent: the drift swamps 6-10%
  for (auto& it : items) it.roundsA = it.samplesA, it.roundsB = it.samplesB;
  RankingComparison rc = compareRankings(items, {.minEffect = 0.02});
  ASSERT_EQ(rc.inversions.size(), 1u);
  EXPECT_NEAR(rc.inversions[0].underA.ratio, 10.0 / 10.6, 0.005);
  EXPECT_NEAR(rc.inversions[0].underB.ratio, 1.1, 0.005);
}

TEST(Paired, BlockMediansAndTheirRoundBootstrap) {
  std::vector<double> samples = {1, 2, 3, 10, 20, 5, 6, 7, 8};
  EXPECT_EQ(blockMedians(samples, {3, 2, 4}), (std::vector<double>{2, 15, 6.5}));
  EXPECT_THROW(blockMedians(samples, {3, 3}), std::invalid_argument);
  EXPECT_THROW(blockMedians(samples, {9, 0}), std::invalid_argument);
  Interval ci = roundBootstrapMedianCI(samples, {3, 2, 4}, 1);
  EXPECT_LE(ci.low, median(samples));
  EXPECT_GE(ci.high, median(samples));
  EXPECT_GE(ci.low, 2.0);  // every replicate pools whole rounds: its median lies within the rounds' range
  EXPECT_LE(ci.high, 20.0);
}

TEST(Paired, DirectionNeedsTheMinimumEffect) {
  EXPECT_EQ(ratioDirection({1.01, 1.02}), 1);
  EXPECT_EQ(ratioDirection({1.01, 1.02}, 0.02), 0);
  EXPECT_EQ(ratioDirection({1.021, 1.05}, 0.02), 1);
  EXPECT_EQ(ratioDirection({0.95, 0.981}, 0.02), 0);  // 0.981 is not below 1 / 1.02 = 0.98039
  EXPECT_EQ(ratioDirection({0.95, 0.98}, 0.02), -1);
  EXPECT_EQ(ratioDirection({0.99, 1.01}), 0);
}

// A statistic over batches measured in groups of rounds of their own: delta-phi as the slope of per-round log
// ratios over ln b. Small noise: the CI holds the true slope and excludes 0; ten times the noise: wider.
TEST(Paired, StatisticOverSeriesResamplesEachSeries) {
  const std::vector<double> batches = {1, 4, 16};
  auto series = [&](double sigma) {
    std::vector<std::vector<double>> out;
    for (size_t i = 0; i < batches.size(); ++i) out.push_back(shifted(normalSamples(12, 0, sigma, 40 + i), -0.2 * std::log(batches[i])));
    return out;
  };
  auto slope = [&](const std::vector<double>& m) {
    std::vector<double> x;
    for (double b : batches) x.push_back(std::log(b));
    return fitLine(x, m).slope;
  };
  RoundEstimate tight = statisticOverSeries(series(0.01), slope, 3), loose = statisticOverSeries(series(0.1), slope, 3);
  EXPECT_NEAR(tight.value, -0.2, 0.01);
  EXPECT_TRUE(tight.ci.contains(-0.2)) << tight.ci.low << " " << tight.ci.high;
  EXPECT_LT(tight.ci.high, 0);
  EXPECT_EQ(tight.rounds, 36u);
  EXPECT_GT(loose.ci.high - loose.ci.low, 5 * (tight.ci.high - tight.ci.low));
  EXPECT_EQ(statisticOverSeries(series(0.1), slope, 3).ci.low, loose.ci.low);  // deterministic for a seed
  EXPECT_THROW(statisticOverSeries({{1.0}, {}}, slope), std::invalid_argument);
}

// ---------------------------------------------------------------- pass attribution

TEST(Attribution, AdditiveGame) {
  const std::vector<double> a = {-1.0, -2.5, 0.5, -4.0};
  SetFunction v = [&](PassMask s) {
    double x = 10.0;
    for (int p = 0; p < 4; ++p)
      if (s & (1u << p)) x += a[p];
    return x;
  };
  std::vector<double> phi = shapleyExact(4, v), loo = leaveOneOut(4, v), aoi = addOneIn(4, v);
  auto inter = shapleyInteractions(4, v);
  for (int p = 0; p < 4; ++p) {
    EXPECT_NEAR(phi[p], a[p], 1e-12);
    EXPECT_NEAR(loo[p], -a[p], 1e-12);  // v(all \ p) - v(all)
    EXPECT_NEAR(aoi[p], a[p], 1e-12);   // v({p}) - v(empty)
    for (int q = 0; q < 4; ++q) EXPECT_NEAR(inter[p][q], 0.0, 1e-12);
  }
  EXPECT_NEAR(std::accumulate(phi.begin(), phi.end(), 0.0), v(fullMask(4)) - v(0), 1e-12);
}

TEST(Attribution, PairInteractionSplitsEqually) {
  // v = sum_{p in S} a_p + c [passes 0 and 2 both on]
  const std::vector<double> a = {1.0, 2.0, 3.0};
  const double c = -6.0;
  SetFunction v = [&](PassMask s) {
    double x = 0;
    for (int p = 0; p < 3; ++p)
      if (s & (1u << p)) x += a[p];
    return x + ((s & 1u) && (s & 4u) ? c : 0.0);
  };
  std::vector<double> phi = shapleyExact(3, v);
  EXPECT_NEAR(phi[0], a[0] + c / 2, 1e-12);
  EXPECT_NEAR(phi[1], a[1], 1e-12);
  EXPECT_NEAR(phi[2], a[2] + c / 2, 1e-12);
  EXPECT_NEAR(phi[0] + phi[1] + phi[2], v(7) - v(0), 1e-12);
  auto inter = shapleyInteractions(3, v);
  EXPECT_NEAR(inter[0][2], c, 1e-12);
  EXPECT_NEAR(inter[2][0], c, 1e-12);
  EXPECT_NEAR(inter[0][1], 0.0, 1e-12);
  EXPECT_NEAR(inter[1][2], 0.0, 1e-12);
  EXPECT_EQ(inter[0][0], 0.0);
  std::vector<double> loo = leaveOneOut(3, v), aoi = addOneIn(3, v);
  EXPECT_NEAR(loo[0], -(a[0] + c), 1e-12);  // the interaction lands entirely on each pass
  EXPECT_NEAR(aoi[0], a[0], 1e-12);         // ... and not at all
}

TEST(Attribution, MajorityGameAndTable) {
  // Three-pass majority game: v(S) = 1 when |S| >= 2. By symmetry each Shapley value is 1/3.
  std::map<PassMask, double> table;
  for (PassMask s = 0; s < 8; ++s) table[s] = std::popcount(s) >= 2 ? 1.0 : 0.0;
  std::vector<double> phi = shapleyExact(3, tableFunction(table));
  for (double x : phi) EXPECT_NEAR(x, 1.0 / 3.0, 1e-12);
  // The pairwise index: D_01(empty) = 1, D_01({2}) = -1, weights 1/2 each -> 0.
  EXPECT_NEAR(shapleyInteractions(3, tableFunction(table))[0][1], 0.0, 1e-12);
  table.erase(5);
  EXPECT_THROW(shapleyExact(3, tableFunction(table)), std::out_of_range);
}

TEST(Attribution, EfficiencyOnArbitraryGame) {
  std::mt19937_64 rng(3);
  std::vector<double> values(1 << 7);
  for (double& x : values) x = double(rng() % 1000) / 10.0;
  SetFunction v = [&](PassMask s) { return values[s]; };
  std::vector<double> phi = shapleyExact(7, v);
  EXPECT_NEAR(std::accumulate(phi.begin(), phi.end(), 0.0), values[127] - values[0], 1e-9);
  EXPECT_THROW(shapleyExact(kMaxExactPasses + 1, v), std::invalid_argument);
  EXPECT_THROW(shapleyInteractions(0, v), std::invalid_argument);
}

TEST(Attribution, SampledShapleyConvergesToExact) {
  // n = 8 with pairwise and three-way interactions.
  const int n = 8;
  const std::vector<double> a = {-3, -1, -0.5, -2, 0.2, -4, -0.1, -1.5};
  SetFunction v = [&](PassMask s) {
    auto on = [&](int p) { return (s >> p) & 1u; };
    double x = 50;
    for (int p = 0; p < n; ++p) x += on(p) * a[p];
    x += on(0) * on(1) * -2.0 + on(2) * on(5) * 1.5 + on(3) * on(4) * on(6) * -3.0;
    return x;
  };
  std::vector<double> exact = shapleyExact(n, v);
  SampledShapley est = shapleySampled(n, v, 600, /*seed=*/4);
  double sum = 0;
  for (int p = 0; p < n; ++p) {
    EXPECT_NEAR(est.value[p], exact[p], 4 * est.stdErr[p] + 1e-9) << "pass " << p;
    sum += est.value[p];
  }
  EXPECT_NEAR(sum, v(fullMask(n)) - v(0), 1e-9);  // efficiency holds for the estimate too
  EXPECT_LE(est.evaluations, size_t(1) << n);      // memoized
  EXPECT_EQ(est.permutations, 600);
  SampledShapley again = shapleySampled(n, v, 600, 4);
  EXPECT_EQ(again.value, est.value);
  EXPECT_EQ(again.stdErr, est.stdErr);
  // Additive passes have zero marginal variance: the estimate is exact with zero error.
  SampledShapley add = shapleySampled(3, [](PassMask s) { return double(s & 1u) + 2.0 * ((s >> 1) & 1u); }, 20, 1);
  EXPECT_NEAR(add.value[0], 1.0, 1e-12);
  EXPECT_NEAR(add.value[1], 2.0, 1e-12);
  EXPECT_NEAR(add.stdErr[0], 0.0, 1e-12);
}
