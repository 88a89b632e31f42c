// Shape arithmetic shared by inference (ir/ops) and the interpreter's kernels,
// so both agree on output shapes by construction.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/Shape.h"

namespace friction {

// Numpy-style broadcast of two shapes; symbolic dims broadcast when equal or
// against 1. Returns false on a static mismatch.
bool broadcastShapes(const Shape& a, const Shape& b, Shape& out);
// Static version; throws Error("<what>: cannot broadcast ...") on mismatch.
std::vector<int64_t> broadcastStatic(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                     const std::string& what);

// Output extent of a sliding window (Conv, pools), ONNX formula.
int64_t windowOutput(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t padBegin,
                     int64_t padEnd, bool ceilMode);

// Resolves auto_pad (SAME_UPPER/SAME_LOWER/VALID/NOTSET) into explicit pads
// [begin..., end...] for the spatial dims.
std::vector<int64_t> resolvePads(const std::string& autoPad, const std::vector<int64_t>& in,
                                 const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                                 const std::vector<int64_t>& dilations, std::vector<int64_t> pads);

// Dim arithmetic used by shape tracking: static operands compute, symbolic
// ones give an unknown dim (or the other operand for x*1, x+0, x/1).
Dim mulDims(const Dim& a, const Dim& b);

}  // namespace friction
