// Helpers shared by CLI commands.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "benchmarks/Protocol.h"
#include "benchmarks/ResultsStore.h"
#include "benchmarks/Rounds.h"
#include "codegen/aot/Artifact.h"
#include "ir/Graph.h"
#include "passes/PassManager.h"

namespace friction::cli {

// Checks of numeric options with messages that say what was wrong (CLI11's own PositiveNumber prints
// "Value 0 not in range 0.000000 to 1.797693e+308").
extern const CLI::Validator Positive;     // > 0
extern const CLI::Validator NonNegative;  // >= 0

// "1.23 G" style numbers.
std::string humanCount(double v);

// --disable/--only/--passes (comma-separated pass names; `--passes none`
// runs no pass), shared by opt, run, bench and later commands.
void addPipelineOptions(CLI::App* cmd, PipelineOptions& options);

// --rounds/--min-rounds/--block-ms/--block-warmup-ms/--order/--repeat-slow-rounds and, with `budget`, --reps/
// --target-ci/--max-seconds: the interleaved rounds of ablate and bench --compare (benchmarks/Rounds.h). `bench`
// has its own budget options (one burst) and passes budget = false.
void addRoundsOptions(CLI::App* cmd, bench::RoundsOptions& options, bool budget = true);

// Times prepared cells together in interleaved rounds (bench::measureInRounds) with progress on stderr, each
// line starting `progress`, and warns when the machine was contended.
// The thread count to measure with: `requested` when given (> 0), else as many as the calibration finds free
// (bench::freeCores over OpenMP's default), with a note on stderr when other processes hold some cores.
int threadsToMeasureWith(int requested);

bench::RoundsResult measureGroup(const std::vector<bench::PreparedCell*>& cells, bench::RoundsOptions options,
                                 const std::string& group, const std::string& progress);
// A measurement as `bench --json` prints it (threads, compile_ms, samples_ms, median_ms, ci95_ms, ...).
nlohmann::json measurementJson(const bench::Measurement& m);

// Stores a group's rows and its rounds in one transaction: a group is stored whole or not at all.
void storeGroup(bench::ResultsStore& store, const std::vector<bench::CellRecord>& rows,
                const bench::RoundsResult& rounds, const std::string& group);

// What a command asks of MODEL: an .onnx or .fir path, a zoo spec, or an ahead-of-time artifact (OUT.so from
// `friction compile`: its embedded graph, already optimized and bound to the batch it was compiled for).
struct ModelRequest {
  // Bound to the model's symbolic batch dim; nullopt keeps it symbolic. An artifact keeps its own batch and
  // refuses another one that was given (a batch not given is a default it replaces).
  std::optional<int64_t> batch = 1;
  bool batchGiven = true;
  // The passes to run (none without); an artifact's were fixed when it was compiled, so it refuses any.
  std::optional<PipelineOptions> pipeline;
  RunOptions run;
  // The backend to run the model on; an artifact runs its own compiled code unless another one is given.
  std::string backend = "interp";
  bool backendGiven = true;
  bool reference = false;  // also load the graph outputs are checked against
  bool loadCode = false;   // an artifact running its own code: load and instantiate it now (ResolvedModel::code)
};

struct ResolvedModel {
  std::optional<int64_t> batch;      // the bound batch (an artifact: the one it was compiled for)
  std::unique_ptr<Graph> graph;      // optimized and bound (an artifact: its embedded graph)
  std::vector<PassRecord> records;   // the passes that ran on it
  std::string backend;               // the spec to run `graph` on; an artifact's own code: cpu?aot=OUT.so
  std::unique_ptr<Graph> reference;  // with `reference`: the unoptimized model (an artifact: its graph again)
  std::string referenceName;         // what `reference` is, in words
  // With `loadCode`, for an artifact running its own code: the artifact, the model instantiated over `graph`,
  // and the load's phases; loadMs is the whole load. Declared after `graph`, so destroyed before it.
  codegen::LoadedArtifact code;
  double loadMs = 0;
};

// Loads MODEL as `request` says: binds the batch and runs the pipeline (notes from its resolution go to
// stderr), or opens the artifact. Throws Error for what an artifact refuses.
ResolvedModel resolveModel(const std::string& model, const ModelRequest& request);

// resolveModel's graph: MODEL bound to `batch` (an artifact: checked against it) ...
std::unique_ptr<Graph> loadForBatch(const std::string& model, std::optional<int64_t> batch);
// ... and optimized by the pipeline; `records` receives the passes that ran.
std::unique_ptr<Graph> loadAndOptimize(const std::string& model, std::optional<int64_t> batch,
                                       const PipelineOptions& options, const RunOptions& run = {},
                                       std::vector<PassRecord>* records = nullptr);

}  // namespace friction::cli
