#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "ir/OpRegistry.h"
#include "ir/TextFormat.h"
#include "tools/cmd/Commands.h"
#include "tools/cmd/Common.h"

namespace friction::cli {
namespace {

struct InspectArgs {
  std::string model;
  int64_t batch = 1;
  bool json = false, ir = false;
};

nlohmann::json valueJson(const Value* v) {
  return {{"name", v->name()}, {"dtype", std::string(dtypeName(v->dtype()))}, {"shape", v->shape().str()}};
}

void inspect(InspectArgs a) {
  // An artifact (friction compile) is bound to its compiled batch: inspect that, whatever --batch says.
  ResolvedModel model = resolveModel(a.model, {.batch = a.batch, .batchGiven = false});
  const Graph* g = model.graph.get();
  a.batch = *model.batch;
  if (a.ir) {
    std::cout << printGraph(*g, PrintOptions{.maxConstantBytes = 64});
    return;
  }
  struct OpStats {
    int64_t count = 0, flops = 0;
  };
  std::map<std::string, OpStats> ops;
  int64_t totalFlops = 0, params = 0;
  for (const auto& n : g->nodes()) {
    int64_t f = nodeFlops(*n);
    ops[n->op()].count++;
    ops[n->op()].flops += f;
    totalFlops += f;
  }
  for (const Value* v : g->initializers()) params += v->constant().numel();

  if (a.json) {
    nlohmann::json j;
    j["model"] = a.model;
    j["graph"] = g->name();
    j["batch"] = a.batch;
    for (const Value* v : g->inputs()) j["inputs"].push_back(valueJson(v));
    for (const Value* v : g->outputs()) j["outputs"].push_back(valueJson(v));
    j["nodes"] = g->nodes().size();
    j["parameters"] = params;
    j["parameter_bytes"] = g->parameterBytes();
    j["flops"] = totalFlops;
    for (const auto& [op, s] : ops) j["ops"][op] = {{"count", s.count}, {"flops", s.flops}};
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << "model   " << a.model << "  (graph '" << g->name() << "', batch " << a.batch << ")\n";
  for (const Value* v : g->inputs()) std::cout << "input   " << v->name() << " : " << v->type().str() << "\n";
  for (const Value* v : g->outputs()) std::cout << "output  " << v->name() << " : " << v->type().str() << "\n";
  std::cout << "nodes   " << g->nodes().size() << "\n"
            << "params  " << humanCount(double(params)) << " (" << humanCount(double(g->parameterBytes())) << "B)\n"
            << "FLOPs   " << humanCount(double(totalFlops)) << "\n\n";
  std::printf("%-24s %8s %14s\n", "op", "count", "FLOPs");
  for (const auto& [op, s] : ops) std::printf("%-24s %8ld %14s\n", op.c_str(), long(s.count), humanCount(double(s.flops)).c_str());
}

}  // namespace

void addInspect(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  auto* cmd = app.add_subcommand("inspect", "ops, shapes, parameters, FLOPs");
  cmd->add_option("model", args->model, "path to .onnx/.fir or zoo:ARCH?knobs")->required();
  cmd->add_option("--batch", args->batch, "binds the symbolic batch dim (FLOPs are per this batch)")->check(Positive);
  cmd->add_flag("--json", args->json, "machine-readable output");
  cmd->add_flag("--ir", args->ir, "print the graph as text IR (constants over 64 bytes elided)");
  cmd->callback([args] { inspect(*args); });
}

}  // namespace friction::cli
