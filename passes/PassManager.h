// Builds a pipeline from the user's switches and runs it with instruments:
// per-pass wall time, graph statistics before/after, IR dumps, verification.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "passes/Pass.h"

namespace friction {

struct PipelineOptions {
  std::vector<std::string> disable;  // default pipeline minus these
  std::vector<std::string> only;     // just these (plus prerequisites), in default order
  std::vector<std::string> passes;   // exactly these, in this order; {"none"}: no pass
};

// Resolves the switches into an ordered list of passes. Throws Error on
// unknown names, conflicting switches, or a disabled prerequisite.
// `notes` receives what the resolution added ("fuse-x needs y: added").
std::vector<const PassInfo*> buildPipeline(const PipelineOptions& options, std::vector<std::string>* notes = nullptr);
// The same over another registry (tests of the resolution rules).
std::vector<const PassInfo*> buildPipelineFrom(const std::vector<PassInfo>& registry, const PipelineOptions& options,
                                               std::vector<std::string>* notes = nullptr);

// Structural statistics of a graph, before and after each pass.
struct GraphStats {
  int64_t nodes = 0;            // top-level nodes
  int64_t kernels = 0;          // nodes other than Constant: each becomes one kernel (a Fused region is one)
  int64_t fusedRegions = 0;     // Fused nodes
  int64_t intermediateBytes = 0;  // bytes of all non-output node results (static shapes only)
  int64_t parameterBytes = 0;
};
GraphStats graphStats(const Graph& g);

struct PassRecord {
  std::string name;
  double millis = 0;
  GraphStats before, after;
  std::map<std::string, int64_t> stats;
};

struct RunOptions {
  bool verifyEach = false;            // run the verifier after every pass
  std::string dumpDir;                // write <k>-<pass>.fir after each pass
  std::function<void(const PassRecord&, const Graph&)> afterPass;  // e.g. --print-ir-after-all
};

std::vector<PassRecord> runPipeline(Graph& g, const std::vector<const PassInfo*>& pipeline, const RunOptions& options = {});

}  // namespace friction
