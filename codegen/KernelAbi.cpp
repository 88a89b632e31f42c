#include "codegen/KernelAbi.h"

#include <cstring>

namespace friction::codegen {

std::string packedSymbol(const std::string& kernelName) { return "_mlir__mlir_ciface_" + kernelName; }

PackedArgs::PackedArgs(const std::vector<const Tensor*>& tensors) {
  size_t words = 0;
  for (const Tensor* t : tensors) words += 3 + 2 * t->rank();
  words_.resize(words);
  at_.reserve(tensors.size()), rank_.reserve(tensors.size()), elementBytes_.reserve(tensors.size());
  size_t at = 0;
  for (const Tensor* t : tensors) {
    int64_t* d = words_.data() + at;
    void* data = const_cast<void*>(t->rawData());
    std::memcpy(&d[0], &data, sizeof data);
    std::memcpy(&d[1], &data, sizeof data);
    d[2] = 0;
    size_t r = t->rank();
    int64_t stride = 1;
    for (size_t k = r; k-- > 0;) {
      d[3 + k] = t->shape()[k];
      d[3 + r + k] = stride;
      stride *= t->shape()[k];
    }
    at_.push_back(at);
    rank_.push_back(r);
    elementBytes_.push_back(dtypeSize(t->dtype()));
    at += 3 + 2 * r;
  }
}

void PackedArgs::slice(size_t i, size_t dim, int64_t r0, int64_t r1) {
  int64_t* d = words_.data() + at_[i];  // allocated, aligned, offset, sizes[rank], strides[rank]
  char* aligned = nullptr;
  std::memcpy(&aligned, &d[1], sizeof aligned);
  aligned += r0 * d[3 + rank_[i] + dim] * int64_t(elementBytes_[i]);
  std::memcpy(&d[1], &aligned, sizeof aligned);
  d[3 + dim] = r1 - r0;
}

void PackedArgs::call(const KernelFn& fn) const {
  // Per thread and kept between calls: a program calls kernels of a few arguments thousands of times a run.
  thread_local std::vector<void*> descriptors, packed;
  descriptors.resize(at_.size()), packed.resize(at_.size());
  for (size_t i = 0; i < at_.size(); ++i) {
    descriptors[i] = const_cast<int64_t*>(words_.data()) + at_[i];
    packed[i] = &descriptors[i];
  }
  fn(packed.data());
}

}  // namespace friction::codegen
