// Static and symbolic dimensions. A dim is either a known extent (>= 0) or a
// named symbol such as the batch "N". The symbol "?" means "unknown": inference
// could not tell, and the runtime will.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/DType.h"

namespace friction {

// Extents beyond this are treated as corrupt input (by the ONNX importer and the text parser) rather than
// allocated.
constexpr int64_t kMaxDimExtent = int64_t(1) << 40;

struct Dim {
  int64_t value = -1;  // >= 0 for static dims
  std::string symbol;  // non-empty for symbolic dims

  Dim() : symbol("?") {}
  Dim(int64_t v) : value(v) {}  // NOLINT: implicit, so `{1, 3, 224, 224}` reads naturally
  static Dim sym(std::string s) {
    Dim d;
    d.symbol = std::move(s);
    return d;
  }
  static Dim unknown() { return Dim(); }
  bool isStatic() const { return value >= 0; }
  bool isUnknown() const { return !isStatic() && symbol == "?"; }
  bool operator==(const Dim& o) const { return value == o.value && symbol == o.symbol; }
  bool operator!=(const Dim& o) const { return !(*this == o); }
  std::string str() const { return isStatic() ? std::to_string(value) : symbol; }
};

// A shape of known rank; `unknownRank()` marks a value whose rank inference could not determine.
class Shape {
 public:
  Shape() = default;
  Shape(std::vector<Dim> dims) : dims_(std::move(dims)) {}  // NOLINT
  Shape(std::initializer_list<Dim> dims) : dims_(dims) {}
  static Shape fromStatic(const std::vector<int64_t>& dims);
  static Shape unknownRank() {
    Shape s;
    s.rankKnown_ = false;
    return s;
  }

  bool hasRank() const { return rankKnown_; }
  size_t rank() const { return dims_.size(); }
  const Dim& operator[](size_t i) const { return dims_[i]; }
  Dim& operator[](size_t i) { return dims_[i]; }
  const std::vector<Dim>& dims() const { return dims_; }
  bool isStatic() const;
  std::vector<int64_t> staticDims() const;  // throws if any dim is not static
  std::optional<int64_t> numel() const;     // product when static
  std::string str() const;                  // "[N,3,224,224]" or "[*]"
  bool operator==(const Shape& o) const { return rankKnown_ == o.rankKnown_ && dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return !(*this == o); }

 private:
  std::vector<Dim> dims_;
  bool rankKnown_ = true;
};

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
  std::string str() const { return std::string(dtypeName(dtype)) + shape.str(); }
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
};

// True when `stored` agrees with `inferred` and may know more: same dtype,
// and every dim equal or left unknown by inference (e.g. filled in from a
// model's declaration). The rule the verifier and passes use for stale types.
bool typeRefines(const TensorType& stored, const TensorType& inferred);

// Product of static dims with overflow and sanity checks (throws Error past 2^62 elements).
int64_t checkedNumel(const std::vector<int64_t>& dims);

}  // namespace friction
