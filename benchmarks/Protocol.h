// The measurement protocol (../shared/design.md, docs/metrics.md), shared by
// bench, ablate and sweep. A cell is prepared first (compiled, warmed up, its
// outputs checked against the reference interpreter); then it is timed,
// either alone in one burst (`bench` of one configuration: repeat until the
// repetition count, the time budget, or the adaptive CI target is reached)
// or with the cells it will be compared with in interleaved rounds
// (benchmarks/Rounds.h: ablate, sweep, bench --compare). Nothing else runs
// once timing has begun: checks and compiles of every cell come first.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/Rounds.h"
#include "benchmarks/metrics/Stats.h"
#include "ir/Graph.h"
#include "runtime/Backend.h"

namespace friction::bench {

// Outputs whose largest error, relative to the reference's largest |value|, exceeds this differ from the
// interpreter: the cell timed a program that computes something else (a backend bug, or a reduced precision
// asked for, such as openvino?precision=bf16). Such cells are kept and flagged (bench, sweep, report), not
// dropped. Ten times the tests' 1e-4: f32 kernels that reassociate sums stay far below it.
constexpr double kOutputsDifferRelError = 1e-3;

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
  // Measured in interleaved rounds: the sample count of each kept round (samplesMs holds the rounds' blocks
  // one after another), the comparison group the rounds were shared with, and the median contention of the
  // rounds' calibration (Rounds.h). Empty, "" and 0 for a single burst.
  std::vector<size_t> roundSizes;
  std::string group;
  double contention = 0;

  bool outputsDiffer() const { return maxRelError > kOutputsDifferRelError; }  // a NaN where none belongs: inf
};

// True when a and b were measured in the same interleaved rounds (same group, same round count, at least
// three rounds), so they can be compared round by round (metrics::pairedRatio); otherwise only their samples
// can be compared, independently (a single burst, or rounds too few for a CI over rounds).
constexpr size_t kMinPairedRounds = 3;
inline bool measuredTogether(const Measurement& a, const Measurement& b) {
  return !a.group.empty() && a.group == b.group && a.roundSizes.size() == b.roundSizes.size() &&
         a.roundSizes.size() >= kMinPairedRounds;
}

// A cell ready to time: compiled, warmed up and checked; the model stays resident (a bridge's worker alive)
// until the cell is destroyed. `m` holds what is known before timing (compile time, executor, errors).
struct PreparedCell {
  std::string label;
  std::string cluster;  // cells of one cluster are timed back to back in each round (Contender::cluster)
  const Graph* graph = nullptr;  // what was compiled (it outlives the cell), to prepare it anew (reincarnate)
  MeasureOptions options;
  std::vector<Tensor> inputs;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<CompiledModel> compiled;
  Measurement m;
};

// The interpreter's outputs of the unoptimized `reference` on the inputs every cell of `optimized`'s
// signature is measured with (seededInputs(optimized, seed)): computed once, shared by a group's checks.
std::vector<Tensor> referenceOutputs(const Graph& reference, const Graph& optimized, uint64_t seed);

// Compiles `optimized` (a graph with a bound batch; it must outlive the cell) on options.backend, runs the
// warm-up, and compares the outputs with `expected` (nullptr or options.checkOutputs off: not checked).
std::unique_ptr<PreparedCell> prepare(const Graph& optimized, const std::vector<Tensor>* expected,
                                      const MeasureOptions& options, const std::string& label = "");

// Times a prepared cell alone, in one burst.
void measureBurst(PreparedCell& cell);

// Compiles the cell's graph again and warms the new program up, then lets the old one go (a bridge's worker
// process ends): the program's buffers land elsewhere in memory (Contender::reincarnate).
void reincarnate(PreparedCell& cell);

// Times the cells together in interleaved rounds and fills each cell's measurement from the kept rounds:
// its samples, summary (median of all samples, CI by resampling whole rounds; unstable when its relative
// half-width exceeds 5%), stop reason, round sizes and contention; `group` names the comparison. The cells
// must share a thread setting.
RoundsResult measureInRounds(const std::vector<PreparedCell*>& cells, const RoundsOptions& options,
                             const std::string& group);

// prepare + measureBurst: `reference`, when given, is the unoptimized graph whose interpreter outputs are the
// oracle.
Measurement measure(const Graph& optimized, const Graph* reference, const MeasureOptions& options);

// Every phase of the protocol as it happens ("compile LABEL", "check LABEL", "rounds begin", "block LABEL",
// "rounds end"), for tests that check nothing else runs inside a measurement; empty: off.
void setProtocolTrace(std::function<void(const std::string& event)> trace);

}  // namespace friction::bench
