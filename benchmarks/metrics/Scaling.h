// Batch and depth scaling metrics of one configuration (docs/metrics.md, "Batch metrics" and "Depth scaling").
// Latencies are median latencies in milliseconds; throughput is reported in samples per second.
#pragma once
#include <vector>

#include "benchmarks/metrics/Stats.h"

namespace friction::metrics {

// One measured point: batch b and its median latency L(b) in ms.
struct BatchPoint {
  double batch = 0;
  double latencyMs = 0;
};

struct BatchRow {
  double batch = 0;
  double latencyMs = 0;   // L(b)
  double throughput = 0;  // T(b) = b / L(b), in samples/s (= 1000 b / L_ms)
  double costMs = 0;      // c(b) = L(b) / b, in ms per sample
  double efficiency = 0;  // E(b) = T(b) / T(b0), b0 the smallest batch
  double friction = 0;    // F(b) = max(0, 1 - E(b))
};

struct BatchMetrics {
  std::vector<BatchRow> rows;  // sorted by batch
  // Friction exponent phi = slope of log L(b) over log b (natural logs; the base does not change the slope).
  // phi < 1: batching amortizes; phi = 1: linear; phi > 1: batch-induced degradation.
  LinearFit phi;
};

// Throws std::invalid_argument on fewer than two distinct batches, repeated batches, or non-positive b or L.
BatchMetrics batchMetrics(std::vector<BatchPoint> points);

// Compiler friction mitigation at one batch.
struct MitigationRow {
  double batch = 0;
  double speedup = 0;     // S(b) = T_compiled(b) / T_baseline(b) = L_baseline(b) / L_compiled(b)
  double mitigation = 0;  // R(b) = S(b) / S(b0); R > 1: compilation gains more at larger batch
};

struct Mitigation {
  std::vector<MitigationRow> rows;  // sorted by batch
  double phiBaseline = 0, phiCompiled = 0;
  double deltaPhi = 0;  // phi_compiled - phi_baseline; < 0: compilation reduces friction
};

// Both sides must be measured at the same set of batches.
Mitigation mitigation(const std::vector<BatchPoint>& baseline, const std::vector<BatchPoint>& compiled);

// Depth scaling: N repeated blocks and the median latency (ms) of the model with N blocks.
struct DepthPoint {
  double blocks = 0;
  double latencyMs = 0;
};

struct DepthRow {
  double blocks = 0;
  double speedup = 0;  // S(N) = L_baseline(N) / L_compiled(N)
};

struct DepthScaling {
  std::vector<DepthRow> rows;  // sorted by N
  LinearFit baseline;          // L_baseline(N) = intercept + slope N; slope in ms per added block
  LinearFit compiled;          // same for the compiled model
  // slope_baseline / slope_compiled: per-block speedup, the limit of S(N) as N grows.
  // (> S(N) at small N when the compiler exploits repeated blocks more than the fixed stem/head.)
  double slopeRatio = 0;
};

// Both sides must be measured at the same set of block counts (N >= 0; N = 0 is the stem and head alone).
DepthScaling depthScaling(const std::vector<DepthPoint>& baseline, const std::vector<DepthPoint>& compiled);

}  // namespace friction::metrics
