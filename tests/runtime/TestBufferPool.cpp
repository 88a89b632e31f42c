// The buffer pool of the compiled backends' intermediates: a released buffer
// of the same size is handed out again, other sizes get their own, and a
// buffer outliving its pool's last holder still goes back safely.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include "runtime/BufferPool.h"
#include "runtime/ukernels/Buffers.h"

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

TEST(BufferPool, LargeBuffersAreHugePageAligned) {
  // From 2 MiB on a buffer starts on a huge-page boundary (so THP can back it); smaller ones are 64-byte
  // aligned. Every byte asked for is writable and reads back.
  for (size_t bytes : {size_t(1), size_t(100), size_t(2) << 20, (size_t(5) << 20) + 3}) {
    auto* p = static_cast<unsigned char*>(ukernels::allocateBuffer(bytes));
    ASSERT_NE(p, nullptr) << bytes;
    const uintptr_t align = bytes >= (size_t(2) << 20) ? uintptr_t(2) << 20 : 64;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u) << bytes;
    std::memset(p, 0x5a, bytes);
    EXPECT_EQ(p[bytes - 1], 0x5a) << bytes;
    std::free(p);
  }
}

// A thread's scratch is kept from call to call (grown when a call needs more) and separate per slot and per
// thread: a kernel that holds one slot can call another that takes its own.
TEST(BufferPool, ThreadScratchIsKeptPerSlotAndThread) {
  using ukernels::ScratchSlot, ukernels::threadScratch;
  float* rows = threadScratch(ScratchSlot::ConvRows, 1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(rows) % 64, 0u);
  rows[999] = 7.f;
  EXPECT_EQ(threadScratch(ScratchSlot::ConvRows, 10), rows) << "a smaller request reuses the block";
  EXPECT_EQ(rows[999], 7.f);
  float* panels = threadScratch(ScratchSlot::GemmPanels, 1000);
  EXPECT_NE(panels, rows);
  EXPECT_EQ(threadScratch(ScratchSlot::ConvRows, 10), rows) << "another slot leaves this one alone";
  float* grown = threadScratch(ScratchSlot::ConvRows, size_t(1) << 20);
  grown[(size_t(1) << 20) - 1] = 1.f;
  float* other = nullptr;
  std::thread([&] { other = threadScratch(ScratchSlot::ConvRows, 10); }).join();
  EXPECT_NE(other, grown) << "each thread keeps its own";
}

}  // namespace
}  // namespace friction
