// The MLIR pipeline stage by stage (codegen/CodegenStages.def): a few kernels'
// modules after each stage, checked with LLVM's FileCheck against the
// patterns in tests/codegen/golden/<case>.mlir, and docs/codegen.md's
// walkthrough, which is generated from the same dumps (FRICTION_UPDATE_DOCS=1
// rewrites it; the test fails when the document is stale).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>

#include "codegen/CodegenOptions.h"
#include "codegen/mlir/Codegen.h"
#include "ir/Builder.h"
#include "passes/PassManager.h"
#include "tests/common/BackendTestUtil.h"

namespace friction {
namespace {

namespace fs = std::filesystem;
using test::randomTensor;

struct GoldenCase {
  const char* name;                   // tests/codegen/golden/<name>.mlir
  std::function<void(GraphBuilder&)> build;
  std::vector<std::string> passes;    // run before taking the graph's only node as the kernel
  std::vector<std::string> disabled;  // codegen stages switched off
  codegen::Target target = codegen::Target::Cpu;
};

// y = sigmoid(tanh(gelu(x*scale + shift))) - exp(-x): one fused elementwise kernel.
void elementwiseChain(GraphBuilder& b) {
  Value* x = b.input("x", {DType::F32, {8, 16}});
  Value* t = b.op("Add", {b.op("Mul", {x, b.constant(randomTensor({16}, 10), "scale")}),
                          b.constant(randomTensor({8, 1}, 11), "shift")});
  Value* gelu = b.op("Mul", {t, b.op("Add", {b.op("Erf", {b.op("Div", {t, b.constant(Tensor::scalarF32(1.41421356f))})}),
                                              b.constant(Tensor::scalarF32(1.0f))})});
  Value* y = b.op("Sigmoid", {b.op("Tanh", {gelu})});
  b.output(b.op("Sub", {y, b.op("Exp", {b.op("Neg", {x})})}));
}

// x W^T + b: a Gemm whose C is its epilogue; Relu after it when `relu` (zoo:mlp's layers).
void gemm(GraphBuilder& b, bool relu) {
  Value* x = b.input("x", {DType::F32, {4, 32}});
  Value* y = b.op("Gemm", {x, b.constant(randomTensor({16, 32}, 12), "w"), b.constant(randomTensor({16}, 13), "b")},
                  {{"transB", int64_t(1)}});
  b.output(relu ? b.op("Relu", {y}) : y);
}

// x * per-channel scale, then Sigmoid, over NCHW planes of 7x7: what the collapse stage merges into one loop.
void channelScaleSigmoid(GraphBuilder& b) {
  Value* x = b.input("x", {DType::F32, {1, 8, 7, 7}});
  b.output(b.op("Sigmoid", {b.op("Mul", {x, b.constant(randomTensor({8, 1, 1}, 15), "scale")})}));
}

// A MatMul with B read along n: what the interchange stage reorders when the microkernel is off.
void matmul(GraphBuilder& b) {
  Value* x = b.input("x", {DType::F32, {4, 32}});
  b.output(b.op("MatMul", {x, b.constant(randomTensor({32, 16}, 14), "w")}));
}

const std::vector<GoldenCase>& goldenCases() {
  static const std::vector<GoldenCase> cases = {
      {"elementwise_chain", elementwiseChain, {"fuse-elementwise"}, {}},
      // On cpu a Gemm anchoring an epilogue region is a native SGEMM call (codegen/NativeKernels.h); a Gemm on
      // its own is a generated kernel that calls the SGEMM.
      {"gemm_epilogue", [](GraphBuilder& b) { gemm(b, false); }, {}, {}},
      {"matmul_loops", matmul, {}, {"ukernels"}},
      {"gemm_epilogue_cuda", [](GraphBuilder& b) { gemm(b, true); }, {"fuse-epilogues"}, {}, codegen::Target::Cuda},
      {"elementwise_planes", channelScaleSigmoid, {"fuse-elementwise"}, {}},
  };
  return cases;
}

// The case's kernel node (its graph kept alive in `g`) and its modules after
// each stage (up to `stopAfter` when given).
std::vector<codegen::StageDump> stagesOf(const GoldenCase& c, std::unique_ptr<Graph>& g, const std::string& stopAfter = "") {
  g = std::make_unique<Graph>(c.name);
  GraphBuilder b(*g);
  c.build(b);
  PipelineOptions o;
  o.passes = c.passes;
  if (!c.passes.empty()) runPipeline(*g, buildPipeline(o));
  EXPECT_EQ(g->nodes().size(), 1u) << c.name << ": the case must be one kernel";
  codegen::CodegenOptions options;
  options.target = c.target;
  options.stopAfter = stopAfter;
  for (const std::string& s : c.disabled) options.set(s, "off");
  return codegen::kernelStages({g->nodes()[0].get()}, options);
}

// The cuda pipeline's last stage links libdevice from the CUDA toolkit.
bool runnable(const GoldenCase& c) { return c.target != codegen::Target::Cuda || !codegen::cudaToolkitPath().empty(); }

std::string stageHeader(const std::string& stage) { return "// ----- stage: " + stage + " -----"; }

// FileCheck's verdict on `text` against `checks`: "" when they match.
std::string fileCheck(const std::string& text, const fs::path& checks) {
  fs::path input = fs::temp_directory_path() / ("friction-golden-" + std::to_string(::getpid()) + ".mlir");
  std::ofstream(input) << text;
  fs::path log = input;
  log += ".log";
  std::string cmd = std::string(FRICTION_FILECHECK) + " --dump-input=fail '" + checks.string() + "' < '" +
                    input.string() + "' > '" + log.string() + "' 2>&1";
  int rc = std::system(cmd.c_str());
  std::stringstream out;
  out << std::ifstream(log).rdbuf();
  fs::remove(input), fs::remove(log);
  return rc == 0 ? "" : out.str().substr(0, 20000);
}

TEST(CodegenStages, GoldenPatternsAfterEveryStage) {
  for (const GoldenCase& c : goldenCases()) {
    SCOPED_TRACE(c.name);
    if (!runnable(c)) {
      std::cout << "skipped " << c.name << ": no CUDA toolkit (libdevice)\n";
      continue;
    }
    std::unique_ptr<Graph> g;
    std::string text;
    for (const auto& s : stagesOf(c, g)) text += stageHeader(s.stage) + "\n" + s.module + "\n";
    fs::path checks = fs::path(FRICTION_SOURCE_DIR) / "tests/codegen/golden" / (std::string(c.name) + ".mlir");
    ASSERT_TRUE(fs::exists(checks)) << checks;
    std::string verdict = fileCheck(text, checks);
    EXPECT_EQ(verdict, "") << "FileCheck " << checks << " failed:\n" << verdict;
  }
}

TEST(CodegenStages, EveryStageIsDumpedUnlessSwitchedOff) {
  std::unique_ptr<Graph> g;
  auto stages = stagesOf(goldenCases()[2], g);  // ukernels off
  std::vector<std::string> names;
  for (const auto& s : stages) names.push_back(s.stage);
  std::vector<std::string> want = {"built"};
  for (const auto& s : codegen::codegenStages())
    if (std::string(s.name) != "ukernels" && s.in(codegen::Target::Cpu)) want.push_back(s.name);
  EXPECT_EQ(names, want);
}

// ---- docs/codegen.md's walkthrough ----

// A module as a markdown code block, cut after `maxLines` lines.
std::string mlirBlock(const std::string& module, size_t maxLines) {
  std::istringstream in(module);
  std::string out, line;
  size_t total = 0;
  while (std::getline(in, line))
    if (++total <= maxLines) out += line + "\n";
  if (total > maxLines)
    out += "// ... " + std::to_string(total - maxLines) + " more lines (" + std::to_string(total) + " in all)\n";
  return "```mlir\n" + out + "```\n";
}

// The stages of one case: each module, or a line saying the stage left it as it was.
std::string caseWalkthrough(const GoldenCase& c, const std::vector<std::string>& only = {}) {
  std::unique_ptr<Graph> g;
  std::string md, previous;
  for (const auto& s : stagesOf(c, g, only.empty() ? "" : only.back())) {
    bool shown = only.empty() || std::find(only.begin(), only.end(), s.stage) != only.end();
    if (shown && s.module == previous) md += "**" + s.stage + "**: unchanged.\n\n";
    else if (shown) md += "**" + s.stage + "**\n\n" + mlirBlock(s.module, 60) + "\n";
    previous = s.module;
  }
  return md;
}

std::string walkthrough() {
  std::string md = "| # | stage | pipelines | switch | what it does |\n|---|---|---|---|---|\n";
  int k = 1;
  for (const auto& s : codegen::codegenStages()) {
    std::string pipelines;
    for (codegen::Target t : {codegen::Target::Cpu, codegen::Target::Cuda, codegen::Target::CudaNests})
      if (s.in(t)) pipelines += (pipelines.empty() ? "" : ", ") + std::string(codegen::targetName(t));
    md += "| " + std::to_string(k++) + " | `" + s.name + "` | " + pipelines + " | " +
          (s.switchable == codegen::kRequired ? std::string("required")
                                                   : "`" + std::string(s.in(codegen::Target::Cpu) ? "cpu" : "cuda") + "?" +
                                                         s.name + (s.switchable == codegen::kOn ? "=off`" : "=on` (off by default)")) + " | " + s.summary + " |\n";
  }
  md += "\nThe fused elementwise kernel (`elementwise_chain`), after building and after each stage:\n\n";
  md += caseWalkthrough(goldenCases()[0]);
  md += "A Gemm kernel, its bias C an epilogue generic (`gemm_epilogue`), after `bufferize` and `ukernels`:\n\n";
  md += caseWalkthrough(goldenCases()[1], {"bufferize", "ukernels"});
  md += "The Gemm + bias + Relu epilogue kernel through the cuda pipeline (`gemm_epilogue_cuda`): its three linalg ops "
        "as parallel loops, flattened and tiled for blocks of threads, then outlined into three kernels of one "
        "`gpu.module` that the host function launches (`nvvm` then turns the module into PTX):\n\n";
  md += caseWalkthrough(goldenCases()[3], {"parallel-loops", "gpu-tile", "gpu-outline"});
  return md;
}

TEST(CodegenStages, WalkthroughInDocsIsCurrent) {  // the cuda case stops at gpu-outline: no toolkit needed
  const std::string begin = "<!-- BEGIN GENERATED: codegen stages -->\n", end = "<!-- END GENERATED: codegen stages -->";
  fs::path doc = fs::path(FRICTION_SOURCE_DIR) / "docs/codegen.md";
  std::stringstream ss;
  ss << std::ifstream(doc).rdbuf();
  std::string text = ss.str();
  size_t b = text.find(begin), e = text.find(end);
  ASSERT_TRUE(b != std::string::npos && e != std::string::npos && b < e) << doc << " lacks the generated markers";
  std::string current = text.substr(b + begin.size(), e - b - begin.size());
  std::string generated = walkthrough();
  if (current == generated) return;
  if (std::getenv("FRICTION_UPDATE_DOCS")) {
    std::ofstream(doc) << text.substr(0, b + begin.size()) + generated + text.substr(e);
    std::printf("rewrote the generated walkthrough in %s\n", doc.c_str());
    return;
  }
  ADD_FAILURE() << doc << "'s codegen walkthrough is stale; regenerate it with\n  FRICTION_UPDATE_DOCS=1 "
                << "build/bin/friction_codegen_tests --gtest_filter=CodegenStages.WalkthroughInDocsIsCurrent";
}

}  // namespace
}  // namespace friction
