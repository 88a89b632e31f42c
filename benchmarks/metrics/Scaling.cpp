#include "benchmarks/metrics/Scaling.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace friction::metrics {

namespace {
template <typename P>
// Sorts by size; sizes must be distinct and > 0 (>= 0 when zeroSizeOk), latencies > 0.
void sortAndCheck(std::vector<P>& points, double P::*key, const char* what, bool zeroSizeOk = false) {
  std::sort(points.begin(), points.end(), [&](const P& a, const P& b) { return a.*key < b.*key; });
  if (points.size() < 2) throw std::invalid_argument(std::string(what) + ": need at least two points");
  for (size_t i = 0; i < points.size(); ++i) {
    bool sizeOk = points[i].*key > 0 || (zeroSizeOk && points[i].*key == 0);
    if (!sizeOk || !(points[i].latencyMs > 0))
      throw std::invalid_argument(std::string(what) + ": sizes and latencies must be positive");
    if (i > 0 && points[i].*key == points[i - 1].*key)
      throw std::invalid_argument(std::string(what) + ": repeated size " + std::to_string(points[i].*key));
  }
}

void checkSameSizes(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  if (a != b) throw std::invalid_argument(std::string(what) + ": baseline and compiled cover different sizes");
}
}  // namespace

BatchMetrics batchMetrics(std::vector<BatchPoint> points) {
  sortAndCheck(points, &BatchPoint::batch, "batchMetrics");
  BatchMetrics m;
  std::vector<double> logB, logL;
  for (const BatchPoint& p : points) {
    BatchRow r;
    r.batch = p.batch;
    r.latencyMs = p.latencyMs;
    r.throughput = 1000.0 * p.batch / p.latencyMs;
    r.costMs = p.latencyMs / p.batch;
    m.rows.push_back(r);
    logB.push_back(std::log(p.batch));
    logL.push_back(std::log(p.latencyMs));
  }
  double t0 = m.rows.front().throughput;
  for (BatchRow& r : m.rows) {
    r.efficiency = r.throughput / t0;
    r.friction = std::max(0.0, 1 - r.efficiency);
  }
  m.phi = fitLine(logB, logL);
  return m;
}

Mitigation mitigation(const std::vector<BatchPoint>& baseline, const std::vector<BatchPoint>& compiled) {
  BatchMetrics base = batchMetrics(baseline), comp = batchMetrics(compiled);
  auto batches = [](const BatchMetrics& m) {
    std::vector<double> b;
    for (const BatchRow& r : m.rows) b.push_back(r.batch);
    return b;
  };
  checkSameSizes(batches(base), batches(comp), "mitigation");
  Mitigation m;
  for (size_t i = 0; i < base.rows.size(); ++i)
    m.rows.push_back({base.rows[i].batch, comp.rows[i].throughput / base.rows[i].throughput, 0});
  for (MitigationRow& r : m.rows) r.mitigation = r.speedup / m.rows.front().speedup;
  m.phiBaseline = base.phi.slope;
  m.phiCompiled = comp.phi.slope;
  m.deltaPhi = m.phiCompiled - m.phiBaseline;
  return m;
}

DepthScaling depthScaling(const std::vector<DepthPoint>& baseline, const std::vector<DepthPoint>& compiled) {
  std::vector<DepthPoint> b = baseline, c = compiled;
  sortAndCheck(b, &DepthPoint::blocks, "depthScaling", /*zeroSizeOk=*/true);
  sortAndCheck(c, &DepthPoint::blocks, "depthScaling", /*zeroSizeOk=*/true);
  std::vector<double> n, nc, lb, lc;
  for (size_t i = 0; i < b.size(); ++i) n.push_back(b[i].blocks), lb.push_back(b[i].latencyMs);
  for (size_t i = 0; i < c.size(); ++i) nc.push_back(c[i].blocks), lc.push_back(c[i].latencyMs);
  checkSameSizes(n, nc, "depthScaling");
  DepthScaling d;
  for (size_t i = 0; i < n.size(); ++i) d.rows.push_back({n[i], lb[i] / lc[i]});
  d.baseline = fitLine(n, lb);
  d.compiled = fitLine(n, lc);
  d.slopeRatio = d.baseline.slope / d.compiled.slope;
  return d;
}

}  // namespace friction::metrics
