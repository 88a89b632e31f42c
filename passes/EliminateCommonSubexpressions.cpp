// eliminate-common-subexpressions: merges identical small initializers (same
// dtype, shape and bytes), then nodes with the same op, the same input
// values and the same attributes. Walking in topological order with inputs
// already merged collapses whole duplicated chains in one sweep. Users of a
// merged value read the kept one; merged nodes and initializers are removed.
// A value that is a graph output is never merged away (it would change the
// output's name); nondeterministic ops and nodes with regions are left alone.
#include <cstdint>
#include <unordered_map>
#include <unordered_set>

#include "ir/TextFormat.h"
#include "ir/OpRegistry.h"
#include "passes/Pass.h"
#include "passes/PassUtil.h"

namespace friction {
namespace {

// Constants are compared by their bytes; bigger ones (weights) are rarely
// duplicated and would make the keys costly.
constexpr size_t kMaxConstantBytes = 4096;

std::string constantKey(const Tensor& t) {
  std::string key = t.type().str() + "|";
  key.append(static_cast<const char*>(t.rawData()), t.byteSize());
  return key;
}

// Op, inputs (by identity) and attributes; nullopt when the node must not merge.
std::optional<std::string> nodeKey(const Node& n) {
  if (hasTrait(n, OpTrait::Nondeterministic) || hasRegion(n)) return std::nullopt;
  std::string key = n.op() + "|" + std::to_string(n.numOutputs()) + "|";
  for (const Value* in : n.inputs()) key += std::to_string(reinterpret_cast<uintptr_t>(in)) + ",";
  for (const auto& [name, a] : n.attrs()) {
    if (const Tensor* t = std::get_if<Tensor>(&a); t && t->byteSize() > kMaxConstantBytes) return std::nullopt;
    key += "|" + name + "=" + printAttribute(a);
  }
  return key;
}

}  // namespace

void eliminateCommonSubexpressions(Graph& g, PassContext& ctx) {
  UseIndex uses(g);
  std::unordered_set<const Value*> mergedInits;
  std::unordered_map<std::string, Value*> constants;
  for (Value* v : g.initializers()) {
    if (v->constant().byteSize() > kMaxConstantBytes || uses.isGraphOutput(v)) continue;
    auto [it, fresh] = constants.emplace(constantKey(v->constant()), v);
    if (fresh) continue;
    uses.replaceAllUses(v, it->second);
    mergedInits.insert(v);
    ctx.count("constants merged");
  }

  std::unordered_set<const Node*> mergedNodes;
  std::unordered_map<std::string, Node*> seen;
  for (const auto& up : g.nodes()) {
    Node& n = *up;
    auto key = nodeKey(n);
    if (!key) continue;
    auto [it, fresh] = seen.emplace(*key, &n);
    if (fresh) continue;
    bool isOutput = false;
    for (const Value* out : n.outputs()) isOutput |= uses.isGraphOutput(out);
    if (isOutput) continue;
    for (size_t i = 0; i < n.numOutputs(); ++i) uses.replaceAllUses(n.output(i), it->second->output(i));
    mergedNodes.insert(&n);
    ctx.count("nodes merged");
  }
  g.eraseNodes([&](const Node& n) { return mergedNodes.count(&n) > 0; });
  g.eraseInitializers([&](const Value* v) { return mergedInits.count(v) > 0; });
}

}  // namespace friction
