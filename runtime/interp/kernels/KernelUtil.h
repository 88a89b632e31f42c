// Shared helpers for interpreter kernels: dtype dispatch, half-precision
// upcasting, strides and broadcasting index maps.
#pragma once
#include <cstdint>
#include <type_traits>
#include <vector>

#include "ir/Error.h"
#include "ir/Graph.h"
#include "runtime/interp/KernelRegistry.h"
#include "runtime/ukernels/Copy.h"

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
inline std::vector<int64_t> stridesOf(const std::vector<int64_t>& shape) { return ukernels::denseStrides(shape); }

// For every element of `outShape`, the flat index of the element of an input
// of shape `inShape` that broadcasts to it (numpy rules).
std::vector<int64_t> broadcastIndexMap(const std::vector<int64_t>& outShape, const std::vector<int64_t>& inShape);

// Normalizes a possibly negative axis; throws Error naming the node when out of range.
int64_t normalizeAxis(const Node& node, int64_t axis, int64_t rank);

// Tensors in, tensors out: a kernel's signature.
using Tensors = std::vector<Tensor>;

// Arithmetic dtypes (numeric without Bool).
template <typename Fn>
auto dispatchArith(DType t, Fn&& fn) {
  if (t == DType::Bool) throw Error("dtype bool is not supported by this kernel");
  return dispatchNumeric(t, [&](auto tag) {
    if constexpr (std::is_same_v<decltype(tag), bool>) return fn(int8_t{});  // unreachable
    else return fn(tag);
  });
}

// Wraps f(tag, node, inputs) as a kernel over float/double (halves upcast).
template <typename F>
Kernel floatKernel(F f) {
  return [f](const Node& node, const Tensors& in) {
    return upcastHalf(node, in, [&](const Node& n, const Tensors& up) {
      return dispatchFloat(up[0].dtype(), [&](auto tag) { return f(tag, n, up); });
    });
  };
}
// Same over every arithmetic dtype.
template <typename F>
Kernel arithKernel(F f) {
  return [f](const Node& node, const Tensors& in) {
    return upcastHalf(node, in, [&](const Node& n, const Tensors& up) {
      return dispatchArith(up[0].dtype(), [&](auto tag) { return f(tag, n, up); });
    });
  };
}

inline int64_t product(const std::vector<int64_t>& v, size_t from = 0) {
  int64_t p = 1;
  for (size_t i = from; i < v.size(); ++i) p *= v[i];
  return p;
}

// Calls fn(base, stride, len) for every 1-D lane along `axis`.
template <typename Fn>
void forEachLane(const std::vector<int64_t>& shape, int64_t axis, Fn fn) {
  int64_t outer = product(std::vector<int64_t>(shape.begin(), shape.begin() + axis));
  int64_t len = shape.empty() ? 1 : shape[size_t(axis)], inner = product(shape, size_t(axis) + 1);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) fn(o * len * inner + i, inner, len);
}

// The spatial dims of an N, C, spatial... shape.
inline std::vector<int64_t> spatialOf(const std::vector<int64_t>& shape) { return {shape.begin() + 2, shape.end()}; }

// Multi-index of row-major flat index `flat` in `shape`.
inline void unravel(int64_t flat, const std::vector<int64_t>& shape, std::vector<int64_t>& idx) {
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
}

}  // namespace friction::interp
