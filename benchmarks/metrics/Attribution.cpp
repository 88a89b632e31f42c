#include "benchmarks/metrics/Attribution.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace friction::metrics {

namespace {
void checkPassCount(int n, int max, const char* what) {
  if (n < 1 || n > max)
    throw std::invalid_argument(std::string(what) + ": pass count must lie in [1, " + std::to_string(max) + "]");
}

// v(S) for every S ⊆ N, indexed by mask.
std::vector<double> allSubsets(int n, const SetFunction& v) {
  std::vector<double> values(size_t(1) << n);
  for (PassMask s = 0; s < values.size(); ++s) values[s] = v(s);
  return values;
}

double factorial(int k) { return std::tgamma(k + 1.0); }
}  // namespace

SetFunction tableFunction(std::map<PassMask, double> table) {
  return [table = std::move(table)](PassMask s) {
    auto it = table.find(s);
    if (it == table.end()) throw std::out_of_range("tableFunction: subset " + std::to_string(s) + " not measured");
    return it->second;
  };
}

std::vector<double> leaveOneOut(int n, const SetFunction& v) {
  checkPassCount(n, 32, "leaveOneOut");
  PassMask all = fullMask(n);
  double vAll = v(all);
  std::vector<double> out(n);
  for (int p = 0; p < n; ++p) out[p] = v(all & ~(PassMask(1) << p)) - vAll;
  return out;
}

std::vector<double> addOneIn(int n, const SetFunction& v) {
  checkPassCount(n, 32, "addOneIn");
  double vEmpty = v(0);
  std::vector<double> out(n);
  for (int p = 0; p < n; ++p) out[p] = v(PassMask(1) << p) - vEmpty;
  return out;
}

std::vector<double> shapleyExact(int n, const SetFunction& v) {
  checkPassCount(n, kMaxExactPasses, "shapleyExact");
  std::vector<double> values = allSubsets(n, v);
  std::vector<double> weight(n);  // weight[|S|] = |S|! (n - |S| - 1)! / n!
  for (int k = 0; k < n; ++k) weight[k] = factorial(k) * factorial(n - k - 1) / factorial(n);
  std::vector<double> phi(n, 0.0);
  for (int p = 0; p < n; ++p) {
    PassMask bit = PassMask(1) << p;
    for (PassMask s = 0; s < values.size(); ++s)
      if (!(s & bit)) phi[p] += weight[std::popcount(s)] * (values[s | bit] - values[s]);
  }
  return phi;
}

SampledShapley shapleySampled(int n, const SetFunction& v, int permutations, uint64_t seed) {
  checkPassCount(n, 32, "shapleySampled");
  if (permutations < 2) throw std::invalid_argument("shapleySampled: need at least two permutations");
  std::unordered_map<PassMask, double> memo;
  auto value = [&](PassMask s) {
    auto it = memo.find(s);
    return it != memo.end() ? it->second : memo[s] = v(s);
  };
  std::mt19937_64 rng(seed);
  std::vector<double> sum(n, 0.0), sumSq(n, 0.0);
  std::vector<int> order(n);
  for (int m = 0; m < permutations; ++m) {
    for (int i = 0; i < n; ++i) order[i] = i;
    for (int i = n - 1; i > 0; --i) std::swap(order[i], order[rng() % (i + 1)]);  // Fisher-Yates
    PassMask s = 0;
    double prev = value(s);
    for (int p : order) {
      s |= PassMask(1) << p;
      double cur = value(s);
      sum[p] += cur - prev;
      sumSq[p] += (cur - prev) * (cur - prev);
      prev = cur;
    }
  }
  SampledShapley out;
  out.permutations = permutations;
  out.evaluations = memo.size();
  double m = permutations;
  for (int p = 0; p < n; ++p) {
    double mu = sum[p] / m;
    double var = std::max(0.0, (sumSq[p] - m * mu * mu) / (m - 1));  // sample variance of the marginals
    out.value.push_back(mu);
    out.stdErr.push_back(std::sqrt(var / m));
  }
  return out;
}

std::vector<std::vector<double>> shapleyInteractions(int n, const SetFunction& v) {
  checkPassCount(n, kMaxExactPasses, "shapleyInteractions");
  std::vector<double> values = allSubsets(n, v);
  std::vector<std::vector<double>> inter(n, std::vector<double>(n, 0.0));
  if (n < 2) return inter;
  std::vector<double> weight(n - 1);  // weight[|S|] = |S|! (n - |S| - 2)! / (n - 1)!
  for (int k = 0; k + 2 <= n; ++k) weight[k] = factorial(k) * factorial(n - k - 2) / factorial(n - 1);
  for (int p = 0; p < n; ++p)
    for (int q = p + 1; q < n; ++q) {
      PassMask bp = PassMask(1) << p, bq = PassMask(1) << q;
      double sum = 0;
      for (PassMask s = 0; s < values.size(); ++s)
        if (!(s & (bp | bq)))
          sum += weight[std::popcount(s)] * (values[s | bp | bq] - values[s | bp] - values[s | bq] + values[s]);
      inter[p][q] = inter[q][p] = sum;
    }
  return inter;
}

}  // namespace friction::metrics
