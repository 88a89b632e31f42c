// Pass attribution (docs/metrics.md, "Pass attribution").
// A set function v(S) gives the measured latency (ms) or speedup with exactly the passes in S enabled;
// S is a bitmask over n passes (bit p set = pass p enabled). With v = latency, a positive leave-one-out
// value means removing the pass costs time; Shapley values then sum to v(all) - v(empty), which is negative
// when the passes help. Use v = -latency or v = speedup to make helpful passes positive.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

namespace friction::metrics {

using PassMask = uint32_t;
using SetFunction = std::function<double(PassMask)>;

inline PassMask fullMask(int n) { return n >= 32 ? ~PassMask(0) : (PassMask(1) << n) - 1; }

// A set function read from a table of measured subsets; throws std::out_of_range for a subset not in it.
SetFunction tableFunction(std::map<PassMask, double> table);

// Leave-one-out: LOO(p) = v(all \ {p}) - v(all).   n + 1 evaluations.
std::vector<double> leaveOneOut(int n, const SetFunction& v);
// Add-one-in: AOI(p) = v({p}) - v(empty).          n + 1 evaluations.
std::vector<double> addOneIn(int n, const SetFunction& v);

// Exact Shapley values, n <= kMaxExactPasses (2^n evaluations, each subset once):
//   phi(p) = sum over S ⊆ N \ {p} of |S|! (n - |S| - 1)! / n! * (v(S ∪ {p}) - v(S)).
// Efficiency: sum_p phi(p) = v(all) - v(empty).
constexpr int kMaxExactPasses = 10;
std::vector<double> shapleyExact(int n, const SetFunction& v);

// Monte-Carlo Shapley by permutation sampling: for each of M uniformly random orders of the passes, add the
// passes one by one and record each pass's marginal contribution v(S ∪ {p}) - v(S); phi(p) is the mean over
// the M orders, stdErr(p) = sample stddev / sqrt(M). Every order's contributions sum to v(all) - v(empty),
// so efficiency holds exactly for the estimate too. Subsets are memoized (each evaluated at most once).
// Deterministic for a seed (std::mt19937_64, Fisher-Yates with index = draw mod k).
struct SampledShapley {
  std::vector<double> value;
  std::vector<double> stdErr;
  int permutations = 0;
  size_t evaluations = 0;  // distinct subsets evaluated
};
SampledShapley shapleySampled(int n, const SetFunction& v, int permutations, uint64_t seed = 0);

// Pairwise Shapley interaction index (Grabisch & Roubens), exact, n <= kMaxExactPasses:
//   I(p, q) = sum over S ⊆ N \ {p, q} of |S|! (n - |S| - 2)! / (n - 1)! * D_pq(S),
//   D_pq(S) = v(S ∪ {p, q}) - v(S ∪ {p}) - v(S ∪ {q}) + v(S).
// The weights sum to 1 over S, so I is a weighted average of D_pq(S); if D_pq(S) = c for every S then I = c.
// I > 0: enabling both raises v more (or lowers it less) than the two single effects added; I < 0: the reverse.
// With v = latency, I < 0 means the pair saves more together than apart (synergy).
// Returns an n x n symmetric matrix with a zero diagonal.
std::vector<std::vector<double>> shapleyInteractions(int n, const SetFunction& v);

}  // namespace friction::metrics
