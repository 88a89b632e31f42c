#include "runtime/BufferPool.h"

#include <cstdlib>
#include <numeric>

#include "ir/Error.h"
#include "runtime/ukernels/Buffers.h"

namespace friction {

BufferPool::~BufferPool() {
  for (auto& [bytes, blocks] : free_)
    for (void* p : blocks) std::free(p);
}

Tensor BufferPool::acquire(DType dtype, std::vector<int64_t> shape) {
  int64_t numel = std::accumulate(shape.begin(), shape.end(), int64_t(1), std::multiplies<int64_t>());
  const size_t bytes = (std::max<size_t>(size_t(numel) * dtypeSize(dtype), 1) + 63) / 64 * 64;
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(bytes);
    if (it != free_.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
    }
  }
  if (!p) {
    p = ukernels::allocateBuffer(bytes);
    FRICTION_CHECK(p, "cpu: out of memory allocating " + std::to_string(bytes) + " bytes");
    std::lock_guard<std::mutex> lock(mutex_);
    held_ += bytes;
  }
  std::shared_ptr<void> storage(p, [pool = shared_from_this(), bytes](void* q) { pool->release(q, bytes); });
  return Tensor::view(dtype, std::move(shape), std::move(storage));
}

void BufferPool::release(void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_[bytes].push_back(p);
}

size_t BufferPool::bytesHeld() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return held_;
}

}  // namespace friction
