// Ahead-of-time artifacts of the cpu backend (codegen/aot/Artifact.h): a zoo model
// compiled to a .so in a temporary folder, loaded in-process, gives the JIT
// cpu backend's outputs and the interpreter's; loading compiles nothing; bad
// artifacts are refused with clear messages.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "codegen/aot/Artifact.h"
#include "codegen/CpuBackend.h"
#include "codegen/Registration.h"
#include "frontend/zoo/Zoo.h"
#include "ir/Error.h"
#include "ir/Specialize.h"
#include "passes/PassManager.h"
#include "runtime/Inputs.h"
#include "runtime/interp/Interpreter.h"
#include "tests/common/BackendTestUtil.h"

namespace fs = std::filesystem;

namespace friction {
namespace {

using test::errorOf;
using test::expectClose;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "friction-aot-test-XXXXXX").string();
    EXPECT_NE(mkdtemp(t.data()), nullptr);
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::unique_ptr<Graph> optimized(const std::string& spec, int64_t batch) {
  auto g = zoo::build(zoo::parseSpec(spec));
  bindInputDims(*g, batchBindings(*g, batch));
  runPipeline(*g, buildPipeline(PipelineOptions{}));
  return g;
}

std::string compileTo(const Graph& g, const fs::path& out, const std::string& spec, int64_t batch) {
  codegen::AotCompileOptions o;
  o.model = spec;
  o.batch = batch;
  auto r = codegen::compileArtifact(g, out.string(), o);
  std::cout << spec << ": " << r.kernels << " kernels, " << r.bytes << " bytes; program " << r.programMs << " ms, build "
            << r.buildMs << ", lower " << r.lowerMs << ", object " << r.objectMs << ", link " << r.linkMs << "\n";
  EXPECT_GT(r.bytes, 0);
  EXPECT_EQ(r.failedKernels, 0);
  return out.string();
}

class AotZoo : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { codegen::registerCpuBackend(); }
};

TEST_P(AotZoo, LoadedArtifactMatchesJitAndInterp) {
  const std::string spec = GetParam();
  TempDir tmp;
  const int64_t batch = 2;
  auto g = optimized(spec, batch);
  std::string path = compileTo(*g, tmp.path / "model.so", spec, batch);

  auto reference = zoo::build(zoo::parseSpec(spec));
  bindInputDims(*reference, batchBindings(*reference, batch));
  auto inputs = seededInputs(*reference, 11);
  auto want = interp::run(*reference, inputs);
  auto jit = createBackend("cpu")->compile(*g);
  auto jitOut = jit->run(inputs);

  codegen::LoadedArtifact a = codegen::loadArtifact(path);
  std::cout << a.model->description() << "\n  load: open " << a.openMs << " ms, parse " << a.parseMs << " ms, program "
            << a.programMs << " ms\n";
  const codegen::CpuStats* st = codegen::artifactStats(*a.model);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->kernelsCompiled, 0) << "loading must not compile";
  EXPECT_EQ(st->phases.totalMs(), 0);
  EXPECT_EQ(st->kernelsLoaded, a.artifact->info().kernels);
  EXPECT_GT(st->kernelCalls, 0);
  EXPECT_EQ(a.artifact->info().batch, batch);
  EXPECT_EQ(a.artifact->info().model, spec);
  const codegen::CpuStats* jst = codegen::cpuStats(*jit);
  ASSERT_NE(jst, nullptr);
  EXPECT_EQ(st->kernelCalls, jst->kernelCalls);
  EXPECT_EQ(st->nativeCalls, jst->nativeCalls);
  EXPECT_EQ(st->fallbackNodes, jst->fallbackNodes);

  auto got = a.model->run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    expectClose(got[i], jitOut[i], 1e-5, spec + " vs JIT");
    expectClose(got[i], want[i], 1e-4, spec + " vs interp");
  }
  // A second run (buffers freed and reallocated) gives the same.
  auto again = a.model->run(inputs);
  for (size_t i = 0; i < got.size(); ++i) expectClose(again[i], got[i], 0, spec + " second run");

  // The wrong batch: a clear message, not a crash.
  auto other = seededInputs(*optimized(spec, 1), 11);
  std::string e = errorOf([&] { a.model->run(other); });
  EXPECT_NE(e.find("was compiled for batch 2"), std::string::npos) << e;

  // The backend form: cpu?aot=FILE over the artifact's graph.
  auto viaBackend = createBackend("cpu?aot=" + path)->compile(*a.graph);
  auto got2 = viaBackend->run(inputs);
  for (size_t i = 0; i < got.size(); ++i) expectClose(got2[i], got[i], 0, spec + " via cpu?aot=");
}

INSTANTIATE_TEST_SUITE_P(Zoo, AotZoo,
                         ::testing::Values("resnet?depth=2&width=8&resolution=16",
                                           "vit?depth=2&width=16&resolution=16&patch=8&heads=2", "mlp?depth=3"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param.substr(0, info.param.find('?'));
                         });

TEST(Aot, BadArtifactsAreRefused) {
  TempDir tmp;
  std::string e = errorOf([&] { codegen::Artifact::open((tmp.path / "missing.so").string()); });
  EXPECT_NE(e.find("No such file"), std::string::npos) << e;

  std::ofstream((tmp.path / "text.so").string()) << "hello";
  e = errorOf([&] { codegen::Artifact::open((tmp.path / "text.so").string()); });
  EXPECT_NE(e.find("is not a friction artifact"), std::string::npos) << e;

  // A real shared library without friction's manifest.
  e = errorOf([&] { codegen::Artifact::open("/usr/lib/llvm-19/lib/libmlir_c_runner_utils.so"); });
  EXPECT_NE(e.find("is not a friction artifact"), std::string::npos) << e;
}

TEST(Aot, OtherCpuIsRefused) {
  TempDir tmp;
  const std::string spec = "mlp?depth=2";
  auto g = optimized(spec, 1);
  std::string path = compileTo(*g, tmp.path / "mlp.so", spec, 1);
  setenv("FRICTION_AOT_HOST_FEATURES", "sse,sse2", 1);
  std::string e = errorOf([&] { codegen::Artifact::open(path); });
  unsetenv("FRICTION_AOT_HOST_FEATURES");
  EXPECT_NE(e.find("was compiled for a different CPU"), std::string::npos) << e;
  EXPECT_NO_THROW(codegen::Artifact::open(path));
}

TEST(Aot, UnboundBatchIsRefused) {
  auto g = zoo::build(zoo::parseSpec("mlp?depth=2"));
  TempDir tmp;
  std::string e = errorOf([&] { codegen::compileArtifact(*g, (tmp.path / "x.so").string(), {}); });
  EXPECT_NE(e.find("bind the batch"), std::string::npos) << e;
}

}  // namespace
}  // namespace friction
