// Rewrites nodes of older opsets into opset-17 form before inference:
// attributes that became inputs (Clip, Split, Squeeze, Unsqueeze, ReduceSum,
// Pad, Slice, Dropout), Resize-10 and Upsample, and the pre-13 "flatten to 2-D"
// semantics of Softmax, LogSoftmax and Hardmax.
#pragma once
#include "ir/Graph.h"

namespace friction::onnxio {

// Ops removed from ONNX that the adapters rewrite into current ones (Upsample, Scatter).
bool isLegacyOp(const std::string& op);
// Adapts `node` (its inputs are already typed) from `opset` to opset 17. May
// add nodes and initializers to `graph`; added nodes are already inferred.
void adaptToOpset17(Graph& graph, Node& node, int64_t opset);

}  // namespace friction::onnxio
