// The measurement protocol (../shared/design.md, docs/metrics.md), shared by
// bench, ablate and sweep: compile once, warm up, repeat until the
// repetition count, the time budget, or the adaptive CI target is reached,
// and check the outputs against the reference interpreter.
#pragma once
#include <string>
#include <vector>

#include "benchmarks/metrics/Stats.h"
#include "ir/Graph.h"

namespace friction::bench {

struct MeasureOptions {
  std::string backend = "interp";
  int warmup = 3;
  int reps = 20;              // maximum repetitions
  int minReps = 5;            // adaptive stop never stops before this many
  double targetRelCI = 0;     // > 0: stop once the CI half-width / median is below this
  double maxSeconds = 60;     // time budget for the repetitions (at least minReps run)
  int threads = 0;            // > 0: OpenMP thread count for the run; recorded either way
  bool checkOutputs = true;   // compare with the interpreter on the unoptimized graph
  uint64_t seed = 0;          // inputs and bootstrap
};

struct Measurement {
  std::vector<double> samplesMs;  // one per repetition, in order
  metrics::Summary summary;       // median, p10, p90, bootstrap CI, unstable flag
  double compileMs = 0;
  int threads = 0;
  double maxAbsError = -1, maxRelError = -1;  // -1: not checked
  long peakRssKb = 0;             // process peak resident memory after the run
  std::string stopReason;         // "reps", "ci", "time"
  bool internalTiming = false;    // samples timed by the backend itself (bridges: transport excluded)
  double overheadMsPerRep = 0;    // harness time between timed regions (stopping rule, bookkeeping)
  std::string executor;           // the backend's description: vendor version and settings
  int64_t interpNodes = -1;       // CompiledModel::interpNodes(): nodes on the interpreter, -1 unknown
  std::string profile;            // the backend's per-step profile (empty unless it was asked for one)
};

// Measures `optimized` (a graph with a bound batch); `reference`, when given,
// is the unoptimized graph whose interpreter outputs are the oracle.
Measurement measure(const Graph& optimized, const Graph* reference, const MeasureOptions& options);

}  // namespace friction::bench
