#include "ir/Specialize.h"

#include "ir/Error.h"
#include "ir/OpRegistry.h"

namespace friction {

DimBindings batchBindings(const Graph& graph, int64_t batch) {
  FRICTION_CHECK(batch > 0, "batch must be positive, got " + std::to_string(batch));
  DimBindings b;
  for (const Value* in : graph.inputs())
    if (in->shape().hasRank() && in->shape().rank() > 0 && !in->shape()[0].isStatic() &&
        !in->shape()[0].isUnknown())
      b[in->shape()[0].symbol] = batch;
  return b;
}

void bindInputDims(Graph& graph, const DimBindings& bindings) {
  if (bindings.empty()) return;
  for (Value* in : graph.inputs()) {
    if (!in->shape().hasRank()) continue;
    Shape s = in->shape();
    for (size_t i = 0; i < s.rank(); ++i) {
      auto it = bindings.find(s[i].symbol);
      if (!s[i].isStatic() && it != bindings.end()) s[i] = Dim(it->second);
    }
    in->setType({in->dtype(), s});
  }
  // Outputs declared with symbols must be re-derived, not kept.
  for (const auto& n : graph.nodes())
    for (Value* out : n->outputs()) out->setKnownContents(std::nullopt);
  inferGraph(graph);
}

}  // namespace friction
