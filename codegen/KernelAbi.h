// How friction calls compiled kernels, and how compiled kernels call the
// microkernels: MLIR's C interface, declared here so that nothing outside
// codegen/mlir/ needs an MLIR header.
//
// A kernel is called through its packed entry, `void entry(void** args)`:
// args[i] points to a pointer to the i-th memref descriptor (the kernel's
// inputs, then its outputs). A descriptor of rank r is
//   {allocated, aligned, offset, sizes[r], strides[r]}
// (MLIR's StridedMemRefType). Kernels take identity-layout memrefs: their
// static offset is 0 and the generated code ignores the offset field.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/Tensor.h"

namespace friction::codegen {

using PackedFn = void (*)(void**);
// What the program calls: a packed entry, or a closure over one (a Halide
// pipeline decodes the descriptors itself).
using KernelFn = std::function<void(void**)>;

// A strided view as the C interface passes it (`_mlir_ciface_` functions take
// pointers to these).
template <typename T, int Rank>
struct StridedMemRef {
  T* allocated;
  T* aligned;
  int64_t offset;
  int64_t sizes[Rank];
  int64_t strides[Rank];
};

// "_mlir__mlir_ciface_" + name: the packed entry of kernel `name` (what
// mlir::ExecutionEngine::lookupPacked finds, and what an AOT object defines).
std::string packedSymbol(const std::string& kernelName);

// The descriptors of one call over friction tensors (row-major, contiguous):
// no copies, the descriptors point into the tensors' storage.
class PackedArgs {
 public:
  explicit PackedArgs(const std::vector<const Tensor*>& tensors);
  // Narrows argument `i` to [r0, r1) of its dim `dim`: the aligned pointer
  // moves r0 strides of that dim on and its size becomes r1 - r0 (a split
  // kernel's slab; contiguous when every dim before `dim` has extent 1).
  void slice(size_t i, size_t dim, int64_t r0, int64_t r1);
  void call(const KernelFn& fn) const;

 private:
  std::vector<int64_t> words_;  // the descriptors back to back
  std::vector<size_t> at_;      // where argument i's descriptor starts
  std::vector<size_t> rank_;
  std::vector<size_t> elementBytes_;
};

}  // namespace friction::codegen
