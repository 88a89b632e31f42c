#include "passes/PassUtil.h"

#include <algorithm>
#include <unordered_set>

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

UseIndex::UseIndex(Graph& g) : g_(g) {
  for (const auto& n : g.nodes())
    for (Value* in : n->inputs())
      if (in) users_[in].push_back(n.get());
  for (Value* v : g.outputs()) outputs_[v]++;
}

const std::vector<Node*>& UseIndex::users(const Value* v) const {
  static const std::vector<Node*> none;
  auto it = users_.find(v);
  return it == users_.end() ? none : it->second;
}

bool UseIndex::isGraphOutput(const Value* v) const { return outputs_.count(v) > 0; }

bool UseIndex::unused(const Node& n) const {
  return std::all_of(n.outputs().begin(), n.outputs().end(), [&](const Value* v) { return unused(v); });
}

void UseIndex::setInput(Node& n, size_t i, Value* v) {
  if (Value* old = n.input(i)) {
    auto& list = users_[old];
    list.erase(std::find(list.begin(), list.end(), &n));
  }
  n.setInput(i, v);
  if (v) users_[v].push_back(&n);
}

void UseIndex::replaceAllUses(Value* from, Value* to) {
  if (from == to) return;
  auto it = users_.find(from);
  if (it != users_.end()) {
    std::vector<Node*> list = std::move(it->second);
    users_.erase(it);
    std::unordered_set<Node*> done;
    for (Node* u : list) {
      if (!done.insert(u).second) continue;
      for (size_t i = 0; i < u->numInputs(); ++i)
        if (u->input(i) == from) {
          u->setInput(i, to);
          users_[to].push_back(u);
        }
    }
  }
  auto out = outputs_.find(from);
  if (out != outputs_.end()) {
    outputs_[to] += out->second;
    outputs_.erase(from);
    std::vector<Value*> outs = g_.outputs();
    std::replace(outs.begin(), outs.end(), from, to);
    g_.setOutputs(std::move(outs));
  }
}

const Tensor* constantData(const Value* v) {
  if (!v) return nullptr;
  if (v->isConstant()) return &v->constant();
  const Node* p = v->producer();
  if (p && p->op() == "Constant" && p->hasAttr("value")) return &p->attrTensor("value");
  return nullptr;
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

bool isSplat(const Tensor& t, double x) {
  for (int64_t i = 0; i < t.numel(); ++i)
    if (t.elementAsDouble(i) != x) return false;
  return true;
}

bool hasRegion(const Node& n) {
  return std::any_of(n.attrs().begin(), n.attrs().end(),
                     [](const auto& a) { return std::holds_alternative<std::shared_ptr<Graph>>(a.second); });
}

bool isNondeterministic(const std::string& op) {
  static const std::unordered_set<std::string> ops = {"RandomNormal",     "RandomUniform", "RandomNormalLike",
                                                      "RandomUniformLike", "Multinomial",   "Bernoulli"};
  return ops.count(op) > 0;
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
