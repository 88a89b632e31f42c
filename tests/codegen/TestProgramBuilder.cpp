// The program builder and run loop without any code generator: a fake
// KernelSource stands in for the JIT, so these tests link no MLIR.
#include <gtest/gtest.h>

#include "codegen/CpuBackend.h"
#include "codegen/KernelAbi.h"
#include "codegen/KernelAnalysis.h"
#include "codegen/ProgramBuilder.h"
#include "ir/Builder.h"
#include "runtime/interp/Interpreter.h"
#include "tests/codegen/FakeKernelSource.h"
#include "tests/common/BackendTestUtil.h"

namespace friction {
namespace {

using test::expectClose;
using test::FakeSource;
using test::randomTensor;

std::unique_ptr<Graph> reluChain() {
  auto g = std::make_unique<Graph>();
  GraphBuilder b(*g);
  Value* x = b.input("x", {DType::F32, {2, 8}});
  Value* y = b.op("Relu", {b.op("Neg", {b.op("Relu", {x})})});
  b.output(b.op("Relu", {y}));
  return g;
}

TEST(ProgramBuilder, AsksOnceForEachDistinctKernel) {
  auto g = reluChain();
  codegen::KernelCache cache;
  codegen::ProgramStats stats;
  codegen::ProgramBuilder builder(cache, stats);
  auto program = builder.build(*g);
  ASSERT_EQ(builder.pending().size(), 2u);  // Relu (three times in the graph) and Neg
  EXPECT_EQ(builder.pending()[0].first, codegen::structuralKey(*g->nodes()[0]));
  EXPECT_EQ(stats.kernelCalls, 4);
  EXPECT_EQ(stats.kernelsReused, 2);
  FakeSource source;
  builder.compilePending(source);
  ASSERT_EQ(source.requests.size(), 1u);
  EXPECT_EQ(source.requests[0].size(), 2u);
}

TEST(ProgramBuilder, KernelsASourceCannotMakeRunOnTheInterpreter) {
  auto g = reluChain();
  FakeSource source;
  auto model = codegen::compileCpuModel(*g, source, "fake source");
  const codegen::CpuStats* stats = codegen::cpuStats(*model);
  ASSERT_NE(stats, nullptr);
  EXPECT_EQ(stats->kernelCalls, 0);
  EXPECT_EQ(stats->fallbackNodes, 4);
  EXPECT_EQ(stats->fallbackOps.at("Relu (codegen failed)"), 3);
  EXPECT_NE(model->description().find("the fake source makes no"), std::string::npos) << model->description();
  std::vector<Tensor> in = {randomTensor({2, 8}, 1)};
  expectClose(model->run(in)[0], interp::run(*g, in)[0], 0, "all on the interpreter");
}

TEST(ProgramBuilder, CompiledKernelsAreCalledThroughDescriptors) {
  auto g = reluChain();
  FakeSource source;
  source.serveRelu = true;
  auto model = codegen::compileCpuModel(*g, source, "fake source");
  EXPECT_EQ(codegen::cpuStats(*model)->kernelCalls, 3);  // the Relus; Neg falls back
  std::vector<Tensor> in = {randomTensor({2, 8}, 2)};
  expectClose(model->run(in)[0], interp::run(*g, in)[0], 0, "Relu through the packed entry");
}

TEST(PackedArgs, SlicesOneDimOfRowMajorTensors) {
  Tensor t = randomTensor({4, 3}, 3);
  codegen::PackedArgs args({&t});
  args.slice(0, 0, 1, 3);
  static const float* seen = nullptr;
  static int64_t rows = 0, stride = 0;
  args.call([](void** a) {
    auto* d = *static_cast<codegen::StridedMemRef<float, 2>**>(a[0]);
    seen = d->aligned, rows = d->sizes[0], stride = d->strides[0];
  });
  EXPECT_EQ(seen, t.data<float>() + 3);
  EXPECT_EQ(rows, 2);
  EXPECT_EQ(stride, 3);
  // The channels of a batch-1 tensor: dim 1, after a dim of extent 1.
  Tensor c = randomTensor({1, 4, 3}, 4);
  codegen::PackedArgs channels({&c});
  channels.slice(0, 1, 2, 4);
  static int64_t size1 = 0;
  channels.call([](void** a) {
    auto* d = *static_cast<codegen::StridedMemRef<float, 3>**>(a[0]);
    seen = d->aligned, size1 = d->sizes[1];
  });
  EXPECT_EQ(seen, c.data<float>() + 6);
  EXPECT_EQ(size1, 2);
}

}  // namespace
}  // namespace friction
