#include "ir/ops/ShapeHelpers.h"

#include <algorithm>

#include "ir/Error.h"

namespace friction {

bool broadcastShapes(const Shape& a, const Shape& b, Shape& out) {
  if (!a.hasRank() || !b.hasRank()) {
    out = Shape::unknownRank();
    return true;
  }
  size_t r = std::max(a.rank(), b.rank());
  std::vector<Dim> dims(r);
  for (size_t i = 0; i < r; ++i) {
    const Dim one(1);
    const Dim& da = i < r - a.rank() ? one : a[i - (r - a.rank())];
    const Dim& db = i < r - b.rank() ? one : b[i - (r - b.rank())];
    if (da == db) dims[i] = da;
    else if (da.isStatic() && da.value == 1) dims[i] = db;
    else if (db.isStatic() && db.value == 1) dims[i] = da;
    else if (da.isStatic() && db.isStatic()) return false;
    else if (da.isStatic()) dims[i] = da;  // symbolic must then equal the static extent (or be 1)
    else if (db.isStatic()) dims[i] = db;
    else dims[i] = Dim::unknown();
  }
  out = Shape(std::move(dims));
  return true;
}

std::vector<int64_t> broadcastStatic(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                     const std::string& what) {
  size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1) out[i] = da;
    else if (da == 1) out[i] = db;
    else
      throw Error(what + ": cannot broadcast " + Shape::fromStatic(a).str() + " with " +
                  Shape::fromStatic(b).str());
  }
  return out;
}

int64_t windowOutput(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t padBegin,
                     int64_t padEnd, bool ceilMode) {
  int64_t effective = (kernel - 1) * dilation + 1;
  int64_t span = in + padBegin + padEnd - effective;
  if (span < 0) return 0;
  int64_t out = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  // With ceil mode the last window must start inside the input or left padding.
  if (ceilMode && (out - 1) * stride >= in + padBegin) out--;
  return out;
}

std::vector<int64_t> resolvePads(const std::string& autoPad, const std::vector<int64_t>& in,
                                 const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                                 const std::vector<int64_t>& dilations, std::vector<int64_t> pads) {
  size_t n = in.size();
  if (autoPad == "NOTSET" || autoPad.empty()) {
    if (pads.empty()) pads.assign(2 * n, 0);
    FRICTION_CHECK(pads.size() == 2 * n, "pads has " + std::to_string(pads.size()) + " entries, expected " +
                                             std::to_string(2 * n));
    return pads;
  }
  pads.assign(2 * n, 0);
  if (autoPad == "VALID") return pads;
  FRICTION_CHECK(autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER", "unknown auto_pad '" + autoPad + "'");
  for (size_t i = 0; i < n; ++i) {
    int64_t out = (in[i] + strides[i] - 1) / strides[i];
    int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in[i]);
    int64_t small = total / 2, big = total - small;
    pads[i] = autoPad == "SAME_UPPER" ? small : big;
    pads[i + n] = autoPad == "SAME_UPPER" ? big : small;
  }
  return pads;
}

Dim mulDims(const Dim& a, const Dim& b) {
  if (a.isStatic() && b.isStatic()) return Dim(a.value * b.value);
  if (a.isStatic() && a.value == 1) return b;
  if (b.isStatic() && b.value == 1) return a;
  return Dim::unknown();
}

}  // namespace friction
