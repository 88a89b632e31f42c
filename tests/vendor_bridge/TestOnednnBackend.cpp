// The `onednn` backend against the reference interpreter: every mapped op
// (NCHW and NHWC convolution, MatMul/Gemm, pools, eltwise, binary with
// broadcasting, Softmax, BatchNormalization, LayerNormalization), Fused
// epilogue regions with post-ops on and off, the unmapped-op fallback, and
// zoo models with the default pass pipeline and with no passes, batch 1 and 2.
// Tolerance: |got - want| <= rtol * |want| + rtol * 1e-2 * max|want|, rtol 1e-4
// (oneDNN reorders sums and uses its own exp/erf/tanh approximations).
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <random>

#include "frontend/zoo/Zoo.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Specialize.h"
#include "passes/PassManager.h"
#include "runtime/Inputs.h"
#include "runtime/interp/Interpreter.h"
#include "vendor_bridge/Bridges.h"
#include "vendor_bridge/onednn/OnednnBackend.h"
#include "tests/common/BackendTestUtil.h"

namespace friction {
namespace {

using test::expectClose;
using test::randomTensor;

using Dims = std::vector<int64_t>;
constexpr double kRtol = 1e-4;

struct DnnlRun {
  std::vector<Tensor> outputs;
  vendor::OnednnStats stats;
  std::string description;
};

DnnlRun runOnednn(const Graph& g, const std::vector<Tensor>& inputs, const std::string& spec = "onednn") {
  auto model = createBackend(spec)->compile(g);
  DnnlRun r;
  r.outputs = model->run(inputs);
  const vendor::OnednnStats* s = vendor::onednnStats(*model);
  EXPECT_NE(s, nullptr);
  if (s) r.stats = *s;
  r.description = model->description();
  return r;
}

DnnlRun expectMatchesInterp(const Graph& g, const std::vector<Tensor>& inputs, const std::string& spec = "onednn",
                            double rtol = kRtol) {
  auto want = interp::run(g, inputs);
  DnnlRun r = runOnednn(g, inputs, spec);
  EXPECT_EQ(r.outputs.size(), want.size());
  for (size_t i = 0; i < want.size() && i < r.outputs.size(); ++i)
    expectClose(r.outputs[i], want[i], rtol, spec + " output " + std::to_string(i));
  return r;
}

PipelineOptions testingExactly(std::vector<std::string> passes) {
  PipelineOptions o;
  o.passes = std::move(passes);
  return o;
}

class OnednnTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { vendor::registerVendorBridges(); }
};

TEST_F(OnednnTest, DescriptionNamesVersionAndOptions) {
  Graph g;
  GraphBuilder b(g);
  b.output(b.op("Relu", {b.input("x", {DType::F32, {4}})}));
  auto r = runOnednn(g, {randomTensor({4}, 1)}, "onednn?postops=off&threads=1");
  EXPECT_NE(r.description.find("oneDNN " + vendor::onednnVersion()), std::string::npos) << r.description;
  EXPECT_NE(r.description.find("\"postops\":\"off\""), std::string::npos) << r.description;
  EXPECT_NE(r.description.find("\"threads\":1"), std::string::npos) << r.description;
  EXPECT_EQ(vendor::onednnVersion().substr(0, 2), "2.");
  EXPECT_THROW(createBackend("onednn?postops=maybe"), Error);
  EXPECT_THROW(createBackend("onednn?fast=1"), Error);
  EXPECT_THROW(createBackend("onednn?threads=0"), Error);
}

TEST_F(OnednnTest, VendorSwitchIsPostops) {
  EXPECT_EQ(vendor::vendorSwitches("onednn"), std::vector<std::string>{"postops"});
  EXPECT_EQ(vendor::vendorSwitches("onednn?threads=2"), std::vector<std::string>{"postops"});
  EXPECT_EQ(vendor::withSwitchesOff("onednn", {"postops"}), "onednn?postops=off");
  EXPECT_EQ(vendor::withSwitchesOff("onednn?threads=2", {"postops"}), "onednn?threads=2&postops=off");
  EXPECT_EQ(vendor::withSwitchesOff("onednn", {}), "onednn");
  EXPECT_THROW(vendor::withSwitchesOff("onednn?postops=on", {"postops"}), Error);
  EXPECT_TRUE(vendor::vendorSwitches("cpu").empty());
}

TEST_F(OnednnTest, UnaryOpsAreEltwisePrimitives) {
  for (std::string op : {"Relu", "Neg", "Exp", "Tanh", "Sigmoid", "Sqrt", "Log", "Abs", "Reciprocal", "LeakyRelu",
                         "Elu", "Softplus", "HardSwish", "Clip"}) {
    SCOPED_TRACE(op);
    bool positive = op == "Sqrt" || op == "Log" || op == "Reciprocal";
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", {DType::F32, {3, 7}});
    std::vector<Value*> in = {x};
    if (op == "Clip") in = {x, b.constant(Tensor::scalarF32(-0.5f)), b.constant(Tensor::scalarF32(1.5f))};
    std::map<std::string, Attribute> attrs;
    if (op == "LeakyRelu" || op == "Elu") attrs["alpha"] = 0.3f;
    b.output(b.op(op, in, attrs));
    Tensor t = positive ? randomTensor({3, 7}, 1, 0.1f, 4) : randomTensor({3, 7}, 1, -6, 6);
    auto r = expectMatchesInterp(g, {t});
    EXPECT_EQ(r.stats.primitives, 1);
    EXPECT_EQ(r.stats.primitiveKinds["eltwise"], 1);
    EXPECT_EQ(r.stats.fallbackNodes, 0);
  }
}

TEST_F(OnednnTest, BinaryOpsWithBroadcasting) {
  // src0 must have the output's shape (commutative ops swap their operands); else the interpreter runs it.
  struct Case {
    Dims a, b;
  };
  std::vector<Case> cases = {{{4, 5}, {4, 5}}, {{4, 5}, {5}}, {{2, 3, 4}, {3, 1}}, {{5}, {4, 5}},
                             {{}, {2, 3}},     {{2, 3, 1, 4}, {3, 1, 1}}};
  for (std::string op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    for (const auto& c : cases) {
      SCOPED_TRACE(op + " " + Shape::fromStatic(c.a).str() + " " + Shape::fromStatic(c.b).str());
      Graph g;
      GraphBuilder b(g);
      Value* x = b.input("x", {DType::F32, Shape::fromStatic(c.a)});
      Value* y = b.input("y", {DType::F32, Shape::fromStatic(c.b)});
      b.output(b.op(op, {x, y}));
      Tensor ty = op == "Div" ? randomTensor(c.b, 3, 0.5f, 2) : randomTensor(c.b, 3);
      auto r = expectMatchesInterp(g, {randomTensor(c.a, 2), ty});
      bool commutative = op != "Sub" && op != "Div";
      Dims out = g.outputs()[0]->shape().staticDims();
      bool mapped = c.a == out || (commutative && c.b == out);
      EXPECT_EQ(r.stats.fallbackNodes, mapped ? 0 : 1) << r.description;
    }
  }
  // A constant operand is baked into the primitive.
  Graph g;
  GraphBuilder b(g);
  b.output(b.op("Mul", {b.input("x", {DType::F32, {2, 3}}), b.constant(randomTensor({3}, 4))}));
  auto r = expectMatchesInterp(g, {randomTensor({2, 3}, 5)});
  EXPECT_EQ(r.stats.primitiveKinds["binary"], 1);
}

TEST_F(OnednnTest, ConvVariants) {
  struct Case {
    Dims x, w;
    std::map<std::string, Attribute> attrs;
    bool bias;
  };
  std::vector<Case> cases = {
      {{1, 3, 8, 8}, {4, 3, 3, 3}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, true},
      {{2, 4, 9, 7}, {6, 4, 3, 3}, {{"strides", std::vector<int64_t>{2, 2}}}, false},
      {{1, 4, 8, 8}, {4, 1, 3, 3}, {{"group", int64_t(4)}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}, true},
      {{1, 4, 10, 10}, {6, 2, 3, 3}, {{"group", int64_t(2)}, {"dilations", std::vector<int64_t>{2, 2}}}, true},
      {{1, 3, 7, 7}, {5, 3, 1, 1}, {}, false},
      {{1, 2, 7, 7}, {3, 2, 3, 3}, {{"auto_pad", std::string("SAME_UPPER")}, {"strides", std::vector<int64_t>{2, 2}}}, true},
      {{2, 3, 11}, {4, 3, 3}, {{"pads", std::vector<int64_t>{1, 2}}}, true},
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    SCOPED_TRACE("case " + std::to_string(k));
    for (bool constWeights : {true, false}) {
      Graph g;
      GraphBuilder b(g);
      Value* x = b.input("x", {DType::F32, Shape::fromStatic(c.x)});
      Value* w = constWeights ? b.constant(randomTensor(c.w, 7)) : b.input("w", {DType::F32, Shape::fromStatic(c.w)});
      std::vector<Value*> in = {x, w};
      if (c.bias) in.push_back(b.constant(randomTensor({c.w[0]}, 8)));
      b.output(b.op("Conv", in, c.attrs));
      std::vector<Tensor> inputs = {randomTensor(c.x, 9)};
      if (!constWeights) inputs.push_back(randomTensor(c.w, 7));
      auto r = expectMatchesInterp(g, inputs);
      EXPECT_EQ(r.stats.primitiveKinds["convolution"], 1) << r.description;
      EXPECT_EQ(r.stats.fallbackNodes, 0) << r.description;
    }
  }
}

// A small CNN: conv (+BN) + relu + residual, pools, GAP. convert-layout makes its
// convs, BN and pools NHWC regions; they must run as single channels-last primitives.
std::unique_ptr<Graph> smallCnn(int64_t batch) {
  auto g = std::make_unique<Graph>();
  GraphBuilder b(*g);
  Value* x = b.input("x", {DType::F32, {batch, 3, 16, 16}});
  Value* c1 = b.op("Conv", {x, b.constant(randomTensor({8, 3, 3, 3}, 20, -0.5f, 0.5f)), b.constant(randomTensor({8}, 21))},
                   {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  Value* bn = b.op("BatchNormalization", {c1, b.constant(randomTensor({8}, 22, 0.5f, 1.5f)), b.constant(randomTensor({8}, 23)),
                                          b.constant(randomTensor({8}, 24)), b.constant(randomTensor({8}, 25, 0.5f, 2))});
  Value* r1 = b.op("Relu", {bn});
  Value* p1 = b.op("MaxPool", {r1}, {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}},
                                     {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  Value* c2 = b.op("Conv", {p1, b.constant(randomTensor({8, 8, 3, 3}, 26, -0.3f, 0.3f))},
                   {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  Value* a2 = b.op("Add", {c2, b.constant(randomTensor({1, 8, 1, 1}, 27))});
  Value* s2 = b.op("Add", {a2, p1});
  Value* r2 = b.op("Relu", {s2});
  Value* p2 = b.op("AveragePool", {r2}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}},
                                         {"ceil_mode", int64_t(1)}});
  Value* gap = b.op("GlobalAveragePool", {p2});
  Value* flat = b.op("Flatten", {gap});
  Value* fc = b.op("Gemm", {flat, b.constant(randomTensor({5, 8}, 28)), b.constant(randomTensor({5}, 29))},
                   {{"transB", int64_t(1)}});
  b.output(b.op("Softmax", {fc}, {{"axis", int64_t(-1)}}));
  return g;
}

TEST_F(OnednnTest, PoolsBatchNormAndNchwCnn) {
  auto g = smallCnn(2);
  auto inputs = seededInputs(*g, 30);
  auto r = expectMatchesInterp(*g, inputs, "onednn?postops=off");
  EXPECT_EQ(r.stats.primitiveKinds["pooling"], 3) << r.description;
  EXPECT_EQ(r.stats.primitiveKinds["batch_normalization"], 1) << r.description;
  EXPECT_EQ(r.stats.primitiveKinds["softmax"], 1) << r.description;
  EXPECT_EQ(r.stats.fallbackOps, (std::map<std::string, int64_t>{{"Flatten", 1}})) << r.description;
}

TEST_F(OnednnTest, NhwcRegionsAreChannelsLastPrimitives) {
  auto reference = smallCnn(2);
  auto g = smallCnn(2);
  runPipeline(*g, buildPipeline(testingExactly({"convert-layout"})));
  int regions = 0;
  for (const auto& n : g->nodes()) regions += n->op() == "Fused" && n->attrString("kind", "") == "nhwc";
  ASSERT_EQ(regions, 6);  // 2 Conv, BN, 2 pools, GAP
  auto inputs = seededInputs(*reference, 31);
  auto want = interp::run(*reference, inputs);
  for (const char* spec : {"onednn?postops=off", "onednn"}) {
    auto r = runOnednn(*g, inputs, spec);
    expectClose(r.outputs[0], want[0], kRtol, spec);
    EXPECT_EQ(r.stats.primitiveKinds["convolution"], 2) << r.description;
    EXPECT_EQ(r.stats.primitiveKinds["pooling"], 3) << r.description;
    EXPECT_EQ(r.stats.primitiveKinds["batch_normalization"], 1) << r.description;
    EXPECT_EQ(r.stats.fallbackOps.count("Fused"), 0u) << r.description;
  }
}

TEST_F(OnednnTest, MatMulAndGemmVariants) {
  std::vector<std::pair<Dims, Dims>> mm = {{{5, 7}, {7, 3}}, {{2, 5, 7}, {7, 3}}, {{2, 5, 7}, {2, 7, 3}},
                                           {{1, 5, 7}, {3, 7, 4}}, {{2, 3, 4, 6}, {6, 5}}};
  for (const auto& [sa, sb] : mm)
    for (bool constB : {true, false}) {
      SCOPED_TRACE("MatMul " + Shape::fromStatic(sa).str() + " " + Shape::fromStatic(sb).str());
      Graph g;
      GraphBuilder b(g);
      Value* x = b.input("a", {DType::F32, Shape::fromStatic(sa)});
      Value* w = constB ? b.constant(randomTensor(sb, 41)) : b.input("b", {DType::F32, Shape::fromStatic(sb)});
      b.output(b.op("MatMul", {x, w}));
      std::vector<Tensor> in = {randomTensor(sa, 40)};
      if (!constB) in.push_back(randomTensor(sb, 41));
      auto r = expectMatchesInterp(g, in);
      EXPECT_EQ(r.stats.primitiveKinds["matmul"], 1) << r.description;
    }
  struct G {
    int64_t ta, tb;
    float alpha, beta;
    Dims c;
    bool constB;
  };
  for (const G& c : std::vector<G>{{0, 0, 1, 1, {4}, true}, {1, 0, 1, 1, {3, 4}, true}, {0, 1, 0.5f, 2, {1, 4}, true},
                                    {1, 1, 1, 1, {}, false}, {0, 0, 1, 1, {3, 1}, false}, {0, 1, 2, 1, {}, false}}) {
    SCOPED_TRACE("Gemm ta=" + std::to_string(c.ta) + " tb=" + std::to_string(c.tb) + " alpha=" + std::to_string(c.alpha));
    Graph g;
    GraphBuilder b(g);
    Dims sa = c.ta ? Dims{6, 3} : Dims{3, 6}, sb = c.tb ? Dims{4, 6} : Dims{6, 4};
    Value* a = b.input("a", {DType::F32, Shape::fromStatic(sa)});
    Value* w = c.constB ? b.constant(randomTensor(sb, 43)) : b.input("b", {DType::F32, Shape::fromStatic(sb)});
    std::vector<Value*> in = {a, w};
    if (!c.c.empty()) in.push_back(b.constant(randomTensor(c.c, 44)));
    b.output(b.op("Gemm", in, {{"transA", c.ta}, {"transB", c.tb}, {"alpha", c.alpha}, {"beta", c.beta}}));
    std::vector<Tensor> inputs = {randomTensor(sa, 42)};
    if (!c.constB) inputs.push_back(randomTensor(sb, 43));
    auto r = expectMatchesInterp(g, inputs);
    // alpha != 1 needs a constant B to fold it into: else the interpreter runs it.
    bool mapped = c.alpha == 1 || c.constB;
    EXPECT_EQ(r.stats.primitiveKinds["matmul"], mapped ? 1 : 0) << r.description;
  }
}

TEST_F(OnednnTest, SoftmaxLayerNormAndGelu) {
  for (int64_t axis : {-1, 1, 0}) {
    for (const char* op : {"Softmax", "LogSoftmax"}) {
      Graph g;
      GraphBuilder b(g);
      b.output(b.op(op, {b.input("x", {DType::F32, {3, 4, 5}})}, {{"axis", axis}}));
      auto r = expectMatchesInterp(g, {randomTensor({3, 4, 5}, 50, -4, 4)});
      EXPECT_EQ(r.stats.fallbackNodes, 0) << r.description;
    }
  }
  for (int64_t axis : {-1, 1}) {
    for (bool bias : {true, false}) {
      Graph g;
      GraphBuilder b(g);
      Value* x = b.input("x", {DType::F32, {2, 3, 8}});
      Dims ss = axis == -1 ? Dims{8} : Dims{3, 8};
      std::vector<Value*> in = {x, b.constant(randomTensor(ss, 51))};
      if (bias) in.push_back(b.constant(randomTensor(ss, 52)));
      b.output(b.op("LayerNormalization", in, {{"axis", axis}, {"epsilon", 1e-5f}}));
      auto r = expectMatchesInterp(g, {randomTensor({2, 3, 8}, 53)});
      EXPECT_EQ(r.stats.primitiveKinds["layer_normalization"], 1) << r.description;
    }
  }
  // Erf-GELU, as PyTorch exports it: one gelu_erf eltwise.
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {4, 6}});
  Value* e = b.op("Erf", {b.op("Div", {x, b.constant(Tensor::scalarF32(float(std::sqrt(2.0))))})});
  Value* one = b.op("Add", {e, b.constant(Tensor::scalarF32(1.f))});
  b.output(b.op("Mul", {b.op("Mul", {x, one}), b.constant(Tensor::scalarF32(0.5f))}));
  auto r = expectMatchesInterp(g, {randomTensor({4, 6}, 54, -4, 4)});
  EXPECT_EQ(r.stats.primitives, 1) << r.description;
  EXPECT_EQ(r.stats.fallbackNodes, 0) << r.description;
}

TEST_F(OnednnTest, UnmappedOpsFallBackToInterp) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {2, 6}});
  Value* t = b.op("Transpose", {b.op("Relu", {x})}, {{"perm", std::vector<int64_t>{1, 0}}});
  b.output(b.op("Floor", {t}));
  auto r = expectMatchesInterp(g, {randomTensor({2, 6}, 60)});
  EXPECT_EQ(r.stats.primitives, 2);  // Relu, and Transpose as a reorder
  EXPECT_EQ(r.stats.primitiveKinds["reorder"], 1);
  EXPECT_EQ(r.stats.fallbackOps, (std::map<std::string, int64_t>{{"Floor", 1}}));
  EXPECT_NE(r.description.find("Floor x1"), std::string::npos) << r.description;
}

// Conv + bias + residual + Relu (NCHW and NHWC), MatMul + bias + GELU, Gemm + Relu:
// with postops=on each epilogue is ONE primitive.
std::unique_ptr<Graph> epilogueGraph() {
  auto g = std::make_unique<Graph>();
  GraphBuilder b(*g);
  Value* x = b.input("x", {DType::F32, {2, 4, 6, 6}});
  Value* c = b.op("Conv", {x, b.constant(randomTensor({4, 4, 3, 3}, 70, -0.4f, 0.4f))},
                  {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  Value* y = b.op("Relu", {b.op("Add", {b.op("Add", {c, b.constant(randomTensor({4, 1, 1}, 71))}), x})});
  Value* f = b.op("Reshape", {y, b.constant(Tensor::vectorI64({2, 36, 4}))});
  Value* m = b.op("MatMul", {f, b.constant(randomTensor({4, 8}, 72))});
  Value* mb = b.op("Add", {m, b.constant(randomTensor({8}, 73))});
  Value* e = b.op("Erf", {b.op("Mul", {mb, b.constant(Tensor::scalarF32(float(std::sqrt(0.5))))})});
  Value* gelu = b.op("Mul", {b.op("Mul", {mb, b.constant(Tensor::scalarF32(0.5f))}),
                             b.op("Add", {e, b.constant(Tensor::scalarF32(1.f))})});
  Value* flat = b.op("Reshape", {gelu, b.constant(Tensor::vectorI64({2, 288}))});
  Value* gm = b.op("Gemm", {flat, b.constant(randomTensor({288, 5}, 74, -0.1f, 0.1f)), b.constant(randomTensor({5}, 75))});
  b.output(b.op("Clip", {gm, b.constant(Tensor::scalarF32(-1.f)), b.constant(Tensor::scalarF32(1.f))}));
  return g;
}

void expectEpiloguesFused(const std::vector<std::string>& passes, int64_t wantFusedOn) {
  auto reference = epilogueGraph();
  auto g = epilogueGraph();
  if (!passes.empty()) runPipeline(*g, buildPipeline(testingExactly(passes)));
  auto inputs = seededInputs(*reference, 76);
  auto want = interp::run(*reference, inputs);
  auto on = runOnednn(*g, inputs, "onednn?postops=on");
  auto off = runOnednn(*g, inputs, "onednn?postops=off");
  expectClose(on.outputs[0], want[0], kRtol, "postops=on");
  expectClose(off.outputs[0], want[0], kRtol, "postops=off");
  EXPECT_EQ(on.stats.fusedEpilogues, wantFusedOn) << on.description;
  EXPECT_EQ(off.stats.fusedEpilogues, 0) << off.description;
  EXPECT_EQ(off.stats.postOps, 0) << off.description;
  EXPECT_LT(on.stats.primitives, off.stats.primitives) << on.description << "\n" << off.description;
  EXPECT_EQ(on.stats.fallbackNodes, off.stats.fallbackNodes);
  std::cout << "on:  " << on.description << "\noff: " << off.description << "\n";
}

TEST_F(OnednnTest, EpilogueChainsInUnfusedGraphBecomeOnePrimitive) { expectEpiloguesFused({}, 3); }
TEST_F(OnednnTest, FusedEpilogueRegionsBecomeOnePrimitive) { expectEpiloguesFused({"fuse-epilogues"}, 3); }
TEST_F(OnednnTest, NhwcEpilogueRegionsBecomeOnePrimitive) {
  expectEpiloguesFused({"convert-layout", "fuse-epilogues"}, 3);
}

TEST_F(OnednnTest, PostopsOnMakesFewerPrimitivesOnResnet) {
  auto g = zoo::build(zoo::parseSpec("resnet?depth=2&width=8&resolution=32"));
  bindInputDims(*g, batchBindings(*g, 1));
  runPipeline(*g, buildPipeline(PipelineOptions{}));
  auto inputs = seededInputs(*g, 77);
  auto on = runOnednn(*g, inputs, "onednn?postops=on");
  auto off = runOnednn(*g, inputs, "onednn?postops=off");
  EXPECT_GT(on.stats.fusedEpilogues, 0) << on.description;
  EXPECT_LT(on.stats.primitives, off.stats.primitives) << on.description << "\n" << off.description;
  expectClose(on.outputs[0], off.outputs[0], kRtol, "on vs off");
}

// ---- zoo models ----

struct ZooCase {
  std::string spec;
  bool passes;
  int64_t batch;
};

class OnednnZoo : public OnednnTest, public ::testing::WithParamInterface<ZooCase> {};

TEST_P(OnednnZoo, MatchesInterp) {
  const auto& [spec, withPasses, batch] = GetParam();
  auto reference = zoo::build(zoo::parseSpec(spec));
  bindInputDims(*reference, batchBindings(*reference, batch));
  auto g = zoo::build(zoo::parseSpec(spec));
  bindInputDims(*g, batchBindings(*g, batch));
  PipelineOptions o;
  if (!withPasses) o.passes = {"none"};
  runPipeline(*g, buildPipeline(o));
  auto inputs = seededInputs(*reference, 42);
  auto want = interp::run(*reference, inputs);
  for (const char* spec2 : {"onednn", "onednn?postops=off"}) {
    DnnlRun r = runOnednn(*g, inputs, spec2);
    std::cout << spec << (withPasses ? " (default passes)" : " (no passes)") << " batch " << batch << ": "
              << r.description << "\n";
    ASSERT_EQ(r.outputs.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) expectClose(r.outputs[i], want[i], kRtol, spec + " " + spec2);
    EXPECT_GT(r.stats.primitives, 0);
  }
}

std::vector<ZooCase> zooCases() {
  std::vector<ZooCase> r;
  for (const char* s : {"resnet?depth=2&width=8&resolution=32", "mobilenetv2?depth=3&width=8&resolution=16",
                        "convnext?depth=2&width=16&resolution=32", "vit?depth=2&width=16&resolution=16&patch=8&heads=2",
                        "mixer?depth=2&width=16&resolution=16&patch=8"})
    for (bool passes : {true, false})
      for (int64_t batch : {1, 2}) r.push_back({s, passes, batch});
  return r;
}

INSTANTIATE_TEST_SUITE_P(Zoo, OnednnZoo, ::testing::ValuesIn(zooCases()),
                         [](const ::testing::TestParamInfo<ZooCase>& info) {
                           std::string n = info.param.spec.substr(0, info.param.spec.find('?'));
                           return n + (info.param.passes ? "_default" : "_none") + "_b" + std::to_string(info.param.batch);
                         });

}  // namespace
}  // namespace friction
