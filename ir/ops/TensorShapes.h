// Shape arithmetic of the tensor (data movement) ops, shared by shape
// inference (ir/ops/TensorOps.cpp) and the interpreter's kernels
// (runtime/interp/kernels/ShapeKernels.cpp, IndexKernels.cpp) so both agree by construction.
// Functions throw Error without naming the node; callers add that.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/Graph.h"

namespace friction {

// A raw integer element of tracked contents (not a symbol, possibly negative).
inline bool isIntDim(const Dim& d) { return d.symbol.empty(); }
std::vector<Dim> dimsOf(const std::vector<int64_t>& v);

// Reshape target resolution: 0 copies the input dim (unless allowZero), -1 is
// inferred from the element count (symbolic factors cancel when they can),
// symbolic entries pass through. Fails on count mismatches and bad entries.
std::vector<Dim> reshapeDims(const Shape& in, const std::vector<Dim>& target, bool allowZero);

// Transpose's perm, defaulting to reversed axes; validated as a permutation.
std::vector<int64_t> transposePerm(const Node& node, size_t rank);

// Axes of Squeeze/Unsqueeze-style inputs, normalized against `rank` and checked for duplicates.
std::vector<int64_t> normalizeAxes(const std::vector<int64_t>& axes, int64_t rank);

// Slice: one resolved axis. `count` elements are taken from `start` by `step`.
struct SliceAxis {
  int64_t axis, start, end, step;
};
// Normalizes axes (default 0..n-1) and steps (default 1) and validates lengths.
std::vector<SliceAxis> sliceAxes(int64_t rank, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                                 const std::optional<std::vector<int64_t>>& axes,
                                 const std::optional<std::vector<int64_t>>& steps);
// Clamps start/end of one axis against its extent (ONNX rules, incl. negative
// steps and INT64_MAX ends) and returns the number of elements taken.
int64_t clampSlice(int64_t dim, SliceAxis& s);

// Pad: [begin..., end...] over all `rank` axes from the pads input and optional axes input.
std::vector<int64_t> padsForAllAxes(int64_t rank, const std::vector<int64_t>& pads,
                                    const std::optional<std::vector<int64_t>>& axes);

// Pad's source position in [0, n) of output position i - pad (i outside [0, n)) in `mode`: "edge" clamps,
// "wrap" wraps around, "reflect" mirrors without repeating the edge; -1 for "constant" (the fill value). n > 0
// unless mode is "constant". The interpreter's Pad and the compiled one read the same positions.
int64_t padSourceIndex(const std::string& mode, int64_t i, int64_t n);

// Split sizes along an axis of `extent`: the split input, or equal parts.
std::vector<int64_t> splitSizes(int64_t extent, const std::optional<std::vector<int64_t>>& split, size_t numOutputs);

// Resize output extent for a scale (ONNX reference: floor(in * scale)).
int64_t resizeDim(int64_t in, float scale);

// Resize's interpolation attributes (the Resize-18 ones, axes, antialias and keep_aspect_ratio_policy, are
// resolved at import: frontend/onnx/OpsetAdapters.cpp).
struct ResizeParams {
  std::string mode, ctm, nearestMode;
  double cubicA, extrapolation;
  bool excludeOutside;
  bool antialias;  // Resize-18: linear and cubic downscaling widen the filter by 1 / scale
};
ResizeParams resizeParams(const Node& node);
// Input taps (indices into an axis of `in` elements, and their weights) of output position o of `out` along
// one axis, per the ONNX reference implementation: 2 taps for nearest and linear (nearest weighs one of them
// 1), 4 for cubic. Returns false where tf_crop_and_resize extrapolates.
bool resizeTaps(const ResizeParams& p, int64_t o, int64_t in, int64_t out, double scale, double roiStart,
                double roiEnd, std::vector<int64_t>& idx, std::vector<double>& w);

// GridSample's attributes (opset 16's mode names; the importer renames opset 20's linear and cubic).
struct GridSampleParams {
  enum class Mode { Nearest, Linear, Cubic } mode;
  enum class Padding { Zeros, Border, Reflection } padding;
  bool alignCorners;
};
GridSampleParams gridSampleParams(const Node& node);  // an Error naming the node for other modes
// The taps of one spatial axis of `extent` elements at normalized grid coordinate `g` (-1 and 1 the edges), as
// the ONNX reference computes them (coordinates in f32): input indices, -1 for a zero outside the image
// (padding zeros), and weights; 1 tap for nearest, 2 for linear, 4 for cubic. The interpreter's GridSample and
// the compiled one read the same taps.
void gridSampleTaps(const GridSampleParams& p, float g, int64_t extent, std::vector<int64_t>& idx,
                    std::vector<float>& w);

// Range's element count: max(ceil((limit - start) / delta), 0).
int64_t rangeCount(double start, double limit, double delta);


// The tensor a Constant node produces from whichever value attribute it has.
Tensor constantValue(const Node& node);

}  // namespace friction
