#include "tests/passes/PassTestUtil.h"

using namespace friction;
using namespace friction::testing;

namespace {

// ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add, as older exporters
// write LayerNorm. `extra` adds lines before the outputs.
std::string decomposedLayerNorm(const std::string& extra = "") {
  return R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  const %two : f32[] = hex"00000040"
  const %eps : f32[] = hex"acc52737"
  const %gamma : f32[4] = hex"0000803f000000400000803f00000040"
  const %beta : f32[4] = hex"000000000000803f000000000000803f"
  %m : f32[N,1] = ReduceMean(%x) {axes = [-1]} @"mean"
  %d : f32[N,4] = Sub(%x, %m) @"sub"
  %p : f32[N,4] = Pow(%d, %two) @"pow"
  %v : f32[N,1] = ReduceMean(%p) {axes = [-1]} @"var"
  %ve : f32[N,1] = Add(%v, %eps) @"add_eps"
  %s : f32[N,1] = Sqrt(%ve) @"sqrt"
  %n : f32[N,4] = Div(%d, %s) @"div"
  %g : f32[N,4] = Mul(%n, %gamma) @"scale"
  %y : f32[N,4] = Add(%g, %beta) @"shift"
  output %y
)" + extra + "}\n";
}

}  // namespace

TEST(FuseReductions, DecomposedLayerNormBecomesOneRegion) {
  auto stats = expectPassRewrites("fuse-reductions", decomposedLayerNorm(), R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  const %two : f32[] = hex"00000040"
  const %eps : f32[] = hex"acc52737"
  const %gamma : f32[4] = hex"0000803f000000400000803f00000040"
  const %beta : f32[4] = hex"000000000000803f000000000000803f"
  %y : f32[N,4] = Fused(%x, %two, %eps, %gamma, %beta) {body = graph "reduction" opset 17 {
    input %x : f32[N,4]
    input %two : f32[]
    input %eps : f32[]
    input %gamma : f32[4]
    input %beta : f32[4]
    %m : f32[N,1] = ReduceMean(%x) {axes = [-1]} @"mean"
    %d : f32[N,4] = Sub(%x, %m) @"sub"
    %p : f32[N,4] = Pow(%d, %two) @"pow"
    %v : f32[N,1] = ReduceMean(%p) {axes = [-1]} @"var"
    %ve : f32[N,1] = Add(%v, %eps) @"add_eps"
    %s : f32[N,1] = Sqrt(%ve) @"sqrt"
    %n : f32[N,4] = Div(%d, %s) @"div"
    %g : f32[N,4] = Mul(%n, %gamma) @"scale"
    %y : f32[N,4] = Add(%g, %beta) @"shift"
    output %y
  }, kind = "reduction"} @"f"
  output %y
}
)");
  EXPECT_EQ(stats["regions"], 1);
  EXPECT_EQ(stats["nodes fused"], 9);
}

TEST(FuseReductions, KeepsDecomposedLayerNormWithAnEscapingValue) {
  // x - mean is also a graph output: the composite is not a closed kernel.
  std::string g = decomposedLayerNorm("  output %d\n");
  EXPECT_EQ(expectPassRewrites("fuse-reductions", g, g)["regions"], 0);
}

TEST(FuseReductions, WrapsSoftmaxAndLayerNormalization) {
  auto stats = expectPassRewrites("fuse-reductions", R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  const %gamma : f32[4] = hex"0000803f000000400000803f00000040"
  %s : f32[N,4] = Softmax(%x) {axis = -1} @"softmax"
  %y : f32[N,4] = LayerNormalization(%s, %gamma) {axis = -1} @"ln"
  output %y
}
)",
                                   R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  const %gamma : f32[4] = hex"0000803f000000400000803f00000040"
  %s : f32[N,4] = Fused(%x) {body = graph "reduction" opset 17 {
    input %x : f32[N,4]
    %s : f32[N,4] = Softmax(%x) {axis = -1} @"softmax"
    output %s
  }, kind = "reduction"} @"f1"
  %y : f32[N,4] = Fused(%s, %gamma) {body = graph "reduction" opset 17 {
    input %s : f32[N,4]
    input %gamma : f32[4]
    %y : f32[N,4] = LayerNormalization(%s, %gamma) {axis = -1} @"ln"
    output %y
  }, kind = "reduction"} @"f2"
  output %y
}
)");
  EXPECT_EQ(stats["regions"], 2);
}

TEST(FuseReductions, SameNumericsOnEveryModel) { expectSameNumericsOnAllModels({"fuse-reductions"}); }

TEST(FuseReductions, VitRegionsAndExport) {
  // Per block: two LayerNorms, one Softmax, one GELU; plus the final LayerNorm.
  auto records = expectExportRoundTrip("vit?depth=2&width=16&resolution=16&patch=8&heads=2", {"fuse-reductions"});
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].stats["regions"], 2 * 4 + 1);
  EXPECT_EQ(records[0].stats["nodes fused"], 2 * (1 + 1 + 1 + 5) + 1);
}
