// Ops the cpu backend runs as direct microkernel calls (runtime/ukernels, no
// MLIR): the NHWC regions convert-layout makes around Conv (group 1 or
// depthwise), MaxPool, AveragePool and GlobalAveragePool; Transpose; Softmax,
// LogSoftmax (last axis) and LayerNormalization, alone or as the single node
// of a fuse-reductions region. A Fused "epilogue"
// region anchored on one of them runs the native op into the region's output
// buffer, then ONE compiled elementwise kernel updates that buffer in place
// (KernelKind::NativeEpilogue in Kernels.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ir/Graph.h"

namespace friction::codegen {

class NativeKernel {
 public:
  virtual ~NativeKernel() = default;
  // Compile-time work (packing constant weights); run() works without it, slower.
  virtual void prepare() {}
  // `inputs` are the node's inputs; `out` is allocated with the output's shape and overwritten.
  virtual void run(const std::vector<Tensor>& inputs, Tensor& out) const = 0;
  virtual std::string describe() const = 0;
};

// The native kernel of `node`, or nullptr with the reason in `why`. `outer`
// are the values feeding node's inputs as the caller sees them (for a node in
// a region body, the region's operands): prepare() packs weights that are
// constants there. Empty `outer`: node.inputs().
std::unique_ptr<NativeKernel> matchNative(const Node& node, std::vector<const Value*> outer = {},
                                          std::string* why = nullptr);

}  // namespace friction::codegen
