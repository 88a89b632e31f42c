#include "ir/Tensor.h"

#include <cmath>
#include <cstdlib>

#include "ir/Error.h"

namespace friction {
namespace {
std::shared_ptr<void> allocate(size_t bytes) {
  // 64-byte alignment suits any vector width; zero-fill keeps results deterministic.
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  FRICTION_CHECK(p != nullptr, "out of memory allocating " + std::to_string(bytes) + " bytes");
  std::memset(p, 0, rounded == 0 ? 64 : rounded);
  return std::shared_ptr<void>(p, std::free);
}

template <typename Fn>
auto visitElement(DType t, const void* base, int64_t i, Fn fn) {
  switch (t) {
    case DType::F32: return fn(double(static_cast<const float*>(base)[i]));
    case DType::F64: return fn(static_cast<const double*>(base)[i]);
    case DType::F16: return fn(double(halfToFloat(static_cast<const uint16_t*>(base)[i])));
    case DType::BF16: return fn(double(bf16ToFloat(static_cast<const uint16_t*>(base)[i])));
    case DType::I8: return fn(static_cast<const int8_t*>(base)[i]);
    case DType::I16: return fn(static_cast<const int16_t*>(base)[i]);
    case DType::I32: return fn(static_cast<const int32_t*>(base)[i]);
    case DType::I64: return fn(static_cast<const int64_t*>(base)[i]);
    case DType::U8: return fn(static_cast<const uint8_t*>(base)[i]);
    case DType::U16: return fn(static_cast<const uint16_t*>(base)[i]);
    case DType::U32: return fn(static_cast<const uint32_t*>(base)[i]);
    case DType::U64: return fn(static_cast<const uint64_t*>(base)[i]);
    case DType::Bool: return fn(static_cast<const bool*>(base)[i]);
  }
  throw Error("bad dtype");
}

template <typename T>
T convertNumber(double d) {
  if constexpr (std::is_same_v<T, bool>) {
    return d != 0;
  } else if constexpr (std::is_integral_v<T>) {
    if (std::isnan(d)) return T(0);
    return T(int64_t(d));
  } else {
    return T(d);
  }
}
}  // namespace

void Tensor::checkByteSize(size_t got, size_t want) {
  FRICTION_CHECK(got == want, "tensor data has " + std::to_string(got) + " bytes, shape needs " +
                                  std::to_string(want));
}

Tensor::Tensor(DType dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)), numel_(checkedNumel(shape_)), defined_(true) {
  data_ = allocate(byteSize());
}

Tensor Tensor::adoptString(DType dtype, std::vector<int64_t> shape, std::string&& bytes) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = checkedNumel(t.shape_);
  t.defined_ = true;
  checkByteSize(bytes.size(), t.byteSize());
  if (reinterpret_cast<uintptr_t>(bytes.data()) % 16 != 0) {  // rare: keep kernels' alignment assumptions
    t.data_ = allocate(bytes.size());
    std::memcpy(t.data_.get(), bytes.data(), bytes.size());
    return t;
  }
  auto owner = std::make_shared<std::string>(std::move(bytes));
  t.data_ = std::shared_ptr<void>(owner, owner->data());
  return t;
}

Tensor Tensor::clone() const {
  if (!defined_) return {};
  Tensor t(dtype_, shape_);
  if (byteSize()) std::memcpy(t.rawData(), rawData(), byteSize());
  return t;
}

Tensor Tensor::reshaped(std::vector<int64_t> shape) const {
  FRICTION_CHECK(checkedNumel(shape) == numel_, "reshape changes element count");
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

double Tensor::elementAsDouble(int64_t i) const {
  return visitElement(dtype_, rawData(), i, [](auto v) { return double(v); });
}

int64_t Tensor::elementAsInt(int64_t i) const {
  return visitElement(dtype_, rawData(), i, [](auto v) { return int64_t(v); });
}

std::vector<int64_t> Tensor::toInt64Vector() const {
  std::vector<int64_t> r(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) r[size_t(i)] = elementAsInt(i);
  return r;
}

std::vector<double> Tensor::toDoubleVector() const {
  std::vector<double> r(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) r[size_t(i)] = elementAsDouble(i);
  return r;
}

Tensor Tensor::castTo(DType to) const {
  Tensor out(to, shape_);
  if (to == dtype_) {
    if (byteSize()) std::memcpy(out.rawData(), rawData(), byteSize());
    return out;
  }
  for (int64_t i = 0; i < numel_; ++i) {
    // Integers go through int64 to keep exact values; floats through double.
    bool srcInt = !isFloat(dtype_);
    double d = srcInt ? 0.0 : elementAsDouble(i);
    int64_t n = srcInt ? elementAsInt(i) : 0;
    switch (to) {
      case DType::F32: out.data<float>()[i] = srcInt ? float(n) : float(d); break;
      case DType::F64: out.data<double>()[i] = srcInt ? double(n) : d; break;
      case DType::F16: out.data<uint16_t>()[i] = floatToHalf(srcInt ? float(n) : float(d)); break;
      case DType::BF16: out.data<uint16_t>()[i] = floatToBf16(srcInt ? float(n) : float(d)); break;
      case DType::I8: out.data<int8_t>()[i] = srcInt ? int8_t(n) : convertNumber<int8_t>(d); break;
      case DType::I16: out.data<int16_t>()[i] = srcInt ? int16_t(n) : convertNumber<int16_t>(d); break;
      case DType::I32: out.data<int32_t>()[i] = srcInt ? int32_t(n) : convertNumber<int32_t>(d); break;
      case DType::I64: out.data<int64_t>()[i] = srcInt ? n : convertNumber<int64_t>(d); break;
      case DType::U8: out.data<uint8_t>()[i] = srcInt ? uint8_t(n) : convertNumber<uint8_t>(d); break;
      case DType::U16: out.data<uint16_t>()[i] = srcInt ? uint16_t(n) : convertNumber<uint16_t>(d); break;
      case DType::U32: out.data<uint32_t>()[i] = srcInt ? uint32_t(n) : convertNumber<uint32_t>(d); break;
      case DType::U64: out.data<uint64_t>()[i] = srcInt ? uint64_t(n) : uint64_t(convertNumber<int64_t>(d)); break;
      case DType::Bool: out.data<bool>()[i] = srcInt ? n != 0 : d != 0; break;
    }
  }
  return out;
}

bool Tensor::bitwiseEqual(const Tensor& o) const {
  return dtype_ == o.dtype_ && shape_ == o.shape_ && std::memcmp(rawData(), o.rawData(), byteSize()) == 0;
}

}  // namespace friction
