#include "tests/passes/PassTestUtil.h"

using namespace friction;
using namespace friction::testing;

// Hex f32 constants (little endian): 0000803f = 1, 00000040 = 2,
// 00004040 = 3, 00008040 = 4. With ε = 0 and var = 4: s = γ/2 = 2,
// t = β - mean·s = 3 - 1·2 = 1, so w' = 2·2 = 4 and b' = 0·2 + 1 = 1.
TEST(FoldBatchnorm, FoldsIntoConvWeightsAndNewBias) {
  auto stats = expectPassRewrites("fold-batchnorm", R"(
graph "g" opset 17 {
  input %x : f32[N,1,4,4]
  const %w : f32[1,1,1,1] = hex"00000040"
  const %gamma : f32[1] = hex"00008040"
  const %beta : f32[1] = hex"00004040"
  const %mean : f32[1] = hex"0000803f"
  const %var : f32[1] = hex"00008040"
  %c : f32[N,1,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} @"conv"
  %y : f32[N,1,4,4] = BatchNormalization(%c, %gamma, %beta, %mean, %var) {epsilon = 0.0} @"bn"
  output %y
}
)",
                                   R"(
graph "g" opset 17 {
  input %x : f32[N,1,4,4]
  const %w2 : f32[1,1,1,1] = hex"00008040"
  const %b2 : f32[1] = hex"0000803f"
  %c : f32[N,1,4,4] = Conv(%x, %w2, %b2) {kernel_shape = [1, 1]} @"conv"
  output %c
}
)");
  EXPECT_EQ(stats["batchnorms folded"], 1);
}

TEST(FoldBatchnorm, MatMulGetsABiasAdd) {
  expectPassRewrites("fold-batchnorm", R"(
graph "g" opset 17 {
  input %x : f32[N,1]
  const %w : f32[1,1] = hex"00000040"
  const %gamma : f32[1] = hex"00008040"
  const %beta : f32[1] = hex"00004040"
  const %mean : f32[1] = hex"0000803f"
  const %var : f32[1] = hex"00008040"
  %m : f32[N,1] = MatMul(%x, %w) @"mm"
  %y : f32[N,1] = BatchNormalization(%m, %gamma, %beta, %mean, %var) {epsilon = 0.0} @"bn"
  output %y
}
)",
                     R"(
graph "g" opset 17 {
  input %x : f32[N,1]
  const %w2 : f32[1,1] = hex"00008040"
  const %b2 : f32[1] = hex"0000803f"
  %m : f32[N,1] = MatMul(%x, %w2) @"mm"
  %y : f32[N,1] = Add(%m, %b2) @"bn"
  output %y
}
)");
}

TEST(FoldBatchnorm, KeepsNonConstantParameters) {
  const char* g = R"(
graph "g" opset 17 {
  input %x : f32[N,1,4,4]
  input %gamma : f32[1]
  const %w : f32[1,1,1,1] = hex"00000040"
  const %beta : f32[1] = hex"00004040"
  const %mean : f32[1] = hex"0000803f"
  const %var : f32[1] = hex"00008040"
  %c : f32[N,1,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} @"conv"
  %y : f32[N,1,4,4] = BatchNormalization(%c, %gamma, %beta, %mean, %var) {epsilon = 0.0} @"bn"
  output %y
}
)";
  EXPECT_EQ(expectPassRewrites("fold-batchnorm", g, g)["batchnorms folded"], 0);
}

// A conv with other uses keeps its weights; the BN becomes y = x·2 + 1 per channel.
TEST(FoldBatchnorm, ConvWithOtherUsesGetsAScaleAndShift) {
  auto stats = expectPassRewrites("fold-batchnorm", R"(
graph "g" opset 17 {
  input %x : f32[N,1,4,4]
  const %w : f32[1,1,1,1] = hex"00000040"
  const %gamma : f32[1] = hex"00008040"
  const %beta : f32[1] = hex"00004040"
  const %mean : f32[1] = hex"0000803f"
  const %var : f32[1] = hex"00008040"
  %c : f32[N,1,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} @"conv"
  %y : f32[N,1,4,4] = BatchNormalization(%c, %gamma, %beta, %mean, %var) {epsilon = 0.0} @"bn"
  %z : f32[N,1,4,4] = Add(%y, %c) @"add"
  output %z
}
)",
                                   R"(
graph "g" opset 17 {
  input %x : f32[N,1,4,4]
  const %w : f32[1,1,1,1] = hex"00000040"
  const %s : f32[1,1,1] = hex"00000040"
  const %t : f32[1,1,1] = hex"0000803f"
  %c : f32[N,1,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} @"conv"
  %m : f32[N,1,4,4] = Mul(%c, %s) @"bn/scale"
  %y : f32[N,1,4,4] = Add(%m, %t) @"bn"
  %z : f32[N,1,4,4] = Add(%y, %c) @"add"
  output %z
}
)");
  EXPECT_EQ(stats["batchnorms folded"], 0);
  EXPECT_EQ(stats["batchnorms as channel scale and shift"], 1);
}

// DenseNet's step: a BN after a Concat becomes a per-channel Mul and Add over [C, 1, 1] constants.
TEST(FoldBatchnorm, BatchnormAfterConcatGetsAScaleAndShift) {
  expectPassRewrites("fold-batchnorm", R"(
graph "g" opset 17 {
  input %a : f32[N,1,2,2]
  input %b : f32[N,1,2,2]
  const %gamma : f32[2] = hex"0000804000008040"
  const %beta : f32[2] = hex"0000404000000000"
  const %mean : f32[2] = hex"0000803f0000803f"
  const %var : f32[2] = hex"0000804000008040"
  %c : f32[N,2,2,2] = Concat(%a, %b) {axis = 1} @"cat"
  %y : f32[N,2,2,2] = BatchNormalization(%c, %gamma, %beta, %mean, %var) {epsilon = 0.0} @"bn"
  output %y
}
)",
                     R"(
graph "g" opset 17 {
  input %a : f32[N,1,2,2]
  input %b : f32[N,1,2,2]
  const %s : f32[2,1,1] = hex"0000004000000040"
  const %t : f32[2,1,1] = hex"0000803f000000c0"
  %c : f32[N,2,2,2] = Concat(%a, %b) {axis = 1} @"cat"
  %m : f32[N,2,2,2] = Mul(%c, %s) @"bn/scale"
  %y : f32[N,2,2,2] = Add(%m, %t) @"bn"
  output %y
}
)");
}

TEST(FoldBatchnorm, SameNumericsOnEveryModel) { expectSameNumericsOnAllModels({"fold-batchnorm"}); }

TEST(FoldBatchnorm, FoldsEveryBatchnormOfResnet) {
  auto records = expectExportRoundTrip("resnet?depth=2&width=8&resolution=16", {"fold-batchnorm"});
  ASSERT_EQ(records.size(), 1u);
  EXPECT_GT(records[0].stats["batchnorms folded"], 0);
  auto g = modelBuilder("resnet?depth=2&width=8&resolution=16")();
  int64_t bns = 0;
  for (const auto& n : g->nodes()) bns += n->op() == "BatchNormalization";
  EXPECT_EQ(records[0].stats["batchnorms folded"], bns);
  EXPECT_EQ(records[0].after.nodes, records[0].before.nodes - bns);
}
