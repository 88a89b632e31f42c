// `friction compile MODEL -o OUT.so`: ahead-of-time compilation for the cpu
// backend (codegen/aot/Artifact.h). `friction run OUT.so` / `friction bench OUT.so`
// load the artifact without recompiling.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "codegen/aot/Artifact.h"
#include "ir/Error.h"
#include "tools/cmd/Commands.h"
#include "tools/cmd/Common.h"

namespace friction::cli {
namespace {

struct CompileArgs {
  std::string model, output, ukernels = "on";
  int64_t batch = 1;
  bool json = false;
  PipelineOptions pipeline;
};

void compileModel(const CompileArgs& a) {
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
  auto* cmd = app.add_subcommand("compile", "compile a model ahead of time for the cpu backend into one shared library");
  cmd->add_option("model", args->model, "path to .onnx/.fir or zoo:ARCH?knobs")->required();
  cmd->add_option("-o,--output", args->output, "OUT.so: the artifact (run it with `friction run OUT.so`)")->required();
  cmd->add_option("--batch", args->batch, "binds the symbolic batch dim (the artifact runs this batch only)")
      ->check(Positive);
  cmd->add_option("--ukernels", args->ukernels, "matmuls call the SGEMM microkernel (on) or stay LLVM loops (off)")
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_flag("--json", args->json, "machine-readable output");
  addPipelineOptions(cmd, args->pipeline);
  cmd->callback([args] { compileModel(*args); });
}

}  // namespace friction::cli
