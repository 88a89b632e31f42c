#include "benchmarks/Protocol.h"

#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>

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

std::function<void(const std::string&)> gTrace;
std::mutex gTraceMutex;  // bridges' cells are prepared anew from several threads at once (runRounds)
void trace(const std::string& event) {
  std::lock_guard<std::mutex> lock(gTraceMutex);
  if (gTrace) gTrace(event);
}

void recordProcessState(PreparedCell& c) {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  c.m.peakRssKb = ru.ru_maxrss;
  c.m.profile = c.compiled->profile();
}

// At least one untimed run; returns the last one's outputs.
std::vector<Tensor> warmUp(CompiledModel& compiled, const std::vector<Tensor>& inputs, int runs) {
  std::vector<Tensor> outputs;
  for (int i = 0; i < std::max(runs, 1); ++i) outputs = compiled.run(inputs);
  return outputs;
}

}  // namespace

void setProtocolTrace(std::function<void(const std::string& event)> f) {
  std::lock_guard<std::mutex> lock(gTraceMutex);
  gTrace = std::move(f);
}

std::vector<Tensor> referenceOutputs(const Graph& reference, const Graph& optimized, uint64_t seed) {
  trace("check reference");
  return interp::run(reference, seededInputs(optimized, seed));
}

std::unique_ptr<PreparedCell> prepare(const Graph& optimized, const std::vector<Tensor>* expected,
                                      const MeasureOptions& o, const std::string& label) {
  auto c = std::make_unique<PreparedCell>();
  c->label = label.empty() ? o.backend : label;
  c->graph = &optimized;
  c->options = o;
  Measurement& m = c->m;
  if (o.threads > 0) omp_set_num_threads(o.threads);
  m.threads = omp_get_max_threads();
  c->inputs = seededInputs(optimized, o.seed);

  trace("compile " + c->label);
  c->backend = createBackend(o.backend);
  auto t0 = Clock::now();
  c->compiled = c->backend->compile(optimized);
  m.compileMs = msSince(t0);
  m.executor = c->compiled->description();
  m.interpNodes = c->compiled->interpNodes();

  std::vector<Tensor> outputs = warmUp(*c->compiled, c->inputs, o.warmup);
  if (o.checkOutputs && expected) {
    trace("check " + c->label);
    compareOutputs(outputs, *expected, m);
    if (m.outputsDiffer())  // kept and measured, but never silently: bench, ablate and sweep all come here
      std::fprintf(stderr,
                   "warning: %s: outputs differ from the interpreter's (max rel error %.3g > %.0e): its timings are "
                   "of a program that computes something else\n",
                   c->label.c_str(), m.maxRelError, kOutputsDifferRelError);
  }
  return c;
}

void measureBurst(PreparedCell& c) {
  const MeasureOptions& o = c.options;
  Measurement& m = c.m;
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
    TimedRuns runs = c.compiled->timeRuns(c.inputs, int(want));
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
  recordProcessState(c);
}

void reincarnate(PreparedCell& c) {
  trace("reincarnate " + c.label);
  std::unique_ptr<CompiledModel> next = c.backend->compile(*c.graph);  // before the old one's memory is free
  warmUp(*next, c.inputs, c.options.warmup);
  c.compiled = std::move(next);
}

RoundsResult measureInRounds(const std::vector<PreparedCell*>& cells, const RoundsOptions& options,
                             const std::string& group) {
  FRICTION_CHECK(!cells.empty(), "nothing to measure");
  std::vector<Contender> contenders;
  for (PreparedCell* c : cells) {
    FRICTION_CHECK(c->m.threads == cells[0]->m.threads, "cells measured together must share a thread count");
    contenders.push_back({c->label, [c](int n) {
                            trace("block " + c->label);
                            TimedRuns runs = c->compiled->timeRuns(c->inputs, n);
                            c->m.internalTiming = runs.internal;
                            return runs.ms;
                          },
                          c->compiled->leavesCoresBusy(), [c] { reincarnate(*c); },
                          [c] { return c->compiled->park(); }, c->compiled->runsApart(), c->cluster});
  }
  RoundsOptions ro = options;
  if (ro.threads <= 0) ro.threads = cells[0]->m.threads;
  trace("rounds begin");
  RoundsResult r = runRounds(contenders, ro);
  trace("rounds end");
  for (size_t k = 0; k < cells.size(); ++k) {
    Measurement& m = cells[k]->m;
    m.samplesMs = r.keptSamples(k);
    m.roundSizes = r.keptBlockSizes(k);
    m.group = group;
    m.contention = r.medianContention;
    m.stopReason = r.stopReason;
    metrics::SummaryOptions so;
    so.seed = options.seed;
    // Resampling whole rounds keeps drift between rounds in the interval, which resampling single runs hides.
    // A contended machine makes a cell consistently slow with a narrow CI: that marks it unstable too.
    metrics::Interval ci = metrics::roundBootstrapMedianCI(m.samplesMs, m.roundSizes, so.seed);
    m.summary = metrics::summarizeWithCI(m.samplesMs, ci, so);
    m.summary.unstable = m.summary.unstable || r.contended;
    recordProcessState(*cells[k]);
  }
  return r;
}

Measurement measure(const Graph& optimized, const Graph* reference, const MeasureOptions& o) {
  std::vector<Tensor> expected;
  if (o.checkOutputs && reference) expected = referenceOutputs(*reference, optimized, o.seed);
  auto cell = prepare(optimized, o.checkOutputs && reference ? &expected : nullptr, o);
  measureBurst(*cell);
  return cell->m;
}

}  // namespace friction::bench
