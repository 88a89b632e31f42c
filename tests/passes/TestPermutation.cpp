// The transpose algebra under convert-layout and simplify-algebra.
#include <gtest/gtest.h>

#include "passes/Permutation.h"

using namespace friction;

TEST(Permutation, ComposeAndInvert) {
  const Perm toNhwc = {0, 2, 3, 1}, toNchw = {0, 3, 1, 2};
  EXPECT_TRUE(isIdentityPerm(composePerms(toNhwc, toNchw)));
  EXPECT_EQ(invertPerm(toNhwc), toNchw);
  EXPECT_EQ(composePerms({1, 0, 2}, {0, 2, 1}), (Perm{1, 2, 0}));
}

TEST(Permutation, KeepsMemoryOrderWhenOnlyUnitDimsMove) {
  EXPECT_TRUE(keepsMemoryOrder({1, 5, 5, 1}, {0, 3, 1, 2}));
  EXPECT_TRUE(keepsMemoryOrder({1, 3, 1, 1}, {0, 2, 3, 1}));
  EXPECT_FALSE(keepsMemoryOrder({1, 3, 2, 1}, {0, 2, 1, 3}));
}

// NHWC [1,6,6,4] seen as NCHW and split along channels: the reshape runs on
// NHWC ([1,6,6,2,2]) and the transpose moves below it.
TEST(Permutation, ChannelSplitMovesTheTransposeBelow) {
  auto f = reshapeThroughTranspose({1, 6, 6, 4}, {0, 3, 1, 2}, {1, 2, 2, 6, 6});
  ASSERT_TRUE(f);
  EXPECT_TRUE(keepsMemoryOrder({1, 6, 6, 4}, f->b));
  EXPECT_EQ(f->u, (std::vector<int64_t>{1, 6, 6, 2, 2}));
  EXPECT_EQ(f->a, (Perm{0, 3, 4, 1, 2}));
}

// The shuffled groups merged back into channels: the group swap stays above
// (channels-last) and the to-NCHW transpose goes below.
TEST(Permutation, ChannelMergeSplitsTheTransposeInTwo) {
  auto f = reshapeThroughTranspose({1, 6, 6, 2, 2}, {0, 4, 3, 1, 2}, {1, 4, 6, 6});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->b, (Perm{0, 1, 2, 4, 3}));
  EXPECT_EQ(f->u, (std::vector<int64_t>{1, 6, 6, 4}));
  EXPECT_EQ(f->a, (Perm{0, 3, 1, 2}));
}

// Flattening NCHW mixes channels and pixels: the whole transpose has to stay above.
TEST(Permutation, FlattenAcrossChannelsKeepsTheTransposeAbove) {
  auto f = reshapeThroughTranspose({1, 4, 4, 2}, {0, 3, 1, 2}, {1, 32});
  ASSERT_TRUE(f);
  EXPECT_FALSE(keepsMemoryOrder({1, 4, 4, 2}, f->b));
  EXPECT_TRUE(keepsMemoryOrder(f->u, f->a));
}

TEST(Permutation, ZeroSizedDimsAreNotFactored) {
  EXPECT_FALSE(reshapeThroughTranspose({0, 4}, {1, 0}, {4, 0}));
}
