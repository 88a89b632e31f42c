#include "runtime/interp/kernels/KernelUtil.h"

namespace friction::interp {

std::vector<int64_t> broadcastIndexMap(const std::vector<int64_t>& outShape, const std::vector<int64_t>& inShape) {
  size_t r = outShape.size();
  FRICTION_CHECK(inShape.size() <= r, "broadcast: input rank exceeds output rank");
  // Input strides aligned to the output's trailing dims; broadcast dims get stride 0.
  std::vector<int64_t> inStrides(r, 0);
  std::vector<int64_t> s = stridesOf(inShape);
  for (size_t i = 0; i < inShape.size(); ++i) {
    size_t o = r - inShape.size() + i;
    inStrides[o] = inShape[i] == 1 ? 0 : s[i];
  }
  int64_t total = checkedNumel(outShape);
  std::vector<int64_t> map(static_cast<size_t>(total));
  std::vector<int64_t> idx(r, 0);
  int64_t flat = 0;
  for (int64_t k = 0; k < total; ++k) {
    map[size_t(k)] = flat;
    for (int d = int(r) - 1; d >= 0; --d) {
      idx[size_t(d)]++;
      flat += inStrides[size_t(d)];
      if (idx[size_t(d)] < outShape[size_t(d)]) break;
      flat -= inStrides[size_t(d)] * idx[size_t(d)];
      idx[size_t(d)] = 0;
    }
  }
  return map;
}

int64_t normalizeAxis(const Node& node, int64_t axis, int64_t rank) {
  FRICTION_CHECK(axis >= -rank && axis < rank,
                 node.describe() + ": axis " + std::to_string(axis) + " out of range for rank " +
                     std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

}  // namespace friction::interp
