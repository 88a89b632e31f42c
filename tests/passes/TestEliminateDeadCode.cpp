#include "tests/passes/PassTestUtil.h"

#include "frontend/zoo/Zoo.h"

using namespace friction;
using namespace friction::testing;

TEST(EliminateDeadCode, RemovesUnusedNodesAndInitializers) {
  auto stats = expectPassRewrites("eliminate-dead-code", R"(
graph "g" opset 17 {
  input %x : f32[2]
  const %unused : f32[1] = hex"0000803f"
  %a : f32[2] = Relu(%x) @"a"
  %dead : f32[2] = Add(%a, %unused) @"dead"
  %b : f32[2] = Neg(%a) @"b"
  output %b
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f32[2]
  %a : f32[2] = Relu(%x) @"a"
  %b : f32[2] = Neg(%a) @"b"
  output %b
}
)");
  EXPECT_EQ(stats["nodes removed"], 1);
  EXPECT_EQ(stats["initializers removed"], 1);
}

TEST(EliminateDeadCode, KeepsEverythingOnALiveModel) {
  expectSameNumerics([] { return zoo::build(zoo::parseSpec("resnet?depth=2&width=8&resolution=16")); },
                     PipelineOptions{.passes = {"eliminate-dead-code"}});
}
