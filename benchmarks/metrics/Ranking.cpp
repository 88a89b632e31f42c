#include "benchmarks/metrics/Ranking.h"

#include "benchmarks/metrics/Paired.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace friction::metrics {

namespace {
// SplitMix64 finalizer: derives independent per-stream seeds from one user seed.
uint64_t mixSeed(uint64_t seed, uint64_t stream) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int sign(double v) { return (v > 0) - (v < 0); }

// Ratio CI from two already drawn bootstrap median distributions, paired replicate by replicate.
RatioCI ratioFromBootstrap(double ratio, const std::vector<double>& ma, const std::vector<double>& mb,
                           double confidence, double minEffect) {
  std::vector<double> ratios(ma.size());
  for (size_t k = 0; k < ma.size(); ++k) ratios[k] = ma[k] / mb[k];
  RatioCI r;
  r.ratio = ratio;
  r.ci = percentileInterval(std::move(ratios), confidence);
  r.direction = ratioDirection(r.ci, minEffect);
  return r;
}

std::vector<size_t> ranksByValue(const std::vector<double>& v) {
  std::vector<size_t> order(v.size()), rank(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  for (size_t r = 0; r < order.size(); ++r) rank[order[r]] = r;
  return rank;
}
}  // namespace

double kendallTauB(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) throw std::invalid_argument("kendallTauB: x and y differ in length");
  if (x.size() < 2) throw std::invalid_argument("kendallTauB: need at least two items");
  size_t n = x.size();
  double nc = 0, nd = 0, tiesX = 0, tiesY = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      int sx = sign(x[i] - x[j]), sy = sign(y[i] - y[j]);
      if (sx == 0) tiesX += 1;
      if (sy == 0) tiesY += 1;
      if (sx * sy > 0) nc += 1;
      if (sx * sy < 0) nd += 1;
    }
  double n0 = n * (n - 1) / 2.0;
  double denom = std::sqrt((n0 - tiesX) * (n0 - tiesY));
  return denom == 0 ? std::numeric_limits<double>::quiet_NaN() : (nc - nd) / denom;
}

RatioCI medianRatioCI(const std::vector<double>& a, const std::vector<double>& b, uint64_t seed, int resamples,
                      double confidence, double minEffect) {
  return ratioFromBootstrap(median(a) / median(b), bootstrapMedians(a, resamples, mixSeed(seed, 0)),
                            bootstrapMedians(b, resamples, mixSeed(seed, 1)), confidence, minEffect);
}

RankingComparison compareRankings(const std::vector<RankedItem>& items, const RankingOptions& o) {
  size_t n = items.size();
  if (n < 2) throw std::invalid_argument("compareRankings: need at least two items");
  RankingComparison rc;
  std::vector<std::vector<double>> bootA(n), bootB(n);
  for (size_t k = 0; k < n; ++k) {
    if (items[k].samplesA.empty() || items[k].samplesB.empty())
      throw std::invalid_argument("compareRankings: item '" + items[k].name + "' lacks samples");
    rc.mediansA.push_back(median(items[k].samplesA));
    rc.mediansB.push_back(median(items[k].samplesB));
    bootA[k] = bootstrapMedians(items[k].samplesA, o.resamples, mixSeed(o.seed, 2 * k));
    bootB[k] = bootstrapMedians(items[k].samplesB, o.resamples, mixSeed(o.seed, 2 * k + 1));
  }
  rc.rankA = ranksByValue(rc.mediansA);
  rc.rankB = ranksByValue(rc.mediansB);
  rc.kendallTau = kendallTauB(rc.mediansA, rc.mediansB);
  auto paired = [&](auto rounds) {
    return std::all_of(items.begin(), items.end(),
                       [&](const RankedItem& it) { return !(it.*rounds).empty() && (it.*rounds).size() == (items[0].*rounds).size(); });
  };
  bool pairedA = paired(&RankedItem::roundsA), pairedB = paired(&RankedItem::roundsB);
  auto ratio = [&](bool usePairs, const std::vector<double>& ri, const std::vector<double>& rj, double medianRatio,
                   const std::vector<double>& bi, const std::vector<double>& bj, uint64_t stream) {
    if (!usePairs) return ratioFromBootstrap(medianRatio, bi, bj, o.confidence, o.minEffect);
    PairedRatio p = pairedRatio(ri, rj, mixSeed(o.seed, stream), o.resamples, o.confidence, o.minEffect);
    return RatioCI{p.ratio, p.ci, p.direction};
  };
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      uint64_t stream = 2 * (n + i * n + j);
      RatioCI a = ratio(pairedA, items[i].roundsA, items[j].roundsA, rc.mediansA[i] / rc.mediansA[j], bootA[i], bootA[j], stream);
      RatioCI b = ratio(pairedB, items[i].roundsB, items[j].roundsB, rc.mediansB[i] / rc.mediansB[j], bootB[i], bootB[j],
                        stream + 1);
      if (a.direction != 0 && b.direction == -a.direction) rc.inversions.push_back({i, j, a, b});
    }
  return rc;
}

}  // namespace friction::metrics
