// `friction compile MODEL -o OUT.so`: ahead-of-time compilation for the cpu
// backend (codegen/aot/Artifact.h). `friction run OUT.so` / `friction bench OUT.so`
// load the artifact without recompiling.
// `friction compile MODEL --backend cuda --emit-ptx DIR`: every distinct
// kernel through the cuda pipeline to PTX (codegen/cuda/GpuCompile.h), one
// file each and kernels.json with their launches. `--backend cuda -o DIR`:
// the plan the cuda backend runs (runtime/cuda/GpuPlan.h), which
// `friction-cuda-run DIR` loads and runs on a GPU machine; with --reference,
// seeded inputs and the interpreter's outputs go beside it.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "codegen/aot/Artifact.h"
#include "benchmarks/Protocol.h"
#include "codegen/cuda/GpuCompile.h"
#include "ir/Error.h"
#include "ir/Shell.h"
#include "runtime/Inputs.h"
#include "tools/cmd/Commands.h"
#include "tools/cmd/Common.h"

namespace friction::cli {
namespace {

struct CompileArgs {
  std::string model, output, ukernels = "on", backend = "cpu", emitPtx, gpuChip = "sm_90";
  int64_t gpuBlock = 256, gpuThreadOutputs = codegen::CodegenOptions{}.gpuThreadOutputs,
          gpuThreadColumns = codegen::CodegenOptions{}.gpuThreadColumns,
          gpuSharedColumns = codegen::CodegenOptions{}.gpuSharedColumns,
          gpuCoarsenMinThreads = codegen::CodegenOptions{}.gpuCoarsenMinThreads;
  std::vector<std::string> stages;
  bool ptxas = false, reference = false;
  int64_t batch = 1;
  bool json = false;
  PipelineOptions pipeline;
};

// Seeded inputs (seededInputs, seed 0) and the interpreter's outputs of the unoptimized model, as raw
// little-endian arrays input_<i>.bin and expected_<o>.bin: what friction-cuda-run checks a plan against.
void writeReference(const std::string& model, int64_t batch, const Graph& optimized, const std::string& dir) {
  auto reference = loadForBatch(model, batch);
  std::vector<Tensor> inputs = seededInputs(optimized, 0);
  std::vector<Tensor> expected = bench::referenceOutputs(*reference, optimized, 0);
  auto bytes = [](const Tensor& t) { return std::string(static_cast<const char*>(t.rawData()), t.byteSize()); };
  for (size_t i = 0; i < inputs.size(); ++i) writeFile(dir + "/input_" + std::to_string(i) + ".bin", bytes(inputs[i]));
  for (size_t o = 0; o < expected.size(); ++o) writeFile(dir + "/expected_" + std::to_string(o) + ".bin", bytes(expected[o]));
}

void compileForCuda(const CompileArgs& a) {
  FRICTION_CHECK(!a.emitPtx.empty() || !a.output.empty(), "compile: --backend cuda needs -o DIR (the plan the cuda "
                                                          "backend runs) or --emit-ptx DIR (the kernels), or both");
  FRICTION_CHECK(!a.reference || !a.output.empty(), "compile: --reference writes beside the plan: it needs -o DIR");
  FRICTION_CHECK(a.ukernels == "on", "compile: --ukernels is a cpu option (the cuda target generates every kernel)");
  FRICTION_CHECK(!codegen::isArtifactPath(a.model), "compile: '" + a.model + "' is a cpu artifact, not a model");
  auto t0 = std::chrono::steady_clock::now();
  auto g = loadAndOptimize(a.model, a.batch, a.pipeline);
  double passesMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  codegen::CodegenOptions o;
  o.gpuChip = a.gpuChip;
  o.gpuBlockSize = a.gpuBlock;
  o.gpuCoarsenMinThreads = a.gpuCoarsenMinThreads;
  if (a.gpuThreadOutputs == 0) o.set("gpu-coarsen", "off");
  else o.gpuThreadOutputs = codegen::parseThreadOutputs("compile", "--gpu-thread-outputs", std::to_string(a.gpuThreadOutputs));
  o.gpuThreadColumns = codegen::parseThreadOutputs("compile", "--gpu-thread-columns", std::to_string(a.gpuThreadColumns));
  o.target = codegen::Target::Cuda;
  for (const std::string& setting : a.stages) o.setSwitch(setting);
  o.gpuSharedColumns = codegen::parseThreadOutputs("compile", "--gpu-shared-columns", std::to_string(a.gpuSharedColumns));
  codegen::GpuCompileReport r = codegen::compileForGpu(*g, o);
  if (!a.emitPtx.empty()) codegen::writePtxFolder(r, a.emitPtx);
  if (!a.output.empty()) {
    FRICTION_CHECK(r.planError.empty(), "compile: " + r.planError);
    gpu::writePlan(r.plan, a.output);
    if (a.reference) writeReference(a.model, a.batch, *g, a.output);
  }
  std::string ptxas = a.ptxas ? codegen::findPtxas() : "";
  FRICTION_CHECK(!a.ptxas || !ptxas.empty(), "compile: --ptxas: no ptxas found (CUDA_HOME/bin, /usr/local/cuda/bin, PATH)");
  nlohmann::json kernels = nlohmann::json::array();
  int64_t refused = 0;
  for (const auto& k : r.kernels) {
    nlohmann::json j{{"label", k.label}, {"calls", k.calls}, {"launches", k.code.launches.size()},
                     {"ptx_bytes", k.code.ptx.size()}};
    if (!k.error.empty()) j["error"] = k.error;
    if (!ptxas.empty() && k.error.empty()) {
      codegen::PtxasResult v = codegen::runPtxas(ptxas, k.code.ptx, a.gpuChip);
      j["ptxas"] = v.ok ? "ok" : v.message;
      j["registers"] = v.registers;
      refused += !v.ok;
    }
    kernels.push_back(j);
  }
  double totalMs = passesMs + r.times.totalMs();
  if (a.json) {
    nlohmann::json j{{"model", a.model},         {"backend", "cuda"},           {"chip", a.gpuChip},
                     {"batch", a.batch},         {"emit_ptx", a.emitPtx},       {"output", a.output},
                     {"kernels", kernels},
                     {"kernel_calls", r.kernelCalls}, {"launches", r.launches}, {"failed_kernels", r.failed()},
                     {"host_steps", r.hostSteps}, {"views", r.views},
                     {"phases_ms", {{"load_and_passes", passesMs}, {"build", r.times.buildMs}, {"lower", r.times.lowerMs}}},
                     {"total_ms", totalMs}};
    if (!ptxas.empty()) j["ptxas_refused"] = refused;
    if (r.planError.empty())
      j["plan"] = {{"calls", r.plan.calls.size()},
                   {"arena_bytes", r.plan.arenaBytes},
                   {"intermediate_bytes", r.plan.intermediateBytes},
                   {"weights_bytes", r.plan.weights.size()},
                   {"bytes_between_kernels", r.plan.bytesBetweenKernels()}};
    else
      j["plan_error"] = r.planError;
    std::cout << j.dump(2) << "\n";
  } else {
    int64_t host = 0;
    for (const auto& [what, n] : r.hostSteps) host += n;
    std::printf("wrote %s: %zu kernels as PTX for %s (%ld failed), %ld kernel calls = %ld launches a run, batch %ld\n",
                (a.output.empty() ? a.emitPtx : a.output).c_str(), r.kernels.size(), a.gpuChip.c_str(), long(r.failed()), long(r.kernelCalls),
                long(r.launches), long(a.batch));
    for (const auto& k : r.kernels)
      if (!k.error.empty()) std::printf("  failed: %s: %s\n", k.label.c_str(), k.error.c_str());
    if (host) {
      std::printf("  %ld steps have no GPU kernel yet:", long(host));
      for (const auto& [what, n] : r.hostSteps) std::printf(" %s x%ld;", what.c_str(), long(n));
      std::printf("\n");
    }
    if (r.planError.empty())
      std::printf("  plan: arena %.1f MB (intermediates %.1f MB, weights %.1f MB), %.1f MB moved between kernels a run\n",
                  double(r.plan.arenaBytes) / 1e6, double(r.plan.intermediateBytes) / 1e6, double(r.plan.weights.size()) / 1e6,
                  double(r.plan.bytesBetweenKernels()) / 1e6);
    if (!ptxas.empty()) std::printf("  ptxas -arch=%s: %ld of %zu refused\n", a.gpuChip.c_str(), long(refused), r.kernels.size());
    std::printf("  load+passes %.0f ms, build %.0f ms, lower to PTX %.0f ms; total %.0f ms\n", passesMs, r.times.buildMs,
                r.times.lowerMs, totalMs);
  }
  FRICTION_CHECK(refused == 0, "compile: ptxas refused " + std::to_string(refused) + " kernels");
}

void compileModel(const CompileArgs& a) {
  if (a.backend == "cuda") return compileForCuda(a);
  FRICTION_CHECK(a.emitPtx.empty(), "compile: --emit-ptx needs --backend cuda");
  FRICTION_CHECK(!a.reference, "compile: --reference needs --backend cuda");
  FRICTION_CHECK(!a.output.empty(), "compile: -o OUT.so is required for the cpu backend");
  FRICTION_CHECK(codegen::isArtifactPath(a.output), "compile: the output must be a shared library path ending in .so, got '" +
                                                        a.output + "'");
  FRICTION_CHECK(!codegen::isArtifactPath(a.model), "compile: '" + a.model + "' is already a compiled artifact");
  auto t0 = std::chrono::steady_clock::now();
  std::vector<PassRecord> records;
  auto g = loadAndOptimize(a.model, a.batch, a.pipeline, {}, &records);
  double passesMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  codegen::AotCompileOptions o;
  o.model = a.model;
  o.batch = a.batch;
  o.codegen.set("ukernels", a.ukernels);
  for (const auto& r : records) o.passes.push_back(r.name);
  codegen::AotCompileReport r = codegen::compileArtifact(*g, a.output, o);
  if (a.json) {
    nlohmann::json j{{"model", a.model},          {"output", a.output},        {"batch", a.batch},
                     {"passes", o.passes},        {"kernels", r.kernels},      {"failed_kernels", r.failedKernels},
                     {"bytes", r.bytes},          {"graph_bytes", r.graphBytes}, {"cpu", r.cpu},
                     {"phases_ms", {{"load_and_passes", passesMs}, {"program", r.programMs}, {"build", r.buildMs},
                                    {"lower", r.lowerMs}, {"object", r.objectMs}, {"link", r.linkMs}}},
                     {"total_ms", passesMs + r.totalMs}};
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("wrote %s: %.1f MB (graph %.1f MB), %ld kernels%s, batch %ld, for %s\n", a.output.c_str(),
              double(r.bytes) / 1e6, double(r.graphBytes) / 1e6, long(r.kernels),
              r.failedKernels ? (" (" + std::to_string(r.failedKernels) + " failed: interp)").c_str() : "",
              long(a.batch), r.cpu.c_str());
  std::printf("  load+passes %.0f ms, program %.0f ms, build %.0f ms, lower %.0f ms, LLVM/object %.0f ms, link %.0f ms; "
              "total %.0f ms\n",
              passesMs, r.programMs, r.buildMs, r.lowerMs, r.objectMs, r.linkMs, passesMs + r.totalMs);
}

}  // namespace

void addCompile(CLI::App& app) {
  auto args = std::make_shared<CompileArgs>();
  auto* cmd = app.add_subcommand("compile", "compile a model ahead of time: for the cpu backend into one shared library, "
                                            "for cuda into PTX");
  cmd->add_option("model", args->model, "path to .onnx/.fir or zoo:ARCH?knobs")->required();
  cmd->add_option("-o,--output", args->output, "cpu: OUT.so, the artifact (run it with `friction run OUT.so`); cuda: DIR, "
                                               "the plan the GPU runs (run it with `friction-cuda-run DIR`)");
  cmd->add_option("--backend", args->backend, "cpu (default) or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--emit-ptx", args->emitPtx, "cuda: write DIR/<kernel>.ptx per distinct kernel and DIR/kernels.json");
  cmd->add_option("--gpu-chip", args->gpuChip, "cuda: the GPU architecture the PTX is for")
      ->check(CLI::IsMember(codegen::kGpuChips));
  cmd->add_option("--gpu-block", args->gpuBlock, "cuda: threads per block of the flattened loop nests")
      ->check(CLI::Range(int64_t(1), int64_t(1024)));
  cmd->add_option("--gpu-thread-outputs", args->gpuThreadOutputs,
                  "cuda: the most outputs of a contraction one thread computes, its accumulators in registers (a power "
                  "of 2; 0: the gpu-coarsen stage off, one output per thread read and written at every reduction step)");
  cmd->add_option("--gpu-thread-columns", args->gpuThreadColumns,
                  "cuda: gpu-coarsen's outputs along the dim consecutive threads step, times --gpu-thread-outputs (a "
                  "power of 2; 1: none)");
  cmd->add_option("--gpu-shared-columns", args->gpuSharedColumns,
                  "cuda: a thread's outputs along the dim consecutive threads step in gpu-shared's tiles, times "
                  "--gpu-thread-outputs (a power of 2)");
  cmd->add_option("--gpu-coarsen-min-threads", args->gpuCoarsenMinThreads,
                  "cuda: gpu-coarsen leaves a contraction one output per thread where coarsening would leave fewer "
                  "threads than this")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 30));
  cmd->add_option("--stage", args->stages,
                  "cuda: NAME=on|off switches a codegen stage (docs/codegen.md's table: gpu-shared, gpu-coarsen, "
                  "contract, approximate)")
      ->delimiter(',');
  cmd->add_flag("--ptxas", args->ptxas, "cuda: assemble every kernel with the toolkit's ptxas (fails when it refuses one); "
                                        "reports registers per kernel");
  cmd->add_flag("--reference", args->reference, "cuda: also write seeded inputs and the interpreter's outputs into the "
                                                "-o folder (friction-cuda-run checks against them)");
  cmd->add_option("--batch", args->batch, "binds the symbolic batch dim (the artifact runs this batch only)")
      ->check(Positive);
  cmd->add_option("--ukernels", args->ukernels, "matmuls call the SGEMM microkernel (on) or stay LLVM loops (off)")
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_flag("--json", args->json, "machine-readable output");
  addPipelineOptions(cmd, args->pipeline);
  cmd->callback([args] { compileModel(*args); });
}

}  // namespace friction::cli
