#include "ir/Shape.h"

#include "ir/Error.h"

namespace friction {

Shape Shape::fromStatic(const std::vector<int64_t>& dims) {
  std::vector<Dim> d(dims.begin(), dims.end());
  return Shape(std::move(d));
}

bool Shape::isStatic() const {
  if (!rankKnown_) return false;
  for (const auto& d : dims_)
    if (!d.isStatic()) return false;
  return true;
}

std::vector<int64_t> Shape::staticDims() const {
  FRICTION_CHECK(isStatic(), "shape " + str() + " is not static");
  std::vector<int64_t> r;
  r.reserve(dims_.size());
  for (const auto& d : dims_) r.push_back(d.value);
  return r;
}

std::optional<int64_t> Shape::numel() const {
  if (!isStatic()) return std::nullopt;
  return checkedNumel(staticDims());
}

std::string Shape::str() const {
  if (!rankKnown_) return "[*]";
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    s += dims_[i].str();
  }
  return s + "]";
}

bool typeRefines(const TensorType& stored, const TensorType& inferred) {
  if (stored.dtype != inferred.dtype) return false;
  if (!inferred.shape.hasRank()) return true;
  if (!stored.shape.hasRank() || stored.shape.rank() != inferred.shape.rank()) return false;
  for (size_t i = 0; i < stored.shape.rank(); ++i)
    if (!(stored.shape[i] == inferred.shape[i] || inferred.shape[i].isUnknown())) return false;
  return true;
}

int64_t checkedNumel(const std::vector<int64_t>& dims) {
  constexpr int64_t kLimit = int64_t(1) << 62;
  int64_t n = 1;
  for (int64_t d : dims) {
    FRICTION_CHECK(d >= 0, "negative dimension " + std::to_string(d));
    if (d == 0) return 0;
    FRICTION_CHECK(n <= kLimit / d, "tensor has too many elements (over 2^62)");
    n *= d;
  }
  return n;
}

}  // namespace friction
