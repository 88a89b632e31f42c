// Helpers of the data-movement kernels (ShapeKernels.cpp, IndexKernels.cpp).
// Most of those kernels are "for every output index, which input element?"
// (gatherBy) and copy elements by byte size, so every dtype works. Output
// shapes come from ir/ops/TensorShapes.h, shared with shape inference.
#pragma once
#include <cstring>
#include <optional>
#include <vector>

#include "ir/ops/ShapeHelpers.h"
#include "runtime/interp/kernels/KernelUtil.h"

namespace friction::interp {

using Shape64 = std::vector<int64_t>;

// Calls fn(idx, k) for every index of `shape` in row-major order (k is the flat index).
template <typename Fn>
void forEachIndex(const Shape64& shape, Fn&& fn) {
  int64_t n = checkedNumel(shape);
  Shape64 idx(shape.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    fn(idx, k);
    for (int d = int(shape.size()) - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < shape[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
}

inline void copyElem(void* dst, int64_t di, const void* src, int64_t si, size_t es) {
  std::memcpy(static_cast<char*>(dst) + size_t(di) * es, static_cast<const char*>(src) + size_t(si) * es, es);
}

// A tensor of `outShape` whose element at idx is `in`'s element src(idx, k).
// Where src returns -1 it holds `fill`'s first element, or zero.
template <typename Src>
Tensor gatherBy(const Tensor& in, const Shape64& outShape, Src&& src, const Tensor* fill = nullptr) {
  Tensor out(in.dtype(), outShape);
  size_t es = dtypeSize(in.dtype());
  forEachIndex(outShape, [&](const Shape64& idx, int64_t k) {
    int64_t s = src(idx, k);
    if (s >= 0) copyElem(out.rawData(), k, in.rawData(), s, es);
    else if (fill) copyElem(out.rawData(), k, fill->rawData(), 0, es);
  });
  return out;
}

inline int64_t dot(const Shape64& idx, const Shape64& strides) {
  int64_t r = 0;
  for (size_t i = 0; i < idx.size(); ++i) r += idx[i] * strides[i];
  return r;
}

// An index into an axis of `extent`, negative values counting from the end.
inline int64_t wrapIndex(int64_t i, int64_t extent) {
  FRICTION_CHECK(i >= -extent && i < extent,
                 "index " + std::to_string(i) + " out of range for extent " + std::to_string(extent));
  return i < 0 ? i + extent : i;
}

inline std::optional<Shape64> optionalInts(const std::vector<Tensor>& in, size_t i) {
  if (i < in.size() && in[i].defined()) return in[i].toInt64Vector();
  return std::nullopt;
}

inline Shape64 staticShape(const std::vector<Dim>& dims) { return Shape(dims).staticDims(); }

// Splits a shape around `axis` into (outer, extent, inner) for loops over lines along it.
struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
  Lines(const Shape64& s, size_t axis) {
    for (size_t i = 0; i < s.size(); ++i) (i < axis ? outer : i == axis ? n : inner) *= s[i];
  }
  // Flat index of element j of line (o, i).
  int64_t at(int64_t o, int64_t i, int64_t j) const { return (o * n + j) * inner + i; }
};

inline Tensor transposeTensor(const Tensor& x, const Shape64& perm) {
  Shape64 in = stridesOf(x.shape()), out, strides;
  for (int64_t p : perm) {
    out.push_back(x.shape()[size_t(p)]);
    strides.push_back(in[size_t(p)]);
  }
  return gatherBy(x, out, [&](const Shape64& idx, int64_t) { return dot(idx, strides); });
}

}  // namespace friction::interp
