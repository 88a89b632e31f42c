#include <gtest/gtest.h>

#include "ir/Tensor.h"

using namespace friction;

TEST(Tensor, HalfRoundTrip) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f}) EXPECT_EQ(halfToFloat(floatToHalf(f)), f);
}

TEST(Tensor, CastFloatToInt) {
  Tensor t = Tensor::fromVector<float>(DType::F32, {3}, {1.7f, -2.2f, 3.0f});
  EXPECT_EQ(t.castTo(DType::I64).toInt64Vector(), (std::vector<int64_t>{1, -2, 3}));
}
