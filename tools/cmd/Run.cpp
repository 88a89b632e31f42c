#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "frontend/onnx/TensorProto.h"
#include "ir/Error.h"
#include "runtime/Backend.h"
#include "runtime/Inputs.h"
#include "tools/cmd/Commands.h"
#include "tools/cmd/Common.h"

namespace fs = std::filesystem;

namespace friction::cli {
namespace {

struct RunArgs {
  std::string model, backend = "interp", inputsDir, outputsDir;
  int64_t batch = 1;
  uint64_t seed = 0;
  bool json = false;
  PipelineOptions pipeline;
};

std::vector<Tensor> readInputs(const Graph& g, const std::string& dir) {
  std::vector<Tensor> r;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    fs::path p = fs::path(dir) / ("input_" + std::to_string(i) + ".pb");
    FRICTION_CHECK(fs::exists(p), "--inputs: missing '" + p.string() + "' for input '" + g.inputs()[i]->name() + "'");
    r.push_back(onnxio::readTensorFile(p.string()));
  }
  return r;
}

nlohmann::json summary(const std::string& name, const Tensor& t) {
  std::vector<double> v = t.toDoubleVector();
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (double x : v) lo = std::min(lo, x), hi = std::max(hi, x), sum += x;
  std::vector<double> head(v.begin(), v.begin() + std::min<size_t>(v.size(), 8));
  return {{"name", name}, {"dtype", std::string(dtypeName(t.dtype()))}, {"shape", t.shape()},
          {"min", v.empty() ? 0 : lo}, {"max", v.empty() ? 0 : hi}, {"mean", v.empty() ? 0 : sum / double(v.size())},
          {"first", head}};
}

void runModel(const RunArgs& a) {
  auto g = loadAndOptimize(a.model, a.batch, a.pipeline);
  std::vector<Tensor> inputs = a.inputsDir.empty() ? seededInputs(*g, a.seed) : readInputs(*g, a.inputsDir);
  auto backend = createBackend(a.backend);
  auto t0 = std::chrono::steady_clock::now();
  auto compiled = backend->compile(*g);
  auto t1 = std::chrono::steady_clock::now();
  std::vector<Tensor> outputs = compiled->run(inputs);
  auto t2 = std::chrono::steady_clock::now();
  if (!a.outputsDir.empty()) {
    fs::create_directories(a.outputsDir);
    for (size_t i = 0; i < outputs.size(); ++i)
      onnxio::writeTensorFile((fs::path(a.outputsDir) / ("output_" + std::to_string(i) + ".pb")).string(), outputs[i],
                              g->outputs()[i]->name());
  }
  double compileMs = std::chrono::duration<double, std::milli>(t1 - t0).count();
  double runMs = std::chrono::duration<double, std::milli>(t2 - t1).count();
  nlohmann::json j{{"model", a.model}, {"backend", a.backend}, {"batch", a.batch}, {"compile_ms", compileMs}, {"run_ms", runMs}};
  for (size_t i = 0; i < outputs.size(); ++i) j["outputs"].push_back(summary(g->outputs()[i]->name(), outputs[i]));
  if (a.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("%s on %s, batch %ld: compile %.1f ms, run %.1f ms (single run; use `friction bench` to measure)\n",
              a.model.c_str(), a.backend.c_str(), long(a.batch), compileMs, runMs);
  for (const auto& o : j["outputs"]) {
    std::cout << "  " << o["name"].get<std::string>() << " " << o["dtype"].get<std::string>() << o["shape"].dump()
              << "  min " << o["min"] << "  max " << o["max"] << "  mean " << o["mean"] << "\n    first " << o["first"].dump() << "\n";
  }
}

}  // namespace

void addRun(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "run a model once and print or save its outputs");
  cmd->add_option("model", args->model, "path to .onnx/.fir or zoo:ARCH?knobs")->required();
  cmd->add_option("--backend", args->backend, "interp (reference), cpu, cuda, or a vendor bridge");
  cmd->add_option("--batch", args->batch, "binds the symbolic batch dim")->check(CLI::PositiveNumber);
  cmd->add_option("--inputs", args->inputsDir, "folder with input_<i>.pb (TensorProto); default: seeded random inputs");
  cmd->add_option("--outputs", args->outputsDir, "folder to write output_<i>.pb to");
  cmd->add_option("--seed", args->seed, "seed of the generated inputs");
  cmd->add_flag("--json", args->json, "machine-readable output");
  addPipelineOptions(cmd, args->pipeline);
  cmd->callback([args] { runModel(*args); });
}

}  // namespace friction::cli
