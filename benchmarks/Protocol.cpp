#include "benchmarks/Protocol.h"

#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "ir/Error.h"
#include "runtime/Backend.h"
#include "runtime/interp/Interpreter.h"
#include "runtime/Inputs.h"

namespace friction::bench {
namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Largest absolute and relative (to the largest |reference|) difference over all outputs.
void compareOutputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want, Measurement& m) {
  FRICTION_CHECK(got.size() == want.size(), "backend produced " + std::to_string(got.size()) + " outputs, expected " +
                                                std::to_string(want.size()));
  double maxAbs = 0, maxRel = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    FRICTION_CHECK(got[i].shape() == want[i].shape(), "output " + std::to_string(i) + " has shape " +
                                                          got[i].type().shape.str() + ", expected " +
                                                          want[i].type().shape.str());
    double scale = 0, err = 0;
    for (int64_t k = 0; k < want[i].numel(); ++k) {
      double w = want[i].elementAsDouble(k), g = got[i].elementAsDouble(k);
      scale = std::max(scale, std::fabs(w));
      err = std::max(err, std::isnan(g - w) ? (std::isnan(g) && std::isnan(w) ? 0.0 : INFINITY) : std::fabs(g - w));
    }
    maxAbs = std::max(maxAbs, err);
    maxRel = std::max(maxRel, scale > 0 ? err / scale : err);
  }
  m.maxAbsError = maxAbs;
  m.maxRelError = maxRel;
}

}  // namespace

Measurement measure(const Graph& optimized, const Graph* reference, const MeasureOptions& o) {
  Measurement m;
  if (o.threads > 0) omp_set_num_threads(o.threads);
  m.threads = omp_get_max_threads();
  std::vector<Tensor> inputs = seededInputs(optimized, o.seed);

  auto backend = createBackend(o.backend);
  auto t0 = Clock::now();
  auto compiled = backend->compile(optimized);
  m.compileMs = msSince(t0);
  m.executor = compiled->description();
  m.interpNodes = compiled->interpNodes();

  std::vector<Tensor> outputs;
  for (int i = 0; i < std::max(o.warmup, 1); ++i) outputs = compiled->run(inputs);
  if (o.checkOutputs && reference) compareOutputs(outputs, interp::run(*reference, inputs), m);

  metrics::SummaryOptions so;
  so.seed = o.seed;
  auto budgetStart = Clock::now();
  m.stopReason = "reps";
  double timedMs = 0;
  // The stopping rule bootstraps the median, which costs far more than a fast
  // model's run: test it on a geometric schedule (every ~10% more samples)
  // with fewer resamples, keeping harness overhead per run well under 1 ms.
  size_t nextCheck = size_t(std::max(o.minReps, 1));
  while (int(m.samplesMs.size()) < o.reps) {
    // One batch of back-to-back runs up to the next decision: the minimum
    // count, the next CI test, or as many runs as the time budget has room for
    // at the last run's pace.
    size_t have = m.samplesMs.size(), want = size_t(o.reps) - have;
    if (have < size_t(o.minReps)) {
      want = std::min(want, size_t(o.minReps) - have);
    } else {
      if (o.targetRelCI > 0) want = std::min(want, std::max<size_t>(1, nextCheck - have));
      double leftMs = std::max(0.0, o.maxSeconds * 1e3 - msSince(budgetStart));
      want = std::min(want, std::max<size_t>(1, size_t(leftMs / std::max(m.samplesMs.back(), 1e-3))));
    }
    auto r0 = Clock::now();
    TimedRuns runs = compiled->timeRuns(inputs, int(want));
    timedMs += msSince(r0);
    FRICTION_CHECK(runs.ms.size() == want, "backend " + o.backend + " timed " + std::to_string(runs.ms.size()) +
                                               " runs, asked for " + std::to_string(want));
    m.internalTiming = runs.internal;
    m.samplesMs.insert(m.samplesMs.end(), runs.ms.begin(), runs.ms.end());
    if (int(m.samplesMs.size()) < o.minReps) continue;
    if (o.targetRelCI > 0 && m.samplesMs.size() >= nextCheck) {
      nextCheck = std::max(m.samplesMs.size() + 1, size_t(double(m.samplesMs.size()) * 1.1));
      if (metrics::precisionReached(m.samplesMs, o.targetRelCI, size_t(o.minReps), o.seed, 500)) {
        m.stopReason = "ci";
        break;
      }
    }
    if (msSince(budgetStart) > o.maxSeconds * 1e3) {
      m.stopReason = "time";
      break;
    }
  }
  m.overheadMsPerRep = (msSince(budgetStart) - timedMs) / double(m.samplesMs.size());
  m.summary = metrics::summarize(m.samplesMs, so);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  m.peakRssKb = ru.ru_maxrss;
  m.profile = compiled->profile();
  return m;
}

}  // namespace friction::bench
