#include "tests/passes/PassTestUtil.h"
#include "tests/passes/PassTestUtil.h"

using namespace friction;
using namespace friction::testing;

TEST(EliminateCommonSubexpressions, MergesIdenticalNodes) {
  auto stats = expectPassRewrites("eliminate-common-subexpressions", R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  %a : f32[N,4] = Relu(%x) @"a"
  %b : f32[N,4] = Relu(%x) @"b"
  %y : f32[N,4] = Add(%a, %b) @"y"
  output %y
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  %a : f32[N,4] = Relu(%x) @"a"
  %y : f32[N,4] = Add(%a, %a) @"y"
  output %y
}
)");
  EXPECT_EQ(stats["nodes merged"], 1);
}

TEST(EliminateCommonSubexpressions, MergesDuplicatedChainsInOneSweep) {
  // Two copies of Transpose -> Softmax (e.g. the same attention mask computed twice).
  auto stats = expectPassRewrites("eliminate-common-subexpressions", R"(
graph "g" opset 17 {
  input %x : f32[N,3,4]
  %t1 : f32[N,4,3] = Transpose(%x) {perm = [0, 2, 1]} @"t1"
  %s1 : f32[N,4,3] = Softmax(%t1) {axis = -1} @"s1"
  %t2 : f32[N,4,3] = Transpose(%x) {perm = [0, 2, 1]} @"t2"
  %s2 : f32[N,4,3] = Softmax(%t2) {axis = -1} @"s2"
  %y : f32[N,4,3] = Mul(%s1, %s2) @"y"
  output %y
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f32[N,3,4]
  %t1 : f32[N,4,3] = Transpose(%x) {perm = [0, 2, 1]} @"t1"
  %s1 : f32[N,4,3] = Softmax(%t1) {axis = -1} @"s1"
  %y : f32[N,4,3] = Mul(%s1, %s1) @"y"
  output %y
}
)");
  EXPECT_EQ(stats["nodes merged"], 2);
}

TEST(EliminateCommonSubexpressions, KeepsNodesWithOtherAttributesOrInputs) {
  const char* text = R"(
graph "g" opset 17 {
  input %x : f32[N,3,3]
  input %z : f32[N,3,3]
  %a : f32[N,3,3] = Softmax(%x) {axis = -1} @"a"
  %b : f32[N,3,3] = Softmax(%x) {axis = 1} @"b"
  %c : f32[N,3,3] = Add(%x, %z) @"c"
  %d : f32[N,3,3] = Add(%z, %x) @"d"
  %e : f32[N,3,3] = Sum(%a, %b, %c, %d) @"e"
  output %e
}
)";
  auto stats = expectPassRewrites("eliminate-common-subexpressions", text, text);
  EXPECT_EQ(stats["nodes merged"], 0);
}

TEST(EliminateCommonSubexpressions, MergesIdenticalSmallConstants) {
  // c1 and c2 hold the same bytes: one goes, and then the two Adds are identical too.
  // z1 and z2 hold the same bytes with other dtypes: both stay.
  auto stats = expectPassRewrites("eliminate-common-subexpressions", R"(
graph "g" opset 17 {
  input %x : f32[N,2]
  input %i : i32[N,2]
  const %c1 : f32[2] = hex"0000803f00000040"
  const %c2 : f32[2] = hex"0000803f00000040"
  const %z1 : f32[1] = hex"00000000"
  const %z2 : i32[1] = hex"00000000"
  %a : f32[N,2] = Add(%x, %c1) @"a"
  %b : f32[N,2] = Add(%x, %c2) @"b"
  %c : f32[N,2] = Mul(%a, %b) @"c"
  %d : f32[N,2] = Add(%c, %z1) @"d"
  %e : i32[N,2] = Add(%i, %z2) @"e"
  output %d
  output %e
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f32[N,2]
  input %i : i32[N,2]
  const %c1 : f32[2] = hex"0000803f00000040"
  const %z1 : f32[1] = hex"00000000"
  const %z2 : i32[1] = hex"00000000"
  %a : f32[N,2] = Add(%x, %c1) @"a"
  %c : f32[N,2] = Mul(%a, %a) @"c"
  %d : f32[N,2] = Add(%c, %z1) @"d"
  %e : i32[N,2] = Add(%i, %z2) @"e"
  output %d
  output %e
}
)");
  EXPECT_EQ(stats["constants merged"], 1);
  EXPECT_EQ(stats["nodes merged"], 1);
}

TEST(EliminateCommonSubexpressions, MergesIdenticalConstantNodes) {
  expectPassRewrites("eliminate-common-subexpressions", R"(
graph "g" opset 17 {
  input %x : f32[2]
  %a : f32[2] = Constant() {value = tensor<f32[2]> hex"0000803f00000040"} @"a"
  %b : f32[2] = Constant() {value = tensor<f32[2]> hex"0000803f00000040"} @"b"
  %c : f32[2] = Add(%x, %a) @"c"
  %d : f32[2] = Mul(%c, %b) @"d"
  output %d
}
)",
                     R"(
graph "g" opset 17 {
  input %x : f32[2]
  %a : f32[2] = Constant() {value = tensor<f32[2]> hex"0000803f00000040"} @"a"
  %c : f32[2] = Add(%x, %a) @"c"
  %d : f32[2] = Mul(%c, %a) @"d"
  output %d
}
)");
}

TEST(EliminateCommonSubexpressions, KeepsDuplicatesThatAreGraphOutputs) {
  // Merging b into a would rename the second output.
  const char* text = R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  %a : f32[N,4] = Relu(%x) @"a"
  %b : f32[N,4] = Relu(%x) @"b"
  output %a
  output %b
}
)";
  expectPassRewrites("eliminate-common-subexpressions", text, text);
}

TEST(EliminateCommonSubexpressions, KeepsRegions) {
  const char* text = R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  %a : f32[N,4] = Fused(%x) {body = graph "r" opset 17 {
    input %x : f32[N,4]
    %r : f32[N,4] = Relu(%x) @"r"
    output %r
  }, kind = "elementwise"} @"a"
  %b : f32[N,4] = Fused(%x) {body = graph "r" opset 17 {
    input %x : f32[N,4]
    %r : f32[N,4] = Relu(%x) @"r"
    output %r
  }, kind = "elementwise"} @"b"
  %y : f32[N,4] = Add(%a, %b) @"y"
  output %y
}
)";
  expectPassRewrites("eliminate-common-subexpressions", text, text);
}

class EliminateCommonSubexpressionsNumerics : public ::testing::TestWithParam<std::string> {};

TEST_P(EliminateCommonSubexpressionsNumerics, MatchesUnoptimized) {
  auto build = modelBuilder(GetParam());
  expectSameNumerics(build, PipelineOptions{.passes = {"eliminate-common-subexpressions"}});
  expectSameNumericsSymbolic(build, {"eliminate-common-subexpressions"});
  // Folding makes many identical shape constants: the case constant merging is for.
  expectSameNumerics(build, PipelineOptions{.passes = {"fold-constants", "eliminate-common-subexpressions"}});
  expectSameNumericsSymbolic(build, {"fold-constants", "eliminate-common-subexpressions"});
}

INSTANTIATE_TEST_SUITE_P(Models, EliminateCommonSubexpressionsNumerics, ::testing::ValuesIn(kNumericsModels), testNameOf);
