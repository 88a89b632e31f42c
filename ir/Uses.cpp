#include "ir/Uses.h"

#include <algorithm>
#include <unordered_set>

#include "ir/Error.h"

namespace friction {

UseIndex::UseIndex(const Graph& g) : g_(g) {
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node* n = g.nodes()[i].get();
    position_[n] = i;
    for (Value* in : n->inputs())
      if (in) users_[in].push_back(n);
  }
  for (Value* v : g.outputs()) outputs_[v]++;
}

UseIndex::UseIndex(Graph& g) : UseIndex(static_cast<const Graph&>(g)) { mutable_ = &g; }

const std::vector<Node*>& UseIndex::users(const Value* v) const {
  static const std::vector<Node*> none;
  auto it = users_.find(v);
  return it == users_.end() ? none : it->second;
}

Node* UseIndex::soleUser(const Value* v) const {
  const auto& us = users(v);
  return us.size() == 1 && !isGraphOutput(v) ? us[0] : nullptr;
}

bool UseIndex::unused(const Node& n) const {
  return std::all_of(n.outputs().begin(), n.outputs().end(), [&](const Value* v) { return unused(v); });
}

void UseIndex::setInput(Node& n, size_t i, Value* v) {
  FRICTION_CHECK(mutable_, "UseIndex: rewiring through an index built over a const graph");
  if (Value* old = n.input(i)) {
    auto& list = users_[old];
    list.erase(std::find(list.begin(), list.end(), &n));
  }
  n.setInput(i, v);
  if (v) users_[v].push_back(&n);
}

void UseIndex::replaceAllUses(Value* from, Value* to) {
  FRICTION_CHECK(mutable_, "UseIndex: rewiring through an index built over a const graph");
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
    mutable_->setOutputs(std::move(outs));
  }
}

}  // namespace friction
