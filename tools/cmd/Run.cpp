#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "codegen/aot/Artifact.h"
#include "frontend/ModelSource.h"
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
  bool batchGiven = false, backendGiven = false;
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

// The batch the tensors in `dir` bind: dim 0 of the first file whose model input has a symbolic batch dim
// (nullopt when no input has one, or for an artifact, which keeps its own batch).
std::optional<int64_t> batchOfInputs(const std::string& model, const std::string& dir) {
  if (codegen::isArtifactPath(model)) return std::nullopt;
  std::unique_ptr<Graph> g = loadModel(model);
  for (size_t i = 0; i < g->inputs().size(); ++i) {
    const Shape& s = g->inputs()[i]->shape();
    if (!s.hasRank() || s.rank() == 0 || s[0].isStatic() || s[0].isUnknown()) continue;
    fs::path p = fs::path(dir) / ("input_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) return std::nullopt;  // readInputs says which file is missing
    Tensor t = onnxio::readTensorFile(p.string());
    FRICTION_CHECK(t.rank() > 0 && t.dim(0) > 0, "--inputs: '" + p.string() + "' has shape " + Shape::fromStatic(t.shape()).str() +
                                                     ", which binds no batch for input '" + g->inputs()[i]->name() + "'");
    return t.dim(0);
  }
  return std::nullopt;
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

void runModel(RunArgs a) {
  // Tensors given without --batch bind the symbolic batch themselves.
  if (!a.inputsDir.empty() && !a.batchGiven)
    if (auto b = batchOfInputs(a.model, a.inputsDir)) a.batch = *b, a.batchGiven = true;
  // An ahead-of-time artifact (`friction compile`) runs its own compiled code
  // (backend cpu, the default for it); another --backend runs its embedded graph.
  ResolvedModel m = resolveModel(a.model, {.batch = a.batch, .batchGiven = a.batchGiven, .pipeline = a.pipeline,
                                           .backend = a.backend, .backendGiven = a.backendGiven, .loadCode = true});
  const codegen::LoadedArtifact& loaded = m.code;
  bool artifactCode = loaded.artifact != nullptr;
  std::string backendName = artifactCode ? "cpu (aot)" : a.backend;
  const Graph* g = m.graph.get();
  int64_t batch = *m.batch;
  std::vector<Tensor> inputs = a.inputsDir.empty() ? seededInputs(*g, a.seed) : readInputs(*g, a.inputsDir);
  std::unique_ptr<CompiledModel> compiled = std::move(m.code.model);
  double compileMs = m.loadMs;
  if (!artifactCode) {
    auto backend = createBackend(m.backend);
    auto t0 = std::chrono::steady_clock::now();
    compiled = backend->compile(*g);
    compileMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  auto t1b = std::chrono::steady_clock::now();
  std::vector<Tensor> outputs = compiled->run(inputs);
  auto t2 = std::chrono::steady_clock::now();
  if (!a.outputsDir.empty()) {
    fs::create_directories(a.outputsDir);
    for (size_t i = 0; i < outputs.size(); ++i)
      onnxio::writeTensorFile((fs::path(a.outputsDir) / ("output_" + std::to_string(i) + ".pb")).string(), outputs[i],
                              g->outputs()[i]->name());
  }
  double runMs = std::chrono::duration<double, std::milli>(t2 - t1b).count();
  nlohmann::json j{{"model", a.model}, {"backend", backendName}, {"batch", batch}, {"compile_ms", compileMs}, {"run_ms", runMs}};
  if (artifactCode) {
    const codegen::CpuStats* st = codegen::artifactStats(*compiled);
    j["load"] = {{"open_ms", loaded.openMs}, {"graph_parse_ms", loaded.parseMs}, {"program_ms", loaded.programMs},
                 {"kernels_compiled", st ? st->kernelsCompiled : 0}, {"kernels_loaded", st ? st->kernelsLoaded : 0},
                 {"compiled_for", loaded.artifact->info().cpu}, {"friction_revision", loaded.artifact->info().revision}};
  }
  const std::string executor = compiled->description();  // what ran: kernels, fallbacks, an autoscheduler's refusals
  j["executor"] = executor;
  for (size_t i = 0; i < outputs.size(); ++i) j["outputs"].push_back(summary(g->outputs()[i]->name(), outputs[i]));
  if (a.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  if (artifactCode) {
    std::printf("%s on %s, batch %ld: load %.1f ms (open %.1f, graph parse %.1f, program %.1f; no MLIR/LLVM work), "
                "run %.1f ms (single run; use `friction bench` to measure)\n  %s\n",
                a.model.c_str(), backendName.c_str(), long(batch), compileMs, loaded.openMs, loaded.parseMs,
                loaded.programMs, runMs, executor.c_str());
  } else {
    std::printf("%s on %s, batch %ld: compile %.1f ms, run %.1f ms (single run; use `friction bench` to measure)\n",
                a.model.c_str(), a.backend.c_str(), long(batch), compileMs, runMs);
    if (!executor.empty()) std::printf("  %s\n", executor.c_str());
  }
  for (const auto& o : j["outputs"]) {
    std::cout << "  " << o["name"].get<std::string>() << " " << o["dtype"].get<std::string>() << o["shape"].dump()
              << "  min " << o["min"] << "  max " << o["max"] << "  mean " << o["mean"] << "\n    first " << o["first"].dump() << "\n";
  }
}

}  // namespace

void addRun(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "run a model once and print or save its outputs");
  cmd->add_option("model", args->model, "path to .onnx/.fir, zoo:ARCH?knobs, or an OUT.so from `friction compile`")->required();
  auto* backend = cmd->add_option("--backend", args->backend, "interp (reference), cpu, cuda, halide, or a vendor bridge (OUT.so: its compiled code; another backend runs its graph)");
  auto* batch = cmd->add_option("--batch", args->batch, "binds the symbolic batch dim")->check(Positive);
  cmd->add_option("--inputs", args->inputsDir, "folder with input_<i>.pb (TensorProto; their dim 0 binds the batch unless --batch is given); default: seeded random inputs");
  cmd->add_option("--outputs", args->outputsDir, "folder to write output_<i>.pb to");
  cmd->add_option("--seed", args->seed, "seed of the generated inputs");
  cmd->add_flag("--json", args->json, "machine-readable output");
  addPipelineOptions(cmd, args->pipeline);
  cmd->callback([args, batch, backend] {
    args->batchGiven = batch->count() > 0;
    args->backendGiven = backend->count() > 0;
    runModel(*args);
  });
}

}  // namespace friction::cli
