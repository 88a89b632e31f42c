// The buffer pool of the compiled backends' intermediates: a released buffer
// of the same size is handed out again, other sizes get their own, and a
// buffer outliving its pool's last holder still goes back safely.
#include <gtest/gtest.h>

#include "runtime/BufferPool.h"

namespace friction {
namespace {

TEST(BufferPool, ReusesReleasedBuffersBySize) {
  auto pool = BufferPool::create();
  const void* first = nullptr;
  {
    Tensor a = pool->acquire(DType::F32, {16, 16});
    first = a.rawData();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u) << "64-byte aligned";
  }
  Tensor b = pool->acquire(DType::F32, {256});  // same byte size: the released buffer
  EXPECT_EQ(b.rawData(), first);
  Tensor c = pool->acquire(DType::F32, {16, 16});  // b still holds it: a new one
  EXPECT_NE(c.rawData(), first);
  Tensor d = pool->acquire(DType::F32, {3});  // another size
  EXPECT_EQ(pool->bytesHeld(), size_t(1024 + 1024 + 64));
}

TEST(BufferPool, ABufferMayOutliveThePoolsHolder) {
  Tensor kept;
  {
    auto pool = BufferPool::create();
    kept = pool->acquire(DType::F32, {4});
    kept.data<float>()[3] = 2.5f;
  }  // the tensor keeps the pool alive until it goes
  EXPECT_EQ(kept.data<float>()[3], 2.5f);
}

}  // namespace
}  // namespace friction
