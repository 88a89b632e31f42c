// Helpers shared by CLI commands.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/Graph.h"

namespace friction::cli {

// Loads MODEL and, when the graph has a symbolic batch, binds it to `batch`
// (nullopt keeps it symbolic). MODEL may be an ahead-of-time artifact
// (OUT.so from `friction compile`): its embedded graph, already optimized and
// bound to the compiled batch (another `batch` is an error).
std::unique_ptr<Graph> loadForBatch(const std::string& spec, std::optional<int64_t> batch);
// "1.23 G" style numbers.
std::string humanCount(double v);

}  // namespace friction::cli

#include <CLI/CLI.hpp>

#include "passes/PassManager.h"

namespace friction::cli {

// --disable/--only/--passes (comma-separated pass names; `--passes none`
// runs no pass), shared by opt, run, bench and later commands.
void addPipelineOptions(CLI::App* cmd, PipelineOptions& options);
// Loads MODEL, binds the batch, and runs the selected pipeline. Notes from
// the pipeline's resolution go to stderr.
std::unique_ptr<Graph> loadAndOptimize(const std::string& spec, std::optional<int64_t> batch, const PipelineOptions& options,
                                       const RunOptions& run = {}, std::vector<PassRecord>* records = nullptr);

}  // namespace friction::cli
