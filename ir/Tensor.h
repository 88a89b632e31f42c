// A dense tensor value: dtype, static shape, and shared storage. Copies are
// cheap (they share storage); `clone()` makes a deep copy. Storage can adopt
// a std::string (e.g. protobuf raw_data) without copying its bytes.
#pragma once
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ir/DType.h"
#include "ir/Shape.h"

namespace friction {

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, std::vector<int64_t> shape);  // zero-filled
  // Contents undefined: for outputs a kernel overwrites entirely (no memset pass).
  static Tensor uninitialized(DType dtype, std::vector<int64_t> shape);
  // A tensor over memory someone else owns (`storage` keeps it alive and must
  // point to at least byteSize() bytes, 64-byte aligned): e.g. a slot of a
  // runtime's memory arena.
  static Tensor view(DType dtype, std::vector<int64_t> shape, std::shared_ptr<void> storage);
  static Tensor adoptString(DType dtype, std::vector<int64_t> shape, std::string&& bytes);
  template <typename T>
  static Tensor fromVector(DType dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
    Tensor t(dtype, std::move(shape));
    checkByteSize(values.size() * sizeof(T), t.byteSize());
    std::memcpy(t.rawData(), values.data(), t.byteSize());
    return t;
  }
  static Tensor scalarI64(int64_t v) { return fromVector<int64_t>(DType::I64, {}, {v}); }
  static Tensor scalarF32(float v) { return fromVector<float>(DType::F32, {}, {v}); }
  static Tensor vectorI64(const std::vector<int64_t>& v) {
    return fromVector<int64_t>(DType::I64, {int64_t(v.size())}, v);
  }

  // False for a default-constructed Tensor (an absent optional input).
  bool defined() const { return defined_; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  size_t rank() const { return shape_.size(); }
  int64_t dim(int i) const { return shape_[i < 0 ? i + int(shape_.size()) : i]; }
  int64_t numel() const { return numel_; }
  size_t byteSize() const { return size_t(numel_) * dtypeSize(dtype_); }
  TensorType type() const { return {dtype_, Shape::fromStatic(shape_)}; }

  void* rawData() { return data_.get(); }
  const void* rawData() const { return data_.get(); }
  template <typename T>
  T* data() { return static_cast<T*>(data_.get()); }
  template <typename T>
  const T* data() const { return static_cast<const T*>(data_.get()); }

  Tensor clone() const;
  Tensor reshaped(std::vector<int64_t> shape) const;  // shares storage
  // `shape`'s elements from element `offset` on, sharing storage.
  Tensor window(int64_t offset, std::vector<int64_t> shape) const;
  Tensor bitcast(DType to) const;                      // same bytes, another dtype of equal size
  // Element i converted to double / int64 (for small shape tensors and tests).
  double elementAsDouble(int64_t i) const;
  int64_t elementAsInt(int64_t i) const;
  std::vector<int64_t> toInt64Vector() const;
  std::vector<double> toDoubleVector() const;
  Tensor castTo(DType to) const;
  bool bitwiseEqual(const Tensor& o) const;

 private:
  static void checkByteSize(size_t got, size_t want);
  DType dtype_ = DType::F32;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  bool defined_ = false;
  std::shared_ptr<void> data_;
};

}  // namespace friction
