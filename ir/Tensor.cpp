#include "ir/Tensor.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "ir/Error.h"

namespace friction {
namespace {
std::shared_ptr<void> allocate(size_t bytes, bool zero = true) {
  // 64-byte alignment suits any vector width; zero-fill keeps results deterministic.
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  FRICTION_CHECK(p != nullptr, "out of memory allocating " + std::to_string(bytes) + " bytes");
  if (zero) std::memset(p, 0, rounded == 0 ? 64 : rounded);
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

}  // namespace

void Tensor::checkByteSize(size_t got, size_t want) {
  FRICTION_CHECK(got == want, "tensor data has " + std::to_string(got) + " bytes, shape needs " +
                                  std::to_string(want));
}

Tensor::Tensor(DType dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)), numel_(checkedNumel(shape_)), defined_(true) {
  data_ = allocate(byteSize());
}

Tensor Tensor::uninitialized(DType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = checkedNumel(t.shape_);
  t.defined_ = true;
  t.data_ = allocate(t.byteSize(), false);
  return t;
}

Tensor Tensor::view(DType dtype, std::vector<int64_t> shape, std::shared_ptr<void> storage) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = checkedNumel(t.shape_);
  t.defined_ = true;
  t.data_ = std::move(storage);
  return t;
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

Tensor Tensor::window(int64_t offset, std::vector<int64_t> shape) const {
  const int64_t n = checkedNumel(shape);
  FRICTION_CHECK(offset >= 0 && offset + n <= numel_, "window outside the tensor");
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.numel_ = n;
  t.data_ = std::shared_ptr<void>(data_, static_cast<char*>(data_.get()) + size_t(offset) * dtypeSize(dtype_));
  return t;
}

Tensor Tensor::bitcast(DType to) const {
  FRICTION_CHECK(dtypeSize(to) == dtypeSize(dtype_), "bitcast between dtypes of different sizes");
  Tensor t = *this;
  t.dtype_ = to;
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

namespace {
template <typename T>
void storeElement(void* base, int64_t i, double f, int64_t s, uint64_t u, int kind) {
  T* p = static_cast<T*>(base) + i;
  if constexpr (std::is_same_v<T, bool>) {
    *p = kind == 0 ? f != 0 : kind == 1 ? s != 0 : u != 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    *p = kind == 0 ? T(f) : kind == 1 ? T(s) : T(u);
  } else {
    *p = kind == 0 ? floatToInt<T>(f) : kind == 1 ? T(s) : T(u);  // integer to integer wraps
  }
}
}  // namespace

Tensor Tensor::castTo(DType to) const {
  Tensor out(to, shape_);
  if (to == dtype_) {
    if (byteSize()) std::memcpy(out.rawData(), rawData(), byteSize());
    return out;
  }
  // Source elements are read exactly: floats as double, signed ints and bool as int64, unsigned as uint64.
  int kind = isFloat(dtype_) ? 0 : isUnsignedInt(dtype_) ? 2 : 1;
  for (int64_t i = 0; i < numel_; ++i) {
    double f = kind == 0 ? elementAsDouble(i) : 0.0;
    int64_t s = kind == 1 ? elementAsInt(i) : 0;
    uint64_t u = kind == 2 ? (dtype_ == DType::U64 ? data<uint64_t>()[i] : uint64_t(elementAsInt(i))) : 0;
    void* o = out.rawData();
    switch (to) {
      case DType::F32: storeElement<float>(o, i, f, s, u, kind); break;
      case DType::F64: storeElement<double>(o, i, f, s, u, kind); break;
      case DType::F16:
      case DType::BF16: {
        float x = kind == 0 ? float(f) : kind == 1 ? float(s) : float(u);
        out.data<uint16_t>()[i] = to == DType::F16 ? floatToHalf(x) : floatToBf16(x);
        break;
      }
      case DType::I8: storeElement<int8_t>(o, i, f, s, u, kind); break;
      case DType::I16: storeElement<int16_t>(o, i, f, s, u, kind); break;
      case DType::I32: storeElement<int32_t>(o, i, f, s, u, kind); break;
      case DType::I64: storeElement<int64_t>(o, i, f, s, u, kind); break;
      case DType::U8: storeElement<uint8_t>(o, i, f, s, u, kind); break;
      case DType::U16: storeElement<uint16_t>(o, i, f, s, u, kind); break;
      case DType::U32: storeElement<uint32_t>(o, i, f, s, u, kind); break;
      case DType::U64: storeElement<uint64_t>(o, i, f, s, u, kind); break;
      case DType::Bool: storeElement<bool>(o, i, f, s, u, kind); break;
    }
  }
  return out;
}

bool Tensor::bitwiseEqual(const Tensor& o) const {
  return dtype_ == o.dtype_ && shape_ == o.shape_ && std::memcmp(rawData(), o.rawData(), byteSize()) == 0;
}

}  // namespace friction
