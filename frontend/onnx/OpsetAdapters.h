// Rewrites nodes of other opsets into the opset-17 form friction's IR uses, before inference. Older ones:
// attributes that became inputs (Clip, Split, Squeeze, Unsqueeze, ReduceSum, Pad, Slice, Dropout),
// Resize-10 and Upsample, the pre-13 "flatten to 2-D" Softmax family. Newer ones (18+): Reduce* axes as
// inputs, Split num_outputs, Resize axes, and new ops written with supported ones (Gelu, GroupNormalization,
// RMSNormalization, Mish, Swish, Attention: DecomposeAttention.cpp). The quantization ops of any opset are
// written as their float emulation (DecomposeQuantization.cpp). The table in OpsetAdapters.cpp lists every
// change; docs/conformance.md prints those of opsets 18 and later.
#pragma once
#include <string>
#include <vector>

#include "ir/Graph.h"

namespace friction::onnxio {

struct OpsetAdapter {
  const char* op;
  int64_t from, before;  // applies to models whose default-domain opset is in [from, before)
  void (*fn)(Graph&, Node&);  // null: a change the op already supports as it is
  const char* what;
};
std::vector<OpsetAdapter> opsetAdapters();

// True for an op outside the registry that the adapters rewrite at this opset (Upsample, Gelu, ...).
bool isAdaptedOp(const std::string& op, int64_t opset);
// Adapts `node` (its inputs are already typed) from `opset` to opset 17. May
// add nodes and initializers to `graph`; added nodes are already inferred.
void adaptToOpset17(Graph& graph, Node& node, int64_t opset);

}  // namespace friction::onnxio
