// Reuses the buffers of intermediates across steps and runs, the way ONNX
// Runtime's arena and PyTorch's caching allocator do whatever the graph
// optimizations: a freed buffer goes back to a free list by size instead of to
// the C library, which unmaps large blocks and page-faults them in again on
// the next touch (30% of MobileNetV2's time with every pass off). Values that
// plan-memory placed live in its arena instead; this is what the others get.
// Thread-safe; a buffer may outlive the program (a returned output) and comes
// back when its last tensor goes.
#pragma once
#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "ir/Tensor.h"

namespace friction {

class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  static std::shared_ptr<BufferPool> create() { return std::shared_ptr<BufferPool>(new BufferPool()); }
  ~BufferPool();
  // An uninitialized tensor whose storage comes from the pool.
  Tensor acquire(DType dtype, std::vector<int64_t> shape);
  // Bytes held by the pool, in use or free.
  size_t bytesHeld() const;

 private:
  BufferPool() = default;
  void release(void* p, size_t bytes);

  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // by (64-byte rounded) size
  size_t held_ = 0;
};

}  // namespace friction
