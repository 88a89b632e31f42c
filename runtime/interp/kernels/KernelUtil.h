// Shared helpers for interpreter kernels: dtype dispatch, half-precision
// upcasting, strides and broadcasting index maps.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/Error.h"
#include "ir/Graph.h"

namespace friction::interp {

// Calls fn(T{}) with the C++ type of `t`. F16/BF16 are not dispatched here:
// kernels that compute in float run through `upcastHalf` first.
template <typename Fn>
auto dispatchNumeric(DType t, Fn&& fn) {
  switch (t) {
    case DType::F32: return fn(float{});
    case DType::F64: return fn(double{});
    case DType::I8: return fn(int8_t{});
    case DType::I16: return fn(int16_t{});
    case DType::I32: return fn(int32_t{});
    case DType::I64: return fn(int64_t{});
    case DType::U8: return fn(uint8_t{});
    case DType::U16: return fn(uint16_t{});
    case DType::U32: return fn(uint32_t{});
    case DType::U64: return fn(uint64_t{});
    case DType::Bool: return fn(bool{});
    default: break;
  }
  throw Error("dtype " + std::string(dtypeName(t)) + " is not supported by this kernel");
}

template <typename Fn>
auto dispatchFloat(DType t, Fn&& fn) {
  switch (t) {
    case DType::F32: return fn(float{});
    case DType::F64: return fn(double{});
    default: break;
  }
  throw Error("dtype " + std::string(dtypeName(t)) + " is not supported by this kernel (float only)");
}

inline bool isHalf(DType t) { return t == DType::F16 || t == DType::BF16; }

// Runs `kernel` with F16/BF16 inputs cast to F32 and casts F32 outputs back
// to the half type of the first half input. Other dtypes pass through.
template <typename K>
std::vector<Tensor> upcastHalf(const Node& node, const std::vector<Tensor>& in, K&& kernel) {
  DType half = DType::F32;
  for (const Tensor& t : in)
    if (t.defined() && isHalf(t.dtype())) half = t.dtype();
  if (half == DType::F32) return kernel(node, in);
  std::vector<Tensor> up;
  for (const Tensor& t : in) up.push_back(t.defined() && isHalf(t.dtype()) ? t.castTo(DType::F32) : t);
  std::vector<Tensor> out = kernel(node, up);
  for (Tensor& t : out)
    if (t.defined() && t.dtype() == DType::F32) t = t.castTo(half);
  return out;
}

// Row-major strides.
inline std::vector<int64_t> stridesOf(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = int(shape.size()) - 2; i >= 0; --i) s[size_t(i)] = s[size_t(i) + 1] * shape[size_t(i) + 1];
  return s;
}

// For every element of `outShape`, the flat index of the element of an input
// of shape `inShape` that broadcasts to it (numpy rules).
std::vector<int64_t> broadcastIndexMap(const std::vector<int64_t>& outShape, const std::vector<int64_t>& inShape);

// Normalizes a possibly negative axis; throws Error naming the node when out of range.
int64_t normalizeAxis(const Node& node, int64_t axis, int64_t rank);

}  // namespace friction::interp
