#include "passes/PassUtil.h"

#include <algorithm>

#include "ir/OpRegistry.h"

namespace friction {

void replaceAllUses(Graph& g, Value* from, Value* to) {
  for (const auto& n : g.nodes())
    for (size_t i = 0; i < n->numInputs(); ++i)
      if (n->input(i) == from) n->setInput(i, to);
  std::vector<Value*> outs = g.outputs();
  std::replace(outs.begin(), outs.end(), from, to);
  g.setOutputs(std::move(outs));
}

void replaceAllUses(Graph& g, const std::unordered_map<const Value*, Value*>& replace,
                    const std::function<bool(const Node&)>& skip) {
  for (const auto& n : g.nodes()) {
    if (skip && skip(*n)) continue;
    for (size_t i = 0; i < n->numInputs(); ++i)
      if (auto it = replace.find(n->input(i)); it != replace.end()) n->setInput(i, it->second);
  }
  std::vector<Value*> outs = g.outputs();
  for (Value*& v : outs)
    if (auto it = replace.find(v); it != replace.end()) v = it->second;
  g.setOutputs(std::move(outs));
}

std::optional<std::vector<int64_t>> staticInts(const Value* v) {
  if (!v) return std::nullopt;
  if (const Tensor* t = constantData(v)) {
    if (!(isInteger(t->dtype()) || t->dtype() == DType::Bool) || t->rank() > 1) return std::nullopt;
    return t->toInt64Vector();
  }
  if (!v->knownContents()) return std::nullopt;
  std::vector<int64_t> r;
  for (const Dim& d : *v->knownContents()) {
    // Tracked contents hold static entries (negative ones too) with an empty symbol.
    if (!d.symbol.empty()) return std::nullopt;
    r.push_back(d.value);
  }
  return r;
}

bool isStructuralConst(const Value* v) {
  const Tensor* t = constantData(v);
  return t && !isFloat(t->dtype()) && t->numel() <= 64;
}

bool isSplat(const Tensor& t, double x) {
  for (int64_t i = 0; i < t.numel(); ++i)
    if (t.elementAsDouble(i) != x) return false;
  return true;
}

bool hasRegion(const Node& n) {
  return std::any_of(n.attrs().begin(), n.attrs().end(),
                     [](const auto& a) { return std::holds_alternative<std::shared_ptr<Graph>>(a.second); });
}


bool reinferNode(Node& n) {
  std::vector<TensorType> types;
  std::vector<std::optional<std::vector<Dim>>> contents;
  for (const Value* out : n.outputs()) {
    types.push_back(out->type());
    contents.push_back(out->knownContents());
  }
  inferNode(n);
  bool changed = false;
  for (size_t i = 0; i < n.numOutputs(); ++i) {
    Value* out = n.output(i);
    if (typeRefines(types[i], out->type()))
      out->setType(types[i]);
    else
      changed = true;
    changed |= out->knownContents() != contents[i];
  }
  return changed;
}

}  // namespace friction
