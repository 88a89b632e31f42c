#include "tests/passes/PassTestUtil.h"

using namespace friction;
using namespace friction::testing;

namespace {
const char* kWeight = R"(hex"0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f")";
}

TEST(FuseElementwise, ChainBecomesOneRegion) {
  auto stats = expectPassRewrites("fuse-elementwise", R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  input %y : f32[N,1]
  const %c : f32[] = hex"00000040"
  %a : f32[N,4] = Relu(%x) @"relu"
  %b : f32[N,4] = Mul(%a, %c) @"mul"
  %s : f32[N,4] = Add(%b, %y) @"add"
  %t : f32[N,4] = Tanh(%s) @"tanh"
  output %t
}
)",
                                   R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  input %y : f32[N,1]
  const %c : f32[] = hex"00000040"
  %t : f32[N,4] = Fused(%x, %c, %y) {body = graph "elementwise" opset 17 {
    input %x : f32[N,4]
    input %c : f32[]
    input %y : f32[N,1]
    %a : f32[N,4] = Relu(%x) @"relu"
    %b : f32[N,4] = Mul(%a, %c) @"mul"
    %s : f32[N,4] = Add(%b, %y) @"add"
    %t : f32[N,4] = Tanh(%s) @"tanh"
    output %t
  }, kind = "elementwise"} @"f"
  output %t
}
)");
  EXPECT_EQ(stats["regions"], 1);
  EXPECT_EQ(stats["nodes fused"], 4);
}

TEST(FuseElementwise, ValueUsedOutsideBecomesARegionOutput) {
  expectPassRewrites("fuse-elementwise", std::string(R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  const %w : f32[4,4] = )") + kWeight + R"(
  %a : f32[N,4] = Relu(%x) @"relu"
  %b : f32[N,4] = Neg(%a) @"neg"
  %c : f32[N,4] = Exp(%b) @"exp"
  %m : f32[N,4] = MatMul(%a, %w) @"mm"
  output %c
  output %m
}
)",
                     std::string(R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  const %w : f32[4,4] = )") + kWeight + R"(
  %a : f32[N,4], %c : f32[N,4] = Fused(%x) {body = graph "elementwise" opset 17 {
    input %x : f32[N,4]
    %a : f32[N,4] = Relu(%x) @"relu"
    %b : f32[N,4] = Neg(%a) @"neg"
    %c : f32[N,4] = Exp(%b) @"exp"
    output %a
    output %c
  }, kind = "elementwise"} @"f"
  %m : f32[N,4] = MatMul(%a, %w) @"mm"
  output %c
  output %m
}
)");
}

TEST(FuseElementwise, RefusesARegionThatWouldCloseACycle) {
  // {relu, add} would feed the MatMul and consume its result.
  std::string g = std::string(R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  const %w : f32[4,4] = )") + kWeight + R"(
  %a : f32[N,4] = Relu(%x) @"relu"
  %m : f32[N,4] = MatMul(%a, %w) @"mm"
  %y : f32[N,4] = Add(%a, %m) @"add"
  output %y
}
)";
  auto stats = expectPassRewrites("fuse-elementwise", g, g);
  EXPECT_EQ(stats["regions"], 0);
  EXPECT_EQ(stats["joins rejected (cycle)"], 1);
}

TEST(FuseElementwise, LeavesSingleOpsAndConstantOnlyOpsAlone) {
  const char* g = R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  const %c : f32[] = hex"00000040"
  %k : f32[] = Neg(%c) @"neg_const"
  %y : f32[N,4] = Mul(%x, %k) @"mul"
  output %y
}
)";
  expectPassRewrites("fuse-elementwise", g, g);
}

TEST(FuseElementwise, SameNumericsOnEveryModel) { expectSameNumericsOnAllModels({"fuse-elementwise"}); }

TEST(FuseElementwise, ConvnextGeluAndLayerScaleRegions) {
  // Per block: bias Add + the five GELU ops (the Add's two uses are both
  // inside), and fc2's bias Add + layer-scale Mul.
  auto records = expectExportRoundTrip("convnext?depth=2&width=16&resolution=32", {"fuse-elementwise"});
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].stats["regions"], 4);
  EXPECT_EQ(records[0].stats["nodes fused"], 2 * (6 + 2));
  EXPECT_EQ(records[0].after.nodes, records[0].before.nodes - 2 * (6 + 2) + 4);
}

TEST(FuseElementwise, FullFusionPipelineExportsOnEveryZooModel) {
  for (const auto& spec : kNumericsModels) {
    if (spec.rfind("torch/", 0) == 0) continue;
    SCOPED_TRACE(spec);
    expectExportRoundTrip(spec, {"fold-batchnorm", "fuse-epilogues", "fuse-reductions", "fuse-elementwise"});
  }
}
