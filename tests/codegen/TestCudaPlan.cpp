// The cuda backend's plan (codegen/cuda/GpuPlanBuilder.h, runtime/cuda/GpuPlan.h):
// the arena's placement, every read seeing the bytes its producer wrote, views
// sharing their source, the folder format and its errors, and the host steps
// it refuses. The last test runs the backend against the interpreter and
// needs a GPU: elsewhere it skips, saying why.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <regex>

#include "codegen/cuda/GpuCompile.h"
#include "codegen/cuda/GpuPlanBuilder.h"
#include "codegen/cuda/Registration.h"
#include "frontend/zoo/Zoo.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Shell.h"
#include "ir/Specialize.h"
#include "passes/PassManager.h"
#include "runtime/Backend.h"
#include "runtime/Inputs.h"
#include "runtime/cuda/CudaDriver.h"
#include "runtime/interp/Interpreter.h"
#include "tests/codegen/CudaPlanCheck.h"
#include "tests/common/BackendTestUtil.h"

namespace friction {
namespace {

namespace fs = std::filesystem;

// Every pair of buffers alive at the same call lies apart, for random lifetimes and sizes.
TEST(CudaPlan, ArenaPlacesBuffersAliveTogetherApart) {
  std::mt19937 gen(5);
  for (int round = 0; round < 20; ++round) {
    std::vector<codegen::ArenaBuffer> b(60);
    for (auto& x : b) {
      x.first = int(gen() % 40);
      x.last = x.first + int(gen() % 10);
      x.bytes = 1 + int64_t(gen() % 5000);
    }
    int64_t size = codegen::placeInArena(b);
    for (size_t i = 0; i < b.size(); ++i) {
      EXPECT_EQ(b[i].offset % 256, 0);
      EXPECT_LE(b[i].offset + b[i].bytes, size);
      for (size_t j = 0; j < i; ++j) {
        bool together = b[i].first <= b[j].last && b[j].first <= b[i].last;
        bool apart = b[i].offset + b[i].bytes <= b[j].offset || b[j].offset + b[j].bytes <= b[i].offset;
        EXPECT_TRUE(!together || apart) << "round " << round << ": buffers " << i << " and " << j;
      }
    }
  }
}

// A chain of equal buffers, each alive for two calls, needs two slots, not one per buffer.
TEST(CudaPlan, ArenaReusesTheSpaceOfBuffersNoLongerAlive) {
  std::vector<codegen::ArenaBuffer> b;
  for (int c = 0; c < 6; ++c) b.push_back({1024, c, c + 1, -1});
  EXPECT_EQ(codegen::placeInArena(b), 2 * 1024);
}

std::unique_ptr<Graph> optimized(const std::string& spec, int64_t batch, std::vector<std::string> disable = {"convert-layout"}) {
  auto g = zoo::build(zoo::parseSpec(spec));
  bindInputDims(*g, batchBindings(*g, batch));
  PipelineOptions o;
  o.disable = std::move(disable);
  runPipeline(*g, buildPipeline(o));
  return g;
}

codegen::CodegenOptions cudaOptions() {
  codegen::CodegenOptions o;
  o.gpuChip = "sm_90";
  return o;
}

// One call per kernel call of the report, every read sees its producer's bytes, and space is reused.
TEST(CudaPlan, EveryCallReadsWhatItsProducerWrote) {
  for (const char* spec : {"resnet?depth=4&width=8&resolution=32&block=bottleneck", "vit?depth=2&width=16&resolution=16&patch=8&heads=2"}) {
    auto g = optimized(spec, 2);
    auto r = codegen::compileForGpu(*g, cudaOptions());
    ASSERT_EQ(r.planError, "") << spec;
    const gpu::GpuPlan& p = r.plan;
    EXPECT_EQ(int64_t(p.calls.size()), r.kernelCalls) << spec;
    EXPECT_EQ(p.launches(), r.launches) << spec;
    ASSERT_EQ(p.inputs.size(), g->inputs().size());
    ASSERT_EQ(p.outputs.size(), g->outputs().size());
    EXPECT_EQ(p.outputs[0].shape, g->outputs()[0]->shape().staticDims());
    test::expectConsistentPlan(p, spec);
    int64_t all = 0;
    for (const auto& c : p.calls)
      for (int64_t bytes : c.bytes) all += bytes;
    EXPECT_LT(p.intermediateBytes, all) << spec << ": intermediates share space";
    EXPECT_GT(p.bytesBetweenKernels(), 0);
  }
}

// A Reshape is a view: the kernel after it reads the bytes the kernel before it wrote, at the same offset.
TEST(CudaPlan, ViewsShareTheirSourceBuffer) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {2, 6}});
  Value* y = b.op("Exp", {x});
  Tensor shape(DType::I64, {1});
  shape.data<int64_t>()[0] = 12;
  Value* z = b.op("Reshape", {y, b.constant(shape)});
  b.output(b.op("Tanh", {z}));
  auto r = codegen::compileForGpu(g, cudaOptions());
  ASSERT_EQ(r.planError, "");
  ASSERT_EQ(r.plan.calls.size(), 2u);
  EXPECT_EQ(r.views, 1);
  EXPECT_EQ(r.plan.calls[1].buffers[0], r.plan.calls[0].buffers[1]) << "Tanh reads where Exp wrote";
  test::expectConsistentPlan(r.plan, "exp-reshape-tanh");
}

// A step without a GPU kernel (a comparison: typed ops other than Cast have none yet) is refused by name.
TEST(CudaPlan, StepsWithoutAGpuKernelAreRefusedByName) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {4}});
  b.output(b.op("Less", {b.op("Exp", {x}), x}));
  auto r = codegen::compileForGpu(g, cudaOptions());
  ASSERT_FALSE(r.hostSteps.empty()) << "the case needs a step without a GPU kernel";
  EXPECT_NE(r.planError.find("has no GPU kernel"), std::string::npos) << r.planError;
  EXPECT_NE(r.planError.find("Less"), std::string::npos) << r.planError;
  EXPECT_TRUE(r.plan.calls.empty());
}

// convert-layout's NHWC pools, which the cpu runs as microkernels, run their region's kernels on the GPU:
// the default pipeline compiles whole.
TEST(CudaPlan, TheDefaultPipelineRunsWholeOnTheGpu) {
  auto g = optimized("resnet?depth=2&width=8&resolution=16", 1, {});
  auto r = codegen::compileForGpu(*g, cudaOptions());
  EXPECT_TRUE(r.hostSteps.empty());
  ASSERT_EQ(r.planError, "");
  test::expectConsistentPlan(r.plan, "resnet, default pipeline");
}

TEST(CudaPlan, RoundTripsThroughItsFolder) {
  auto g = optimized("mobilenetv2?depth=3&width=8&resolution=16", 1);
  auto r = codegen::compileForGpu(*g, cudaOptions());
  ASSERT_EQ(r.planError, "");
  TempDir dir("friction-plan");
  gpu::writePlan(r.plan, dir.path.string());
  gpu::GpuPlan back = gpu::readPlan(dir.path.string());
  EXPECT_EQ(back.chip, "sm_90");
  EXPECT_EQ(back.arenaBytes, r.plan.arenaBytes);
  EXPECT_EQ(back.weights, r.plan.weights);
  ASSERT_EQ(back.kernels.size(), r.plan.kernels.size());
  for (size_t k = 0; k < back.kernels.size(); ++k) {
    EXPECT_EQ(back.kernels[k].ptx, r.plan.kernels[k].ptx);
    EXPECT_EQ(back.kernels[k].launches.size(), r.plan.kernels[k].launches.size());
    EXPECT_EQ(back.kernelLabels[k], r.plan.kernelLabels[k]);
  }
  ASSERT_EQ(back.calls.size(), r.plan.calls.size());
  for (size_t c = 0; c < back.calls.size(); ++c) {
    EXPECT_EQ(back.calls[c].buffers, r.plan.calls[c].buffers);
    EXPECT_EQ(back.calls[c].step, r.plan.calls[c].step);
  }
  EXPECT_EQ(back.inputs[0].shape, r.plan.inputs[0].shape);
  EXPECT_EQ(back.launches(), r.plan.launches());
  test::expectConsistentPlan(back, "read back");
}

// A damaged folder fails in one line naming the file and what is wrong.
TEST(CudaPlan, ReadingABadFolderSaysWhatIsWrong) {
  auto expectError = [](const std::string& dir, const std::string& part) {
    try {
      gpu::readPlan(dir);
      ADD_FAILURE() << "read a bad plan: " << part;
    } catch (const Error& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(part), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  };
  expectError("/nonexistent/plan", "is not a folder");
  auto g = optimized("mlp?depth=3", 1);
  auto r = codegen::compileForGpu(*g, cudaOptions());
  ASSERT_EQ(r.planError, "");
  TempDir dir("friction-plan");
  const std::string d = dir.path.string();
  gpu::writePlan(r.plan, d);
  std::string json = readFile(dir.path / "plan.json");
  writeFile(dir.path / "plan.json", "{not json");
  expectError(d, "plan.json");
  writeFile(dir.path / "plan.json", std::regex_replace(json, std::regex("friction-cuda-plan 1"), "something else"));
  expectError(d, "is not a friction cuda plan");
  writeFile(dir.path / "plan.json", std::regex_replace(json, std::regex("\"arena_bytes\": [0-9]+"), "\"arena_bytes\": 8"));
  expectError(d, "outside the arena");
  writeFile(dir.path / "plan.json", std::regex_replace(json, std::regex("\"kernel\": 0"), "\"kernel\": 99"));
  expectError(d, "names no kernel");
}

// With a GPU: the cuda backend against the interpreter at 1e-4 on the zoo's archetypes, batch 1 and 2.
TEST(CudaBackend, MatchesTheInterpreterOnTheZoo) {
  std::string why = gpu::cudaUnavailableReason();
  if (!why.empty()) GTEST_SKIP() << "needs a GPU: " << why;
  codegen::registerCudaBackend();
  for (const char* spec : {"resnet?depth=2&width=8&resolution=16", "mobilenetv2?depth=3&width=8&resolution=16",
                           "vit?depth=2&width=16&resolution=16&patch=8&heads=2", "mlp?depth=3"})
    for (int64_t batch : {1, 2}) {
      auto reference = zoo::build(zoo::parseSpec(spec));
      bindInputDims(*reference, batchBindings(*reference, batch));
      auto g = optimized(spec, batch);
      auto in = seededInputs(*g, 0);
      auto want = interp::run(*reference, in);
      auto model = createBackend("cuda?profile=on")->compile(*g);
      auto got = model->run(in);
      ASSERT_EQ(got.size(), want.size());
      for (size_t o = 0; o < got.size(); ++o) test::expectClose(got[o], want[o], 1e-4, std::string(spec) + " output " + std::to_string(o));
      EXPECT_GT(model->lastRunMs(), 0);
      EXPECT_NE(model->profile(), "");
    }
}

}  // namespace
}  // namespace friction
