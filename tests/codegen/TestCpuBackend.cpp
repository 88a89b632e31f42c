// The `cpu` backend (MLIR codegen) against the reference interpreter: every
// supported op with broadcasting, fused regions as one kernel, the kernel
// cache, and zoo models with and without the default pass pipeline.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>

#include "codegen/CpuBackend.h"
#include "codegen/KernelAnalysis.h"
#include "codegen/Registration.h"
#include "codegen/mlir/Codegen.h"
#include "frontend/zoo/Zoo.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/OpRegistry.h"
#include "ir/Specialize.h"
#include "passes/Pass.h"
#include "passes/PassManager.h"
#include "runtime/Inputs.h"
#include "runtime/interp/Interpreter.h"
#include "runtime/ukernels/Sgemm.h"
#include "tests/common/BackendTestUtil.h"

namespace friction {
namespace {

using test::countOf;
using test::expectClose;
using test::randomTensor;
using test::stageModule;

using Shape_ = std::vector<int64_t>;

struct CpuRun {
  std::vector<Tensor> outputs;
  codegen::CpuStats stats;
  std::string description;
};

CpuRun runCpu(const Graph& g, const std::vector<Tensor>& inputs, const std::string& backendSpec = "cpu") {
  auto backend = createBackend(backendSpec);
  auto model = backend->compile(g);
  CpuRun r;
  r.outputs = model->run(inputs);
  r.stats = *codegen::cpuStats(*model);
  r.description = model->description();
  return r;
}

// Runs `g` on cpu and interp; checks every output; returns the cpu stats.
CpuRun expectMatchesInterp(const Graph& g, const std::vector<Tensor>& inputs, double rtol = 1e-5) {
  auto want = interp::run(g, inputs);
  CpuRun r = runCpu(g, inputs);
  EXPECT_EQ(r.outputs.size(), want.size());
  for (size_t i = 0; i < want.size() && i < r.outputs.size(); ++i)
    expectClose(r.outputs[i], want[i], rtol, "output " + std::to_string(i));
  return r;
}

class CpuBackendTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { codegen::registerCpuBackend(); }
};

// ---- single ops ----

// The one-input ops of codegen/ScalarOps.def.
std::vector<std::string> unaryScalarOps() {
  std::vector<std::string> ops;
#define FRICTION_SCALAR_OP(op, minInputs, maxInputs) \
  if (minInputs == 1) ops.push_back(#op);
#include "codegen/ScalarOps.def"
#undef FRICTION_SCALAR_OP
  return ops;
}

TEST_F(CpuBackendTest, UnaryOpsMatchInterp) {  // Identity is a view, every other op one kernel
  std::vector<std::pair<std::string, DType>> cases;  // ReducePrecision to both half types
  for (const std::string& op : unaryScalarOps())
    for (DType to : {DType::F16, DType::BF16})
      if (to == DType::F16 || op == "ReducePrecision") cases.emplace_back(op, to);
  for (const auto& [op, to] : cases) {
    SCOPED_TRACE(op + " " + std::string(dtypeName(to)));
    std::map<std::string, Attribute> attrs;
    if (op == "ReducePrecision") attrs["to"] = int64_t(dtypeToOnnxCode(to));
    // Each op over its domain: positive, within [-1, 1], at least 1; the others over [-6, 6].
    const bool positive = op == "Sqrt" || op == "Log" || op == "Reciprocal";
    const bool unit = op == "Asin" || op == "Acos" || op == "Atanh", atLeastOne = op == "Acosh";
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", {DType::F32, {3, 7}});
    b.output(b.op(op, {x}, attrs));
    Tensor in = positive     ? randomTensor({3, 7}, 1, 0.1f, 4)
                : unit       ? randomTensor({3, 7}, 1, -0.999f, 0.999f)
                : atLeastOne ? randomTensor({3, 7}, 1, 1, 6)
                             : randomTensor({3, 7}, 1, -6, 6);
    auto r = expectMatchesInterp(g, {in});
    EXPECT_EQ(r.stats.kernelCalls, op == "Identity" ? 0 : 1);
    EXPECT_EQ(r.stats.views, op == "Identity" ? 1 : 0);
    EXPECT_EQ(r.stats.fallbackNodes, 0);
  }
}

// The kernels read their inputs at the compiled shapes: a wrong one is the interpreter's one-line error, before
// any kernel runs (a conformance case whose data disagreed with its model once ran on cpu unchecked).
TEST_F(CpuBackendTest, WrongInputsAreErrorsNamingTheInput) {
  Graph g;
  GraphBuilder b(g);
  b.output(b.op("Relu", {b.input("x", {DType::F32, {2, 3}})}));
  auto model = createBackend("cpu")->compile(g);
  auto errorOf = [&](std::vector<Tensor> in) { return test::errorOf([&] { model->run(in); }); };
  EXPECT_EQ(errorOf({Tensor(DType::F32, {3, 2})}), "input 'x' has shape [3,2], model expects [2,3]");
  EXPECT_EQ(errorOf({Tensor(DType::F64, {2, 3})}), "input 'x' has dtype f64, model expects f32");
  EXPECT_EQ(errorOf({}), "model takes 1 inputs, got 0");
}

// The passes fuse every op with the Activation trait into epilogues; the
// code generator must compile each (a new activation needs a ScalarOps.def
// entry and an emit function, nothing in the passes).
TEST_F(CpuBackendTest, EveryActivationHasAScalarLowering) {
  std::vector<std::string> activations = opsWithTrait(OpTrait::Activation);
  EXPECT_GE(activations.size(), 7u);
  for (const std::string& op : activations) {
    Graph g;
    GraphBuilder b(g);
    Node* n = b.op(op, {b.input("x", {DType::F32, {2, 3}})})->producer();
    EXPECT_TRUE(codegen::isSupportedElementwise(*n)) << op << " has the Activation trait but no scalar lowering";
  }
}

TEST_F(CpuBackendTest, BinaryOpsWithBroadcastingMatchInterp) {
  std::vector<std::pair<Shape_, Shape_>> cases = {
      {{4, 5}, {4, 5}}, {{4, 5}, {5}}, {{2, 1, 5}, {3, 1}}, {{1}, {3, 4}}, {{}, {2, 3}}, {{2, 3, 1, 4}, {3, 5, 1}}};
  for (std::string op : {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"}) {
    for (const auto& [sa, sb] : cases) {
      SCOPED_TRACE(op + " " + Shape::fromStatic(sa).str() + " " + Shape::fromStatic(sb).str());
      Graph g;
      GraphBuilder b(g);
      Value* x = b.input("x", {DType::F32, Shape::fromStatic(sa)});
      Value* y = b.input("y", {DType::F32, Shape::fromStatic(sb)});
      b.output(b.op(op, {x, y}));
      Tensor tx = op == "Pow" ? randomTensor(sa, 2, 0.1f, 3) : randomTensor(sa, 2);
      Tensor ty = op == "Div" ? randomTensor(sb, 3, 0.5f, 2) : randomTensor(sb, 3);
      auto r = expectMatchesInterp(g, {tx, ty});
      EXPECT_EQ(r.stats.kernelCalls, 1);
    }
  }
}

// Max, Min, Sum and Mean of three operands, broadcasting: one kernel folding them in the interpreter's order.
TEST_F(CpuBackendTest, VariadicOpsFoldEveryOperand) {
  for (std::string op : {"Max", "Min", "Sum", "Mean"}) {
    SCOPED_TRACE(op);
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", {DType::F32, {2, 3, 4}});
    Value* y = b.input("y", {DType::F32, {3, 1}});
    Value* z = b.input("z", {DType::F32, {4}});
    b.output(b.op(op, {x, y, z}));
    auto r = expectMatchesInterp(g, {randomTensor({2, 3, 4}, 1), randomTensor({3, 1}, 2), randomTensor({4}, 3)});
    EXPECT_EQ(r.stats.kernelCalls, 1);
    EXPECT_EQ(r.stats.fallbackNodes, 0);
  }
}

// PRelu's slope broadcasts to x (per channel, one value, along the last
// axis); after a conv, through the default pipeline, it fuses into the conv's
// epilogue and follows convert-layout into NHWC.
TEST_F(CpuBackendTest, PReluAloneAndAfterAConvInTheDefaultPipeline) {
  for (const Shape_& slope : std::vector<Shape_>{{4, 1, 1}, {1}, {5}}) {
    SCOPED_TRACE(Shape::fromStatic(slope).str());
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", {DType::F32, {2, 4, 3, 5}});
    b.output(b.op("PRelu", {x, b.constant(randomTensor(slope, 4, 0.05f, 0.5f))}));
    auto r = expectMatchesInterp(g, {randomTensor({2, 4, 3, 5}, 5)});
    EXPECT_EQ(r.stats.kernelCalls, 1);
    EXPECT_EQ(r.stats.fallbackNodes, 0) << r.description;
  }
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {1, 3, 8, 8}});
  Value* y = b.op("Conv", {x, b.constant(randomTensor({6, 3, 3, 3}, 6)), b.constant(randomTensor({6}, 7))},
                  {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  y = b.op("PRelu", {y, b.constant(randomTensor({6, 1, 1}, 8, 0.05f, 0.5f))});
  b.output(b.op("Conv", {y, b.constant(randomTensor({4, 6, 1, 1}, 9))}));
  std::vector<Tensor> in = {randomTensor({1, 3, 8, 8}, 10)};
  auto want = interp::run(g, in);
  runPipeline(g, buildPipeline({}));
  auto r = runCpu(g, in);
  expectClose(r.outputs[0], want[0], 1e-4, "conv + PRelu, default pipeline");
  EXPECT_EQ(r.stats.fallbackNodes, 0) << r.description;
}

// DenseNet's step: a BatchNormalization after a Concat (no conv to fold it
// into) becomes a per-channel Mul and Add (fold-batchnorm) that run with the
// Relu as one NHWC elementwise kernel, so the default pipeline leaves only the
// graph's boundary transposes.
TEST_F(CpuBackendTest, BatchNormAfterConcatRunsNhwc) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {2, 3, 6, 6}});
  Value* stem = b.op("Conv", {x, b.constant(randomTensor({3, 3, 1, 1}, 10))});
  Value* a = b.op("Conv", {stem, b.constant(randomTensor({4, 3, 1, 1}, 11))});
  Value* c = b.op("Concat", {stem, a}, {{"axis", int64_t(1)}});
  Value* n = b.op("BatchNormalization", {c, b.constant(randomTensor({7}, 12, 0.5f, 1.5f)),
                                         b.constant(randomTensor({7}, 13)), b.constant(randomTensor({7}, 14)),
                                         b.constant(randomTensor({7}, 15, 0.5f, 2.f))});
  b.output(b.op("Conv", {b.op("Relu", {n}), b.constant(randomTensor({5, 7, 3, 3}, 16))}));
  std::vector<Tensor> in = {randomTensor({2, 3, 6, 6}, 17)};
  auto want = interp::run(g, in);
  runPipeline(g, buildPipeline({}));
  auto r = runCpu(g, in);
  expectClose(r.outputs[0], want[0], 1e-4, "concat + batchnorm, default pipeline");
  EXPECT_EQ(r.stats.kernelsCompiled, 1) << r.description;
  EXPECT_EQ(r.stats.nativeOps["transpose"], 2) << r.description;
  EXPECT_EQ(r.stats.fallbackNodes, 0) << r.description;
}

// Dilated convs over an image smaller than their reach (DeepLab's ASPP at low resolution): the window rows and
// columns that read only padding are cropped away at build, in either layout. A 5x5 at dilation 3 over 4x4 keeps
// its middle 3x3; a 3x3 at dilation 4 keeps its centre and runs as a 1x1 conv.
TEST_F(CpuBackendTest, DilatedConvsOverSmallImagesReadOnlyTheCellsInside) {
  for (bool nhwc : {true, false}) {
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", {DType::F32, {2, 8, 4, 4}});
    auto conv = [&](Value* in, int64_t k, int64_t dilation, int64_t pad, uint64_t seed) {
      return b.op("Conv", {in, b.constant(randomTensor({6, in == x ? 8 : 6, k, k}, seed)), b.constant(randomTensor({6}, seed + 1))},
                  {{"dilations", std::vector<int64_t>{dilation, dilation}},
                   {"pads", std::vector<int64_t>{pad, pad, pad, pad}}});
    };
    b.output(b.op("Relu", {conv(b.op("Relu", {conv(x, 5, 3, 6, 10)}), 3, 4, 4, 12)}));
    std::vector<Tensor> in = {randomTensor({2, 8, 4, 4}, 14)};
    auto want = interp::run(g, in);
    runPipeline(g, buildPipeline(nhwc ? PipelineOptions{} : PipelineOptions{.passes = {"none"}}));
    auto r = runCpu(g, in);
    const std::string layout = nhwc ? "nhwc" : "nchw";
    expectClose(r.outputs[0], want[0], 1e-4, "dilated convs, " + layout);
    EXPECT_NE(r.description.find("cropped from 5x5"), std::string::npos) << r.description;
    EXPECT_NE(r.description.find("conv " + layout + " 1x1 (sgemm) cropped from 3x3"), std::string::npos) << r.description;
    EXPECT_EQ(r.stats.fallbackNodes, 0) << r.description;
  }
}

TEST_F(CpuBackendTest, PowWithScalarExponentAndClip) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {4, 6}});
  Value* p = b.op("Pow", {x, b.constant(Tensor::scalarF32(2.0f))});
  Value* c = b.op("Clip", {p, b.constant(Tensor::scalarF32(0.5f)), b.constant(Tensor::scalarF32(3.0f))});
  b.output(c);
  auto r = expectMatchesInterp(g, {randomTensor({4, 6}, 4)});
  EXPECT_EQ(r.stats.kernelCalls, 2);
}

TEST_F(CpuBackendTest, MatMulShapesMatchInterp) {
  std::vector<std::pair<Shape_, Shape_>> cases = {
      {{4, 6}, {6, 5}}, {{2, 4, 6}, {6, 5}}, {{2, 4, 6}, {2, 6, 5}}, {{2, 1, 4, 6}, {3, 6, 5}}, {{4, 6}, {3, 6, 5}}};
  for (const auto& [sa, sb] : cases) {
    SCOPED_TRACE(Shape::fromStatic(sa).str() + " x " + Shape::fromStatic(sb).str());
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("a", {DType::F32, Shape::fromStatic(sa)});
    Value* y = b.input("b", {DType::F32, Shape::fromStatic(sb)});
    b.output(b.op("MatMul", {x, y}));
    auto r = expectMatchesInterp(g, {randomTensor(sa, 5), randomTensor(sb, 6)});
    EXPECT_EQ(r.stats.kernelCalls, 1);
    EXPECT_EQ(r.stats.fallbackNodes, 0);
  }
}

TEST_F(CpuBackendTest, GemmVariantsMatchInterp) {
  struct Case {
    int transA, transB;
    float alpha, beta;
    Shape_ c;  // empty vector with useC=false: no C
    bool useC;
  };
  std::vector<Case> cases = {{0, 0, 1, 1, {}, false}, {0, 1, 1, 1, {5}, true},   {1, 0, 0.5f, 2, {4, 5}, true},
                             {1, 1, 2, 0.5f, {1, 5}, true}, {0, 0, 1, 1, {4, 1}, true}};
  for (const auto& c : cases) {
    SCOPED_TRACE(std::to_string(c.transA) + std::to_string(c.transB) + " C" + Shape::fromStatic(c.c).str());
    Graph g;
    GraphBuilder b(g);
    Shape_ sa = c.transA ? Shape_{6, 4} : Shape_{4, 6}, sb = c.transB ? Shape_{5, 6} : Shape_{6, 5};
    Value* x = b.input("a", {DType::F32, Shape::fromStatic(sa)});
    Value* w = b.constant(randomTensor(sb, 7), "w");
    std::vector<Value*> ins = {x, w};
    if (c.useC) ins.push_back(b.constant(randomTensor(c.c, 8), "c"));
    b.output(b.op("Gemm", ins, {{"transA", int64_t(c.transA)}, {"transB", int64_t(c.transB)}, {"alpha", c.alpha},
                                {"beta", c.beta}}));
    auto r = expectMatchesInterp(g, {randomTensor(sa, 9)});
    EXPECT_EQ(r.stats.kernelCalls, 1);
  }
}

// Two models compiled from one graph share its weights (the harness compiles a program again for each layout
// epoch and releases the old one after): releasing one leaves the other's weights registered as constants, so
// its GEMMs keep their packed copies instead of packing the weights on every run.
TEST_F(CpuBackendTest, ReleasingOneOfTwoModelsOfAGraphKeepsTheOthersWeightsPacked) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {4, 32}});
  Value* w = b.constant(randomTensor({32, 48}, 13), "w");
  b.output(b.op("Relu", {b.op("MatMul", {x, w})}));
  const void* weights = w->constant().rawData();
  std::vector<Tensor> in = {randomTensor({4, 32}, 14)};
  auto first = createBackend("cpu")->compile(g);
  auto second = createBackend("cpu")->compile(g);
  EXPECT_TRUE(ukernels::isRegisteredConstant(weights));
  first.reset();
  EXPECT_TRUE(ukernels::isRegisteredConstant(weights)) << "the first model took the second one's registration";
  expectClose(second->run(in)[0], interp::run(g, in)[0], 1e-5, "the second model");
  second.reset();
  EXPECT_FALSE(ukernels::isRegisteredConstant(weights));
}

// ---- fused regions ----

std::unique_ptr<Graph> elementwiseChain() {
  auto g = std::make_unique<Graph>();
  GraphBuilder b(*g);
  Value* x = b.input("x", {DType::F32, {8, 16}});
  Value* s = b.constant(randomTensor({16}, 10), "scale");
  Value* t = b.op("Mul", {x, s});
  t = b.op("Add", {t, b.constant(randomTensor({8, 1}, 11), "shift")});
  Value* gelu = b.op("Mul", {t, b.op("Add", {b.op("Erf", {b.op("Div", {t, b.constant(Tensor::scalarF32(1.41421356f))})}),
                                              b.constant(Tensor::scalarF32(1.0f))})});
  Value* y = b.op("Sigmoid", {b.op("Tanh", {gelu})});
  b.output(b.op("Sub", {y, b.op("Exp", {b.op("Neg", {x})})}));
  return g;
}

TEST_F(CpuBackendTest, FusedElementwiseRegionIsOneKernel) {
  auto g = elementwiseChain();
  auto inputs = std::vector<Tensor>{randomTensor({8, 16}, 12)};
  auto want = interp::run(*g, inputs);
  PipelineOptions o;
  o.passes = {"fuse-elementwise"};
  runPipeline(*g, buildPipeline(o));
  ASSERT_EQ(g->nodes().size(), 1u);
  const Node& fused = *g->nodes()[0];
  ASSERT_EQ(fused.op(), "Fused");
  ASSERT_EQ(fused.attrString("kind", ""), "elementwise");
  auto r = runCpu(*g, inputs);
  expectClose(r.outputs[0], want[0], 1e-5, "fused");
  EXPECT_EQ(r.stats.kernelCalls, 1);
  EXPECT_EQ(r.stats.fallbackNodes, 0);

  // One linalg.generic computes the whole body; bufferization adds no buffer.
  auto stages = codegen::kernelStages({&fused});
  ASSERT_GE(stages.size(), 5u);
  EXPECT_EQ(countOf(stageModule(stages, "built"), "linalg.generic"), 1) << stageModule(stages, "built");
  EXPECT_EQ(countOf(stageModule(stages, "bufferize"), "memref.alloc"), 0) << stageModule(stages, "bufferize");
}

TEST_F(CpuBackendTest, EpilogueRegionIsOneKernel) {
  auto g = std::make_unique<Graph>();
  GraphBuilder b(*g);
  Value* x = b.input("x", {DType::F32, {2, 5, 12}});
  Value* r0 = b.input("res", {DType::F32, {2, 5, 8}});
  Value* mm = b.op("MatMul", {x, b.constant(randomTensor({12, 8}, 13), "w")});
  // Tanh: an epilogue the SGEMM does not apply itself (a bias, residual and Relu it would: no compiled kernel).
  Value* y = b.op("Tanh", {b.op("Add", {b.op("Add", {mm, b.constant(randomTensor({8}, 14), "bias")}), r0})});
  b.output(y);
  auto inputs = std::vector<Tensor>{randomTensor({2, 5, 12}, 15), randomTensor({2, 5, 8}, 16)};
  auto want = interp::run(*g, inputs);
  PipelineOptions o;
  o.passes = {"fuse-epilogues"};
  runPipeline(*g, buildPipeline(o));
  ASSERT_EQ(g->nodes().size(), 1u);
  ASSERT_EQ(g->nodes()[0]->attrString("kind", ""), "epilogue");
  // With the SGEMM microkernel the MatMul is a native call and the epilogue one compiled kernel after it;
  // without, the whole region is one generated kernel: the contraction, then one generic.
  auto r = runCpu(*g, inputs);
  expectClose(r.outputs[0], want[0], 1e-5, "epilogue");
  EXPECT_EQ(r.stats.kernelCalls, 1);
  EXPECT_EQ(r.stats.nativeCalls, 1);
  auto generated = runCpu(*g, inputs, "cpu?ukernels=off");
  expectClose(generated.outputs[0], want[0], 1e-5, "epilogue, ukernels off");
  EXPECT_EQ(generated.stats.kernelCalls, 1);
  EXPECT_EQ(generated.stats.nativeCalls, 0);
  codegen::CodegenOptions noMicrokernels;
  noMicrokernels.disabled.insert("ukernels");
  auto stages = codegen::kernelStages({g->nodes()[0].get()}, noMicrokernels);
  EXPECT_EQ(countOf(stageModule(stages, "built"), "linalg.matmul"), 1) << stageModule(stages, "built");
  EXPECT_EQ(countOf(stageModule(stages, "built"), "linalg.generic"), 1) << stageModule(stages, "built");
  EXPECT_EQ(countOf(stageModule(stages, "bufferize"), "memref.alloc"), 0) << stageModule(stages, "bufferize");
}

TEST_F(CpuBackendTest, KernelCacheReusesIdenticalNodes) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {4, 16}});
  for (int i = 0; i < 3; ++i) x = b.op("Relu", {b.op("MatMul", {x, b.constant(randomTensor({16, 16}, 20 + i))})});
  b.output(x);
  auto r = expectMatchesInterp(g, {randomTensor({4, 16}, 30)});
  EXPECT_EQ(r.stats.kernelCalls, 6);
  EXPECT_EQ(r.stats.kernelsCompiled, 2);
  EXPECT_EQ(r.stats.kernelsReused, 4);
  EXPECT_NE(r.description.find("6 kernels compiled (2 distinct)"), std::string::npos) << r.description;
}

TEST_F(CpuBackendTest, OperandAliasingIsPartOfTheKernelKey) {
  // Mul(x, x) compiles to one argument read twice; Mul(a, b) of the same types must not reuse it.
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {2, 8}});
  Value* y = b.input("y", {DType::F32, {2, 8}});
  b.output(b.op("Mul", {x, x}));
  b.output(b.op("Mul", {x, y}));
  auto r = expectMatchesInterp(g, {randomTensor({2, 8}, 50), randomTensor({2, 8}, 51)});
  EXPECT_EQ(r.stats.kernelsCompiled, 2);
}

// ---- NHWC regions: native microkernels (conv, pooling) ----

// Native microkernel calls whose kind (NativeKernel::describe) mentions `what`.
int64_t nativeCallsOf(const codegen::CpuStats& stats, const std::string& what) {
  int64_t n = 0;
  for (const auto& [kind, count] : stats.nativeOps)
    if (kind.find(what) != std::string::npos) n += count;
  return n;
}

// Runs the graph `body` makes after the pipeline of `options`; on cpu it must
// match interp on the unoptimized graph.
CpuRun expectOptimizedMatches(const std::function<void(GraphBuilder&, Value*)>& body, const Shape_& in,
                              const PipelineOptions& options, const std::string& backendSpec = "cpu") {
  auto make = [&] {
    auto g = std::make_unique<Graph>();
    GraphBuilder b(*g);
    body(b, b.input("x", {DType::F32, Shape::fromStatic(in)}));
    return g;
  };
  auto reference = make();
  auto g = make();
  runPipeline(*g, buildPipeline(options));
  std::vector<Tensor> inputs = {randomTensor(in, 60)};
  auto want = interp::run(*reference, inputs);
  CpuRun r = runCpu(*g, inputs, backendSpec);
  EXPECT_EQ(r.outputs.size(), want.size());
  for (size_t i = 0; i < want.size() && i < r.outputs.size(); ++i) expectClose(r.outputs[i], want[i], 1e-4, "optimized");
  return r;
}

// The two layouts a window op runs in: NHWC in convert-layout's region, NCHW with no pass.
std::vector<std::pair<std::string, PipelineOptions>> bothLayouts() {
  PipelineOptions layoutOnly, none;
  layoutOnly.only = {"convert-layout"};
  none.passes = {"none"};
  return {{"nhwc", layoutOnly}, {"nchw", none}};
}

struct ConvCase {
  int64_t cin, cout, k, stride, pad, dilation, group;
  bool bias;
  std::string str() const {
    return "conv " + std::to_string(cin) + "->" + std::to_string(cout) + " k" + std::to_string(k) + " s" +
           std::to_string(stride) + " p" + std::to_string(pad) + " d" + std::to_string(dilation) + " g" +
           std::to_string(group);
  }
  // The Conv of this case on x, with `spatial` window dims.
  Value* on(GraphBuilder& b, Value* x, size_t spatial = 2) const {
    std::vector<int64_t> wshape = {cout, cin / group};
    wshape.resize(2 + spatial, k);
    std::vector<Value*> ins = {x, b.constant(randomTensor(wshape, 61))};
    if (bias) ins.push_back(b.constant(randomTensor({cout}, 62)));
    auto each = [&](int64_t v, size_t n) { return std::vector<int64_t>(n, v); };
    return b.op("Conv", ins,
                {{"kernel_shape", each(k, spatial)}, {"strides", each(stride, spatial)},
                 {"pads", each(pad, 2 * spatial)}, {"dilations", each(dilation, spatial)}, {"group", group}});
  }
};

const std::vector<ConvCase>& convCases() {
  static const std::vector<ConvCase> cases = {
      {3, 8, 3, 1, 1, 1, 1, true},   {8, 16, 1, 1, 0, 1, 1, true},   {8, 16, 1, 2, 0, 1, 1, false},
      {4, 6, 5, 2, 2, 1, 1, true},   {6, 6, 3, 1, 1, 1, 6, true},    {6, 6, 3, 2, 1, 1, 6, false},
      {5, 7, 3, 1, 2, 2, 1, true},   {4, 4, 7, 1, 3, 1, 4, true},
      // depthwise in 16-channel vector blocks: whole, with a leftover, strided, dilated
      {32, 32, 3, 1, 1, 1, 32, true}, {20, 20, 3, 2, 1, 1, 20, true}, {16, 16, 5, 1, 2, 2, 16, false},
      {17, 17, 3, 1, 0, 1, 17, true},
      // grouped: 3 groups, 1x1 in 4 groups, depthwise with a channel multiplier, 16-lane blocks over groups of 8
      {6, 9, 3, 1, 1, 1, 3, true},   {8, 8, 1, 1, 0, 1, 4, false},   {4, 8, 3, 2, 1, 1, 4, true},
      {24, 24, 3, 1, 1, 1, 3, true}};
  return cases;
}

TEST_F(CpuBackendTest, ConvVariantsRunNativeKernelsInBothLayouts) {
  for (const auto& [layout, options] : bothLayouts())
    for (const ConvCase& c : convCases()) {
      SCOPED_TRACE(layout + " " + c.str());
      auto r = expectOptimizedMatches([&](GraphBuilder& b, Value* x) { b.output(c.on(b, x)); }, {2, c.cin, 9, 11},
                                      options);
      EXPECT_EQ(nativeCallsOf(r.stats, "conv " + layout), 1) << r.description;
      EXPECT_EQ(r.stats.fallbackNodes, 0) << r.description;
    }
}

// The conv (with its epilogue) ran as one compiled kernel: no microkernel call, nothing on the interpreter.
void expectOneCompiledConvKernel(const CpuRun& r) {
  EXPECT_EQ(nativeCallsOf(r.stats, "conv"), 0) << r.description;
  EXPECT_EQ(r.stats.kernelCalls, 1) << r.description;
  EXPECT_EQ(r.stats.fallbackNodes, 0) << r.description;
}

TEST_F(CpuBackendTest, ConvVariantsCompileThroughMlirWithMicrokernelsOff) {
  // cpu?ukernels=off: every Conv is a compiled kernel (bias, then one contraction generic per window cell),
  // in both layouts (NHWC: inside the region's transposes), and matches interp.
  for (const auto& [layout, options] : bothLayouts())
    for (const ConvCase& c : convCases()) {
      SCOPED_TRACE(layout + " " + c.str());
      auto r = expectOptimizedMatches([&](GraphBuilder& b, Value* x) { b.output(c.on(b, x)); }, {2, c.cin, 9, 11},
                                      options, "cpu?ukernels=off");
      expectOneCompiledConvKernel(r);
    }
}

TEST_F(CpuBackendTest, ConvWithEpilogueIsOneCompiledKernelWithMicrokernelsOff) {
  // Conv + residual Add + Sigmoid in one fuse-epilogue region: one kernel, the epilogue on the accumulator.
  PipelineOptions fuse;
  fuse.only = {"fuse-epilogues"};
  const ConvCase c{6, 6, 3, 1, 1, 1, 2, true};
  auto r = expectOptimizedMatches(
      [&](GraphBuilder& b, Value* x) { b.output(b.op("Sigmoid", {b.op("Add", {c.on(b, x), x})})); }, {2, 6, 7, 5},
      fuse, "cpu?ukernels=off");
  expectOneCompiledConvKernel(r);
}

TEST_F(CpuBackendTest, OneAndThreeDimensionalConvsCompile) {
  // The microkernels run a 1-D conv as a 2-D one of height 1 and a dense 3-D conv through the GEMM; a grouped
  // 3-D conv, and every conv under ukernels=off, is a compiled window generic.
  PipelineOptions none;
  none.passes = {"none"};
  for (const std::string backend : {"cpu", "cpu?ukernels=off"})
    for (const ConvCase& c : {ConvCase{4, 6, 3, 1, 1, 1, 1, true}, ConvCase{6, 6, 3, 2, 2, 2, 3, false}}) {
      SCOPED_TRACE(backend + " " + c.str());
      const bool microkernels = backend == "cpu";
      auto conv1d = expectOptimizedMatches([&](GraphBuilder& b, Value* x) { b.output(c.on(b, x, 1)); },
                                           {2, c.cin, 13}, none, backend);
      if (microkernels)
        EXPECT_EQ(nativeCallsOf(conv1d.stats, "conv ncw"), 1) << conv1d.description;
      else
        expectOneCompiledConvKernel(conv1d);
      auto conv3d = expectOptimizedMatches([&](GraphBuilder& b, Value* x) { b.output(c.on(b, x, 3)); },
                                           {1, c.cin, 5, 6, 7}, none, backend);
      if (microkernels && c.group == 1)
        EXPECT_EQ(nativeCallsOf(conv3d.stats, "conv ncdhw"), 1) << conv3d.description;
      else
        expectOneCompiledConvKernel(conv3d);
      EXPECT_EQ(conv1d.stats.fallbackNodes + conv3d.stats.fallbackNodes, 0);
    }
}

// ConvTranspose's native kernel is 2-D and a microkernel; a 1-D or 3-D one, and any under ukernels=off, is
// legalized into a Conv over its input with zeros between the elements (codegen/Legalize.h): every geometry of
// test::convTransposeCases() and a Relu after it, no pass and the default pipeline (the two fused: the region's
// body legalized), nothing on the interpreter.
TEST_F(CpuBackendTest, ConvTransposeWithoutItsNativeKernelIsAConvOverZeros) {
  PipelineOptions none;
  none.passes = {"none"};
  const std::vector<test::ConvTransposeCase> cases = test::convTransposeCases();
  for (const std::string backend : {"cpu", "cpu?ukernels=off"})
    for (size_t i = 0; i < cases.size(); ++i)
      for (const PipelineOptions& pipeline : {none, PipelineOptions{}}) {
        SCOPED_TRACE(backend + " ConvTranspose case " + std::to_string(i) + (pipeline.passes.empty() ? "" : " no pass"));
        auto r = expectOptimizedMatches(
            [&](GraphBuilder& b, Value* x) { b.output(b.op("Relu", {test::convTranspose(b, x, cases[i])})); }, cases[i].x,
            pipeline, backend);
        EXPECT_EQ(r.stats.fallbackNodes, 0) << r.description;
        const bool native = backend == "cpu" && cases[i].x.size() == 4;
        EXPECT_EQ(nativeCallsOf(r.stats, "ConvTranspose nchw (sgemm + col2im)"), native ? 1 : 0) << r.description;
        EXPECT_EQ(r.stats.legalized, native ? 0 : 1) << r.description;
      }
}

TEST_F(CpuBackendTest, PoolingRunsNativeKernelsInBothLayouts) {
  using Attrs = std::map<std::string, Attribute>;
  std::vector<std::pair<std::string, Attrs>> pools = {
      {"MaxPool", {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}},
                   {"pads", std::vector<int64_t>{1, 1, 1, 1}}}},
      {"MaxPool", {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}},
                   {"ceil_mode", int64_t(1)}}},
      {"AveragePool", {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}},
      {"AveragePool", {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                       {"count_include_pad", int64_t(1)}}},
      {"GlobalAveragePool", {}}};
  for (const auto& [layout, options] : bothLayouts())
  for (const auto& [op, attrs] : pools) {
    SCOPED_TRACE(layout + " " + op);
    auto r = expectOptimizedMatches([&](GraphBuilder& b, Value* x) { b.output(b.op(op, {x}, attrs)); },
                                    {2, 5, 9, 11}, options);
    EXPECT_EQ(nativeCallsOf(r.stats, "Pool " + layout), 1) << r.description;
    EXPECT_EQ(r.stats.fallbackNodes, 0) << "the boundary transposes are native too: " << r.description;
  }
}

TEST_F(CpuBackendTest, ConvEpiloguesOfAddAndClampRunInsideTheMicrokernel) {
  // y1 = Relu(Conv1(x) + b1); y2 = Clip(Conv2(y1) + b2 + y1, 0, 6) (a residual, MobileNet's Relu6); after
  // the default pipeline two epilogue regions whose bias, residual and clamp the conv microkernel applies
  // itself: no compiled kernel at all.
  using Ints = std::vector<int64_t>;
  std::map<std::string, Attribute> attrs = {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}};
  auto r = expectOptimizedMatches(
      [&](GraphBuilder& b, Value* x) {
        Value* y1 = b.op("Relu", {b.op("Conv", {x, b.constant(randomTensor({8, 8, 3, 3}, 63)),
                                                 b.constant(randomTensor({8}, 64))}, attrs)});
        Value* y2 = b.op("Conv", {y1, b.constant(randomTensor({8, 8, 3, 3}, 65)), b.constant(randomTensor({8}, 66))},
                         attrs);
        Tensor lo(DType::F32, {}), hi(DType::F32, {});
        lo.data<float>()[0] = 0.f, hi.data<float>()[0] = 0.5f;  // cuts the range of the random data
        b.output(b.op("Clip", {b.op("Add", {y2, y1}), b.constant(lo), b.constant(hi)}));
      },
      {2, 8, 6, 6}, {});
  EXPECT_EQ(nativeCallsOf(r.stats, "conv"), 2) << r.description;
  EXPECT_EQ(nativeCallsOf(r.stats, "+ add + clamp"), 1) << r.description;
  EXPECT_EQ(r.stats.kernelCalls, 0) << r.description;
}

// y1 = activation(Conv3x3(x) + b) over 8 channels, y2 = DepthwiseConv3x3(y1) + b2 (weights from seeds
// seed..seed+3): the two conv paths (an SGEMM, direct) with an epilogue each.
std::pair<Value*, Value*> activatedConvThenDepthwise(GraphBuilder& b, Value* x, const std::string& activation,
                                                    uint64_t seed) {
  using Ints = std::vector<int64_t>;
  std::map<std::string, Attribute> attrs = {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}};
  Value* conv =
      b.op("Conv", {x, b.constant(randomTensor({8, 8, 3, 3}, seed)), b.constant(randomTensor({8}, seed + 1))}, attrs);
  // SiLU as exporters write it: x * Sigmoid(x).
  Value* y1 = activation == "SiLU" ? b.op("Mul", {conv, b.op("Sigmoid", {conv})}) : b.op(activation, {conv});
  attrs["group"] = int64_t(8);
  Value* y2 = b.op("Conv", {y1, b.constant(randomTensor({8, 1, 3, 3}, seed + 2)),
                            b.constant(randomTensor({8}, seed + 3))}, attrs);
  return {y1, y2};
}

// y1 = first(Conv(x) + b) (an SGEMM over the input pixels: indirect in NHWC, im2col in NCHW); y2 = last(DepthwiseConv(y1) + y1) (the direct kernel, a
// residual first): after the default pipeline, with and without convert-layout, each activation applied by
// its microkernel (described "+ <firstName>" and "+ add + <lastName>") and no compiled kernel.
void expectActivationsInsideTheMicrokernels(const std::string& first, const std::function<Value*(GraphBuilder&, Value*)>& last,
                                            uint64_t seed, const std::string& firstName, const std::string& lastName) {
  PipelineOptions nchw;
  nchw.disable = {"convert-layout"};
  for (const auto& [layout, options] :
       {std::pair{std::string("nhwc"), PipelineOptions{}}, std::pair{std::string("nchw"), nchw}}) {
    SCOPED_TRACE(layout);
    auto r = expectOptimizedMatches(
        [&](GraphBuilder& b, Value* x) {
          auto [y1, y2] = activatedConvThenDepthwise(b, x, first, seed);
          b.output(last(b, b.op("Add", {y2, y1})));
        },
        {2, 8, 6, 6}, options);
    const std::string method = layout == "nhwc" ? "indirect sgemm" : "im2col + sgemm";
    EXPECT_EQ(nativeCallsOf(r.stats, "conv " + layout + " (" + method + ") + " + firstName), 1) << r.description;
    EXPECT_EQ(nativeCallsOf(r.stats, "depthwise conv " + layout + " (direct) + add + " + lastName), 1) << r.description;
    EXPECT_EQ(r.stats.kernelCalls, 0) << r.description;
  }
}

TEST_F(CpuBackendTest, HardSwishAndHardSigmoidEpiloguesRunInsideTheMicrokernel) {
  // MobileNetV3's activations; the HardSigmoid with its own alpha and beta.
  expectActivationsInsideTheMicrokernels(
      "HardSwish",
      [](GraphBuilder& b, Value* v) { return b.op("HardSigmoid", {v}, {{"alpha", 0.3f}, {"beta", 0.4f}}); }, 71,
      "hardswish", "hardsigmoid");
}

TEST_F(CpuBackendTest, SiluAndSigmoidEpiloguesRunInsideTheMicrokernel) {
  // EfficientNet's SiLU, written x * Sigmoid(x), and a Sigmoid.
  expectActivationsInsideTheMicrokernels(
      "SiLU", [](GraphBuilder& b, Value* v) { return b.op("Sigmoid", {v}); }, 73, "silu", "sigmoid");
}

TEST_F(CpuBackendTest, MatMulAndGemmEpiloguesRunInsideTheSgemmOrAfterItOverThreads) {
  // A transformer's Linear layers: MatMul of [2, 37, 48] rows by a [48, 40] weight + bias + Erf-GELU (the bias
  // in the SGEMM's register tiles, the GELU over each finished block), then a Gemm (B transposed, C one value
  // per column) + Relu and a MatMul + residual + Relu (in the register tiles). Beside them the epilogues the
  // SGEMM does not take, each one compiled kernel after it, in place, in slabs over the threads: a Gemm +
  // LeakyRelu (the SGEMM adds C) and a MatMul + bias + Tanh-GELU. Against the interpreter.
  auto linear = [](GraphBuilder& b, Value* x, int64_t n, uint64_t seed) {
    return b.op("Add", {b.op("MatMul", {x, b.constant(randomTensor({48, n}, seed))}),
                        b.constant(randomTensor({n}, seed + 1))});
  };
  auto r = expectOptimizedMatches(
      [&](GraphBuilder& b, Value* x) {
        Value* t = linear(b, x, 40, 91);
        Value* gelu = b.op("Mul", {b.op("Mul", {t, b.constant(Tensor::scalarF32(0.5f))}),
                                   b.op("Add", {b.op("Erf", {b.op("Div", {t, b.constant(Tensor::scalarF32(1.41421356f))})}),
                                                b.constant(Tensor::scalarF32(1.0f))})});
        Value* rows = b.op("Reshape", {gelu, b.constant(Tensor::vectorI64({74, 40}))});
        Value* g = b.op("Relu", {b.op("Gemm", {rows, b.constant(randomTensor({40, 40}, 93)), b.constant(randomTensor({40}, 94))},
                                      {{"transB", int64_t(1)}})});
        b.output(b.op("Relu", {b.op("Add", {b.op("MatMul", {g, b.constant(randomTensor({40, 40}, 95))}), g})}));
        b.output(b.op("LeakyRelu", {b.op("Gemm", {rows, b.constant(randomTensor({40, 40}, 96)),
                                                  b.constant(randomTensor({40}, 97))}, {{"transB", int64_t(1)}})},
                      {{"alpha", 0.1f}}));
        // GPT-2's GELU: x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
        Value* u = linear(b, x, 24, 98);
        Value* inner = b.op("Mul", {b.op("Add", {u, b.op("Mul", {b.op("Pow", {u, b.constant(Tensor::scalarF32(3.f))}),
                                                                  b.constant(Tensor::scalarF32(0.044715f))})}),
                                    b.constant(Tensor::scalarF32(0.7978845608f))});
        b.output(b.op("Mul", {b.op("Mul", {u, b.constant(Tensor::scalarF32(0.5f))}),
                              b.op("Add", {b.op("Tanh", {inner}), b.constant(Tensor::scalarF32(1.0f))})}));
      },
      {2, 37, 48}, {});
  EXPECT_EQ(nativeCallsOf(r.stats, "matmul (sgemm) + bias + gelu"), 1) << r.description;
  EXPECT_EQ(nativeCallsOf(r.stats, "gemm (sgemm) + bias + clamp"), 1) << r.description;
  EXPECT_EQ(nativeCallsOf(r.stats, "matmul (sgemm) + add + clamp"), 1) << r.description;
  EXPECT_EQ(nativeCallsOf(r.stats, "gemm (sgemm) + bias"), 2) << r.description;  // the Relu's, the LeakyRelu's
  EXPECT_EQ(nativeCallsOf(r.stats, "matmul (sgemm)"), 3) << r.description;
  EXPECT_EQ(r.stats.kernelCalls, 2) << r.description;  // the LeakyRelu; the Tanh-GELU's bias and body
}

TEST_F(CpuBackendTest, OtherConvEpiloguesAreOneCompiledInPlaceKernel) {
  // Tanh is not the microkernel's: the conv call writes the region's output, then ONE compiled generic
  // updates it in place. The residual after the depthwise conv is added in the microkernel's registers.
  auto r = expectOptimizedMatches(
      [&](GraphBuilder& b, Value* x) {
        auto [y1, y2] = activatedConvThenDepthwise(b, x, "Tanh", 67);
        b.output(b.op("Add", {y2, y1}));
      },
      {2, 8, 6, 6}, {});
  EXPECT_EQ(nativeCallsOf(r.stats, "conv"), 2) << r.description;
  EXPECT_EQ(nativeCallsOf(r.stats, "depthwise conv nhwc (direct) + add"), 1) << r.description;
  EXPECT_EQ(r.stats.kernelCalls, 1) << r.description;
}

TEST_F(CpuBackendTest, ElementwiseKernelsRunOnSlabsOfTheirSplitDim) {
  // Elementwise kernels take their split dim (the first of extent 2 or more: dim 0, or the channels of a
  // batch-1 tensor) as a dynamic size and run on slabs of it from several threads: extents that do not
  // divide evenly, operands spanning the split dim or broadcast along it (a row vector, a column of the same
  // rank, a per-channel operand of lower rank, a scalar), one region of several ops, and a tensor below the
  // threshold.
  for (std::vector<int64_t> shape : {std::vector<int64_t>{37, 1031}, {5, 3, 4099}, {3, 5}, {1, 97, 41, 13},
                                     {1, 1, 3, 20011}}) {
    SCOPED_TRACE(Shape::fromStatic(shape).str());
    Graph g;
    GraphBuilder b(g);
    std::vector<int64_t> column = shape, row(shape.begin() + 1, shape.end());
    for (size_t i = 1; i < column.size(); ++i) column[i] = 1;
    // [extent of the split dim, 1, ...]: a lower-rank operand cut along its own dim 0.
    auto split = std::find_if(shape.begin(), shape.end(), [](int64_t d) { return d >= 2; });
    std::vector<int64_t> channel(split, shape.end());
    std::fill(channel.begin() + 1, channel.end(), 1);
    Value* x = b.input("x", {DType::F32, Shape::fromStatic(shape)});
    Value* y = b.input("y", {DType::F32, Shape::fromStatic(shape)});
    Value* t = b.op("Mul", {b.op("Add", {x, b.constant(randomTensor(row, 81))}), b.constant(randomTensor(column, 82))});
    t = b.op("Mul", {t, b.constant(randomTensor(channel, 85))});
    Value* u = b.op("Tanh", {b.op("Sub", {t, y})});
    b.output(b.op("Add", {u, b.constant(Tensor::scalarF32(0.5f))}));
    PipelineOptions fuse;
    fuse.only = {"fuse-elementwise"};
    std::vector<Tensor> in = {randomTensor(shape, 83), randomTensor(shape, 84)};
    for (bool fused : {false, true}) {  // one kernel per op, then one region
      if (fused) runPipeline(g, buildPipeline(fuse));
      auto r = expectMatchesInterp(g, in, 1e-5);
      EXPECT_EQ(r.stats.kernelCalls, fused ? 1 : 6) << r.description;
      EXPECT_EQ(codegen::analyzeKernel(*g.nodes().back(), {})->splitDim, split - shape.begin());
      EXPECT_EQ(r.stats.fallbackNodes, 0) << r.description;
    }
  }
}

TEST_F(CpuBackendTest, ElementwiseKernelsRunAPlaneAsOneLoop) {
  // The collapse stage merges a 7x7 plane into one dim of 49 in x and the output when every operand reads
  // the plane whole or not at all: per channel (unit dims dropped first, at either rank), per pixel, at batch
  // 1 (channels are the split dim) and 2. An operand that reads a row without the plane's other dim keeps the
  // dims apart. With the stage on and off the kernel agrees with interp.
  struct Case {
    std::vector<int64_t> x, other;
    bool merged;
  };
  for (const Case& c : {Case{{1, 6, 7, 7}, {6, 1, 1}, true}, Case{{2, 6, 7, 7}, {7, 7}, true},
                        Case{{1, 6, 7, 7}, {1, 6, 1, 1}, true}, Case{{1, 6, 7, 7}, {6, 1, 7}, false}}) {
    SCOPED_TRACE(Shape::fromStatic(c.x).str() + " * " + Shape::fromStatic(c.other).str());
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", {DType::F32, Shape::fromStatic(c.x)});
    b.output(b.op("Sigmoid", {b.op("Mul", {x, b.constant(randomTensor(c.other, 91))})}));
    PipelineOptions fuse;
    fuse.only = {"fuse-elementwise"};
    runPipeline(g, buildPipeline(fuse));
    ASSERT_EQ(g.nodes().size(), 1u);
    std::string collapsed = stageModule(codegen::kernelStages({g.nodes()[0].get()}), "collapse");
    EXPECT_EQ(countOf(collapsed, "[2, 3]] : memref<"), c.merged ? 2 : 0) << collapsed;
    std::vector<Tensor> in = {randomTensor(c.x, 92, -6.0f, 6.0f)};
    auto want = interp::run(g, in);
    for (const std::string backend : {"cpu", "cpu?collapse=off"}) expectClose(runCpu(g, in, backend).outputs[0], want[0], 1e-5, backend);
  }
}

TEST_F(CpuBackendTest, ProfileTimesEveryStepByKind) {
  // cpu?profile=on: one row per kind of step, with its calls per run; plain cpu reports nothing.
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {4, 8}});
  Value* h = b.op("Relu", {b.op("MatMul", {x, b.constant(randomTensor({8, 8}, 71))})});
  b.output(b.op("Softmax", {b.op("Transpose", {h}, {{"perm", std::vector<int64_t>{1, 0}}})}));
  std::vector<Tensor> in = {randomTensor({4, 8}, 72)};
  auto profiled = createBackend("cpu?profile=on")->compile(g);
  for (int i = 0; i < 3; ++i) {
    expectClose(profiled->run(in)[0], interp::run(g, in)[0], 1e-5, "profiled");
    // The first run (weights packed, buffers faulted in) is reported alone, then left out.
    if (i == 0) {
      EXPECT_NE(profiled->profile().find("profile over 1 runs (the first alone)"), std::string::npos);
    }
  }
  std::string p = profiled->profile();
  EXPECT_NE(p.find("profile over 2 runs after the first"), std::string::npos) << p;
  EXPECT_NE(p.find("in 4 steps"), std::string::npos) << p;
  for (const char* kind : {"compiled MatMul", "compiled Relu", "transpose", "Softmax rows"})
    EXPECT_NE(p.find(kind), std::string::npos) << kind << " missing from\n" << p;
  auto plain = createBackend("cpu")->compile(g);
  plain->run(in);
  EXPECT_EQ(plain->profile(), "");
  EXPECT_THROW(createBackend("cpu?profile=maybe"), friction::Error);
}

TEST_F(CpuBackendTest, ProfileAllNamesEveryStep) {
  // profile=on names the 12 slowest steps; profile=all every one of a chain of 14 MatMuls.
  Graph g;
  GraphBuilder b(g);
  Value* h = b.input("x", {DType::F32, {4, 8}});
  for (int i = 0; i < 14; ++i) h = b.op("MatMul", {h, b.constant(randomTensor({8, 8}, 80 + i))});
  b.output(h);
  std::vector<Tensor> in = {randomTensor({4, 8}, 79)};
  for (auto [spec, named] : {std::pair{"cpu?profile=on", 12}, std::pair{"cpu?profile=all", 14}}) {
    auto model = createBackend(spec)->compile(g);
    expectClose(model->run(in)[0], interp::run(g, in)[0], 1e-4, spec);
    const std::string p = model->profile();
    const size_t slowest = p.find("slowest steps:");
    ASSERT_NE(slowest, std::string::npos) << p;
    int lines = 0;
    for (size_t at = p.find('\n', slowest); at != std::string::npos && at + 1 < p.size(); at = p.find('\n', at + 1))
      lines += p.compare(at + 1, 8, "        ") == 0;  // a step's line, indented under the heading
    EXPECT_EQ(lines, named) << spec << "\n" << p;
  }
}

TEST_F(CpuBackendTest, ProfileNamesEachPatternInstanceByItsOwnNodes) {
  // dedup-patterns makes the four MatMul -> Relu blocks instances of one shared body, named after the first;
  // the profile still names every instance's steps after its own nodes.
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {8, 32}});
  std::vector<std::string> relus;
  for (int i = 0; i < 4; ++i) {
    relus.push_back("block" + std::to_string(i) + "/relu");
    x = b.op("Relu", {b.op("MatMul", {x, b.constant(randomTensor({32, 32}, 60 + i))})}, {}, relus.back());
  }
  b.output(x);
  std::vector<Tensor> in = {randomTensor({8, 32}, 59)};
  auto want = interp::run(g, in);
  runPipeline(g, buildPipeline(PipelineOptions{}));
  int instances = 0;
  for (const auto& n : g.nodes()) instances += n->attrs().count("pattern") > 0;
  ASSERT_GE(instances, 2) << "no pattern instances to name";
  auto model = createBackend("cpu?profile=all")->compile(g);
  expectClose(model->run(in)[0], want[0], 1e-4, "patterns");
  const std::string p = model->profile();
  for (const std::string& relu : relus) EXPECT_NE(p.find(relu), std::string::npos) << relu << " missing from\n" << p;
}

TEST_F(CpuBackendTest, CompileEachMeasuresEveryKernel) {
  // cpu?compile=each: one module per distinct kernel, whose phases are its own; the calls add up.
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {4, 8}});
  Value* h = b.op("Relu", {b.op("MatMul", {x, b.constant(randomTensor({8, 8}, 73))})});
  b.output(b.op("Relu", {b.op("Add", {h, x})}));
  std::vector<Tensor> in = {randomTensor({4, 8}, 74)};
  for (const char* spec : {"cpu?compile=each", "cpu"}) {
    SCOPED_TRACE(spec);
    auto model = createBackend(spec)->compile(g);
    expectClose(model->run(in)[0], interp::run(g, in)[0], 1e-5, spec);
    const auto& stats = *codegen::cpuStats(*model);
    ASSERT_EQ(stats.kernels.size(), 3u) << model->description();  // MatMul, Relu (both calls), Add
    int64_t calls = 0;
    for (const auto& k : stats.kernels) {
      calls += k.calls;
      EXPECT_TRUE(k.compiled) << k.kernel;
      bool each = std::string(spec) == "cpu?compile=each";
      EXPECT_EQ(k.buildMs >= 0 && k.lowerMs > 0 && k.jitMs > 0, each) << k.kernel;
    }
    EXPECT_EQ(calls, stats.kernelCalls);
    EXPECT_EQ(model->profile().find("compile per kernel") != std::string::npos, std::string(spec) == "cpu?compile=each");
  }
  EXPECT_THROW(createBackend("cpu?compile=later"), friction::Error);
}

TEST_F(CpuBackendTest, TransposeRunsNative) {
  // Generic permutations, batched 2-D ones after merging dims (NCHW <-> NHWC), unit dims, no-ops.
  using Dims = std::vector<int64_t>;
  for (const Dims& shape : {Dims{2, 3, 4, 5}, Dims{1, 3, 1, 37}})
    for (const Dims& perm : std::vector<Dims>{{0, 2, 1, 3}, {0, 2, 3, 1}, {0, 3, 1, 2}, {3, 2, 1, 0}, {0, 1, 2, 3}, {}}) {
      SCOPED_TRACE("shape " + Shape::fromStatic(shape).str() + " perm " + Shape::fromStatic(perm).str());
      Graph g;
      GraphBuilder b(g);
      Value* x = b.input("x", {DType::F32, Shape::fromStatic(shape)});
      std::map<std::string, Attribute> attrs;
      if (!perm.empty()) attrs["perm"] = perm;  // empty: ONNX's default, reversed dims
      b.output(b.op("Transpose", {x}, attrs));
      auto r = expectMatchesInterp(g, {randomTensor(shape, 75)}, 0);
      EXPECT_EQ(nativeCallsOf(r.stats, "transpose"), 1) << r.description;
    }
}

TEST_F(CpuBackendTest, SoftmaxAndLayerNormRunRowKernels) {
  struct RowCase {
    std::string op;
    int64_t axis;
  };
  for (const auto& [op, axis] : std::vector<RowCase>{{"Softmax", -1}, {"LogSoftmax", 2}, {"LayerNormalization", -1},
                                                     {"LayerNormalization", 1}}) {
    for (bool regions : {false, true}) {
      SCOPED_TRACE(op + " axis " + std::to_string(axis) + (regions ? " in a reduction region" : " alone"));
      auto make = [&, op = op, axis = axis] {
        auto g = std::make_unique<Graph>();
        GraphBuilder b(*g);
        Value* x = b.input("x", {DType::F32, {2, 3, 37}});
        std::vector<Value*> ins = {x};
        if (op == "LayerNormalization") {
          Shape_ normalized = axis == 1 ? Shape_{3, 37} : Shape_{37};
          ins.push_back(b.constant(randomTensor(normalized, 70)));
          ins.push_back(b.constant(randomTensor(normalized, 71)));
        }
        b.output(b.op(op, ins, {{"axis", axis}}));
        return g;
      };
      auto reference = make();
      auto g = make();
      PipelineOptions o;
      o.passes = regions ? std::vector<std::string>{"fuse-reductions"} : std::vector<std::string>{"none"};
      runPipeline(*g, buildPipeline(o));
      std::vector<Tensor> inputs = {randomTensor({2, 3, 37}, 72, -5, 5)};
      auto want = interp::run(*reference, inputs);
      CpuRun r = runCpu(*g, inputs);
      expectClose(r.outputs[0], want[0], 1e-5, op);
      EXPECT_EQ(r.stats.nativeCalls, 1) << r.description;
      EXPECT_EQ(r.stats.fallbackNodes, 0) << r.description;
    }
  }
}

TEST_F(CpuBackendTest, PlanMemoryPlacesIntermediatesInOneArena) {
  // A chain of compiled kernels: with plan-memory its intermediates share one
  // arena (slots reused along the chain); without it, none is placed.
  auto make = [] {
    auto g = std::make_unique<Graph>();
    GraphBuilder b(*g);
    Value* x = b.input("x", {DType::F32, {8, 32}});
    for (int i = 0; i < 4; ++i) x = b.op("Relu", {b.op("MatMul", {x, b.constant(randomTensor({32, 32}, 80 + i))})});
    b.output(x);
    return g;
  };
  std::vector<Tensor> inputs = {randomTensor({8, 32}, 90)};
  auto want = interp::run(*make(), inputs);
  for (bool plan : {true, false}) {
    SCOPED_TRACE(plan ? "with plan-memory" : "without plan-memory");
    auto g = make();
    PipelineOptions o;
    o.disable = {"dedup-patterns"};  // else the chain becomes pattern instances (the next test)
    if (!plan) o.disable.push_back("plan-memory");
    runPipeline(*g, buildPipeline(o));
    CpuRun r = runCpu(*g, inputs);
    expectClose(r.outputs[0], want[0], 1e-5, "chain");
    if (plan) {
      EXPECT_GE(r.stats.arenaValues, 3) << r.description;
      EXPECT_LT(r.stats.arenaBytes, r.stats.arenaValues * 8 * 32 * 4) << "slots are reused";
    } else {
      EXPECT_EQ(r.stats.arenaValues, 0) << r.description;
    }
    // A second run through the same arena gives the same result.
    auto model = createBackend("cpu")->compile(*g);
    model->run(inputs);
    expectClose(model->run(inputs)[0], want[0], 1e-5, "second run");
  }
}

// dedup-patterns makes the blocks (MatMul 32 -> 64, Relu, MatMul 64 -> 32, Relu) instances of one body, each run
// as a program of its own; their intermediates get the body's plan, in one block all instances share.
TEST_F(CpuBackendTest, PatternInstancesShareTheirBodysPlannedBlock) {
  auto make = [] {
    auto g = std::make_unique<Graph>();
    GraphBuilder b(*g);
    Value* x = b.input("x", {DType::F32, {8, 32}});
    for (int i = 0; i < 3; ++i) {
      x = b.op("Relu", {b.op("MatMul", {x, b.constant(randomTensor({32, 64}, 100 + i))})});
      x = b.op("Relu", {b.op("MatMul", {x, b.constant(randomTensor({64, 32}, 110 + i))})});
    }
    b.output(x);
    return g;
  };
  std::vector<Tensor> inputs = {randomTensor({8, 32}, 120)};
  auto want = interp::run(*make(), inputs);
  auto g = make();
  auto records = runPipeline(*g, buildPipeline(PipelineOptions{}));
  ASSERT_GE(records.back().stats["pattern bodies planned"], 1);
  auto model = createBackend("cpu")->compile(*g);
  const std::string d = model->description();
  EXPECT_NE(d.find("pattern bodies' arena"), std::string::npos) << d;
  model->run(inputs);
  expectClose(model->run(inputs)[0], want[0], 1e-5, "second run through the shared block");
  CpuRun r = runCpu(*g, inputs);
  EXPECT_GE(r.stats.patternArenaValues, 3) << "one intermediate per instance: " << r.description;
  EXPECT_EQ(r.stats.patternArenaBytes, 8 * 64 * 4) << "one block, as large as one body's plan";
}

// plan-memory places a contiguous Concat's inputs inside its result: their kernels write there, and the
// Concat's copy skips what is already in place; the outputs still match the interpreter, on a second run too.
TEST_F(CpuBackendTest, ConcatInputsPlacedInPlaceGiveTheSameResult) {
  auto make = [] {
    auto g = std::make_unique<Graph>();
    GraphBuilder b(*g);
    Value* x = b.input("x", {DType::F32, {1, 16, 8, 8}});
    Value* a = b.op("Relu", {x}), *s = b.op("Sigmoid", {x}), *t = b.op("Tanh", {x});
    b.output(b.op("Neg", {b.op("Concat", {a, s, t, a}, {{"axis", int64_t(1)}})}));  // a twice: placed once
    return g;
  };
  std::vector<Tensor> inputs = {randomTensor({1, 16, 8, 8}, 91)};
  auto want = interp::run(*make(), inputs);
  auto g = make();
  auto records = runPipeline(*g, buildPipeline(PipelineOptions{.passes = {"plan-memory"}}));
  EXPECT_EQ(records.back().stats["concat inputs in place"], 3);
  auto model = createBackend("cpu")->compile(*g);
  for (int run = 0; run < 2; ++run) expectClose(model->run(inputs)[0], want[0], 1e-5, "run " + std::to_string(run));
}

// ---- zoo models ----

struct ZooCase {
  std::string spec;
  bool passes;
};

class CpuZoo : public CpuBackendTest, public ::testing::WithParamInterface<ZooCase> {};

TEST_P(CpuZoo, MatchesInterp) {
  const auto& [spec, withPasses] = GetParam();
  auto reference = zoo::build(zoo::parseSpec(spec));
  bindInputDims(*reference, batchBindings(*reference, 2));
  auto g = zoo::build(zoo::parseSpec(spec));
  bindInputDims(*g, batchBindings(*g, 2));
  PipelineOptions o;
  if (!withPasses) o.passes = {"none"};
  runPipeline(*g, buildPipeline(o));
  auto inputs = seededInputs(*reference, 42);
  auto want = interp::run(*reference, inputs);
  CpuRun r = runCpu(*g, inputs);
  std::cout << spec << (withPasses ? " (default passes): " : " (no passes): ") << r.description << "\n";
  ASSERT_EQ(r.outputs.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) expectClose(r.outputs[i], want[i], 1e-4, spec);
  EXPECT_GT(r.stats.kernelCalls, 0);
}

INSTANTIATE_TEST_SUITE_P(Zoo, CpuZoo,
                         ::testing::Values(ZooCase{"mlp?depth=3", true}, ZooCase{"mlp?depth=3", false},
                                           ZooCase{"vit?depth=2&width=16&resolution=16&patch=8&heads=2", true},
                                           ZooCase{"vit?depth=2&width=16&resolution=16&patch=8&heads=2", false},
                                           ZooCase{"resnet?depth=2&width=8&resolution=16", true},
                                           ZooCase{"resnet?depth=2&width=8&resolution=16", false}),
                         [](const ::testing::TestParamInfo<ZooCase>& info) {
                           std::string n = info.param.spec.substr(0, info.param.spec.find('?'));
                           return n + (info.param.passes ? "_default" : "_none");
                         });

// Issue-level check: every archetype, every leave-one-out configuration (and
// all passes, none), batch 1 and 2, matches the interpreter within 1e-4, and
// nothing runs on the interpreter's kernels. One
// backend per archetype, so identical kernels across configurations compile once.
class CpuLeaveOneOut : public CpuBackendTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(CpuLeaveOneOut, EveryConfigurationMatchesInterp) {
  const std::string& spec = GetParam();
  auto backend = createBackend("cpu");
  std::vector<PipelineOptions> configs(2);
  configs[1].passes = {"none"};
  for (const PassInfo& p : allPasses()) {
    PipelineOptions o;
    o.disable = {p.name};
    configs.push_back(o);
  }
  for (int64_t batch : {1, 2}) {
    auto reference = zoo::build(zoo::parseSpec(spec));
    bindInputDims(*reference, batchBindings(*reference, batch));
    auto inputs = seededInputs(*reference, 7);
    auto want = interp::run(*reference, inputs);
    for (const auto& config : configs) {
      std::string label = spec + " batch " + std::to_string(batch) + " " +
                          (config.disable.empty() ? (config.passes.empty() ? "default" : "none")
                                                  : "without " + config.disable[0]);
      SCOPED_TRACE(label);
      auto g = zoo::build(zoo::parseSpec(spec));
      bindInputDims(*g, batchBindings(*g, batch));
      runPipeline(*g, buildPipeline(config));
      auto model = backend->compile(*g);
      auto got = model->run(inputs);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) expectClose(got[i], want[i], 1e-4, label);
      EXPECT_EQ(model->interpNodes(), 0) << "every node compiled or native: " << model->description();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, CpuLeaveOneOut,
                         ::testing::Values("resnet?depth=2&width=8&resolution=16",
                                           "resnet?depth=4&width=8&resolution=32&block=bottleneck",
                                           "mobilenetv2?depth=3&width=8&resolution=16",
                                           "convnext?depth=2&width=8&resolution=16",
                                           "vit?depth=2&width=16&resolution=16&patch=8&heads=2",
                                           "mixer?depth=2&width=16&resolution=16&patch=8", "mlp?depth=3"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param.substr(0, info.param.find('?'));
                           return n + "_" + std::to_string(info.index);
                         });

}  // namespace
}  // namespace friction
