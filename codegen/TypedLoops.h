// Loops shared by the typed native kernels (NativeTypedOps.cpp, NativeIndexOps.cpp): which element types have a
// C++ type, and numpy broadcasting over operands of several shapes.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/DType.h"
#include "runtime/ukernels/Copy.h"

namespace friction::codegen {

inline bool hasCType(DType t) {
  return withElementType(t, [](auto) {});
}

// Calls f(outputIndex, offsets) for every element of `shape`, where
// offsets[k] is the element of operand k under its broadcast `strides`.
template <typename F>
void forEachBroadcast(const std::vector<int64_t>& shape, const std::vector<std::vector<int64_t>>& strides, F&& f) {
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  std::vector<int64_t> index(shape.size(), 0), offsets(strides.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    f(i, offsets);
    for (size_t d = shape.size(); d-- > 0;) {
      for (size_t k = 0; k < strides.size(); ++k) offsets[k] += strides[k][d];
      if (++index[d] < shape[d]) break;
      for (size_t k = 0; k < strides.size(); ++k) offsets[k] -= strides[k][d] * shape[d];
      index[d] = 0;
    }
  }
}

// An operand of shape `xs` read at the indices of `ys` (right-aligned, stride 0 on broadcast dims).
inline std::vector<int64_t> broadcastStrides(const std::vector<int64_t>& xs, const std::vector<int64_t>& ys) {
  const std::vector<int64_t> dense = ukernels::denseStrides(xs);
  std::vector<int64_t> s(ys.size(), 0);
  for (size_t d = 0; d < xs.size(); ++d)
    if (xs[d] != 1) s[ys.size() - xs.size() + d] = dense[d];
  return s;
}

}  // namespace friction::codegen
