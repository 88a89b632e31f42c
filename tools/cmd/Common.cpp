#include "tools/cmd/Common.h"

#include <cstdio>
#include <iostream>
#include <random>

#include "frontend/ModelSource.h"
#include "ir/Error.h"
#include "ir/Specialize.h"

namespace friction::cli {

std::unique_ptr<Graph> loadForBatch(const std::string& spec, std::optional<int64_t> batch) {
  auto g = loadModel(spec);
  if (batch) bindInputDims(*g, batchBindings(*g, *batch));
  return g;
}

std::vector<Tensor> makeInputs(const Graph& graph, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<Tensor> inputs;
  for (const Value* in : graph.inputs()) {
    FRICTION_CHECK(in->shape().isStatic(), "input '" + in->name() + "' has shape " + in->shape().str() +
                                               ": only a symbolic batch at axis 0 can be bound (--batch); "
                                               "give the inputs with --inputs DIR");
    Tensor t(in->dtype(), in->shape().staticDims());
    if (isFloat(in->dtype())) {
      Tensor f(DType::F64, t.shape());
      for (int64_t i = 0; i < f.numel(); ++i) f.data<double>()[i] = u(rng);
      t = f.castTo(in->dtype());
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
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
  bool none = options.passes.size() == 1 && options.passes[0] == "none";
  std::vector<std::string> notes;
  std::vector<const PassInfo*> pipeline = none ? std::vector<const PassInfo*>{} : buildPipeline(options, &notes);
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
