// Shape math shared by NN-op inference (ir/ops/NnOps.cpp) and the
// interpreter's kernels: sliding-window geometry (Conv, ConvTranspose, pools),
// MatMul broadcasting, and Einsum equation parsing.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/Graph.h"

namespace friction {

// Resolved geometry of a sliding window over the spatial dims.
struct Window {
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<int64_t> pads;  // [begin..., end...]
  bool ceilMode = false;

  size_t rank() const { return kernel.size(); }
  int64_t kernelSize() const;
  // Output extents for static input extents (windowOutput per dim).
  std::vector<int64_t> outputSpatial(const std::vector<int64_t>& in) const;
};

// Reads kernel_shape/strides/dilations/pads/auto_pad/ceil_mode of `node` and
// resolves the pads for the given static spatial input extents. `kernel` is
// the weight's spatial shape for Conv, empty to require kernel_shape (pools).
// Throws Error naming the node on malformed attributes.
Window resolveWindow(const Node& node, const std::vector<int64_t>& inSpatial, std::vector<int64_t> kernel = {});

// [first, last + 1) of a window's taps t (`taps` of them, `dilation` apart) that some output position o < `out`
// reads inside [0, in): o * stride - padBegin + t * dilation. The others read only padding: a dilated conv over
// a small image (DeepLabV3's ASPP at dilation 24 and 36 over 16x16) reads inside at its centre tap alone, and
// a kernel may skip the rest. Empty (first >= last) when every tap reads padding.
std::pair<int64_t, int64_t> insideTaps(int64_t taps, int64_t in, int64_t out, int64_t stride, int64_t padBegin,
                                       int64_t dilation);

// ConvTranspose: the pads actually applied and the output spatial extents.
struct TransposeGeometry {
  Window window;  // pads resolved
  std::vector<int64_t> outSpatial;
};
TransposeGeometry resolveConvTranspose(const Node& node, const std::vector<int64_t>& inSpatial,
                                       const std::vector<int64_t>& kernel);

// Einsum: labels are letters mapped to 0..51; dims covered by "..." get labels
// 52+i (i counting from the ellipsis's first dim in the broadcast ellipsis).
struct EinsumSpec {
  std::vector<std::vector<int>> inputs;  // label per dim of each input (ellipsis expanded)
  std::vector<int> output;               // labels of the output dims
  int ellipsisRank = 0;
};
// Parses `equation` for inputs of the given ranks; throws Error on malformed equations.
EinsumSpec parseEinsum(const std::string& equation, const std::vector<size_t>& ranks);

}  // namespace friction
