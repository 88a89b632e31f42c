#include "tools/cmd/Common.h"

#include <cstdio>
#include <iostream>

#include "codegen/aot/Artifact.h"
#include "frontend/ModelSource.h"
#include "ir/Error.h"
#include "ir/Specialize.h"

namespace friction::cli {

std::unique_ptr<Graph> loadForBatch(const std::string& spec, std::optional<int64_t> batch) {
  if (codegen::isArtifactPath(spec)) {
    // An ahead-of-time artifact (`friction compile`): its embedded, optimized, batch-bound graph.
    auto a = codegen::Artifact::open(spec);
    FRICTION_CHECK(!batch || *batch == a->info().batch, "'" + spec + "' was compiled for batch " +
                                                            std::to_string(a->info().batch) + ", not " +
                                                            std::to_string(*batch) +
                                                            " (compile the model again with --batch " +
                                                            std::to_string(*batch) + ")");
    return a->graph();
  }
  auto g = loadModel(spec);
  if (batch) bindInputDims(*g, batchBindings(*g, *batch));
  return g;
}

void addPipelineOptions(CLI::App* cmd, PipelineOptions& o) {
  auto* d = cmd->add_option("--disable", o.disable, "default pipeline without these passes")->delimiter(',');
  auto* on = cmd->add_option("--only", o.only, "only these passes (and their prerequisites)")->delimiter(',');
  auto* p = cmd->add_option("--passes", o.passes, "exactly these passes in this order; 'none' for no pass")->delimiter(',');
  d->excludes(on)->excludes(p);
  on->excludes(p);
}

std::unique_ptr<Graph> loadAndOptimize(const std::string& spec, std::optional<int64_t> batch, const PipelineOptions& options,
                                       const RunOptions& run, std::vector<PassRecord>* records) {
  if (codegen::isArtifactPath(spec)) {
    FRICTION_CHECK(options.disable.empty() && options.only.empty() && options.passes.empty(),
                   "'" + spec + "' is a compiled artifact: its passes were fixed by `friction compile` "
                   "(--disable/--only/--passes do not apply)");
    return loadForBatch(spec, batch);
  }
  std::vector<std::string> notes;
  std::vector<const PassInfo*> pipeline = buildPipeline(options, &notes);
  for (const auto& n : notes) std::cerr << "note: " << n << "\n";
  auto g = loadForBatch(spec, batch);
  auto recs = runPipeline(*g, pipeline, run);
  if (records) *records = std::move(recs);
  return g;
}

std::string humanCount(double v) {
  const char* units[] = {"", " K", " M", " G", " T"};
  int u = 0;
  while (v >= 1000 && u < 4) v /= 1000, u++;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f%s" : "%.0f%s", v, units[u]);
  return buf;
}

}  // namespace friction::cli
