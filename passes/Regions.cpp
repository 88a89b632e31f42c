#include "passes/Regions.h"

#include <algorithm>

#include "ir/Error.h"
#include "ir/OpRegistry.h"
#include "ir/Verifier.h"
#include "passes/PassUtil.h"

namespace friction {

UseInfo::UseInfo(const Graph& g) : g_(g), graphOutputs_(g.outputs().begin(), g.outputs().end()) {
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node* n = g.nodes()[i].get();
    index_[n] = i;
    for (Value* in : n->inputs())
      if (in) users_[in].push_back(n);
  }
}

const std::vector<Node*>& UseInfo::users(const Value* v) const {
  static const std::vector<Node*> none;
  auto it = users_.find(v);
  return it == users_.end() ? none : it->second;
}

Node* UseInfo::soleUser(const Value* v) const {
  const auto& us = users(v);
  return us.size() == 1 && !isGraphOutput(v) ? us[0] : nullptr;
}

const Tensor* constantOf(const Value* v) {
  if (!v) return nullptr;
  if (v->isConstant()) return &v->constant();
  Node* p = v->producer();
  if (p && p->op() == "Constant" && p->hasAttr("value")) return &p->attrTensor("value");
  return nullptr;
}

std::vector<Node*> matchErfGelu(const UseInfo& u, const Value* x) {
  const auto& xs = u.users(x);
  if (xs.size() != 2 || xs[0] == xs[1]) return {};
  auto constOperand = [](const Node* n, const Value* v) {
    return n->numInputs() == 2 && (n->input(0) == v || n->input(1) == v) &&
           constantOf(n->input(0) == v ? n->input(1) : n->input(0)) != nullptr;
  };
  for (int k = 0; k < 2; ++k) {
    Node* scale = xs[k];
    Node* other = xs[1 - k];
    if (!(isOp(scale, "Div") || isOp(scale, "Mul")) || scale->input(0) != x || !constOperand(scale, x)) continue;
    Node* erf = u.soleUser(scale->output(0));
    if (!isOp(erf, "Erf")) continue;
    Node* plus = u.soleUser(erf->output(0));
    if (!isOp(plus, "Add") || !constOperand(plus, erf->output(0))) continue;
    Node* mul = u.soleUser(plus->output(0));
    if (!isOp(mul, "Mul")) continue;
    if (other == mul) {  // (x · (1+erf)) · 0.5
      Node* half = u.soleUser(mul->output(0));
      if (!isOp(half, "Mul") || !constOperand(half, mul->output(0))) continue;
      return {scale, erf, plus, mul, half};
    }
    // (x · 0.5) · (1+erf)
    if (isOp(other, "Mul") && constOperand(other, x) && u.soleUser(other->output(0)) == mul)
      return {scale, erf, plus, other, mul};
  }
  return {};
}

bool isConvex(const UseInfo& u, const std::unordered_set<const Node*>& region) {
  // A path that leaves and re-enters ends at a region node, so it only visits
  // nodes before the region's last node in topological order.
  size_t last = 0;
  for (const Node* n : region) last = std::max(last, u.index(n));
  std::vector<const Node*> work;
  std::unordered_set<const Node*> seen;
  auto leave = [&](const Node* n) {
    for (const Value* v : n->outputs())
      for (Node* c : u.users(v))
        if (!region.count(c) && u.index(c) < last && seen.insert(c).second) work.push_back(c);
  };
  for (const Node* n : region) leave(n);
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    for (const Value* v : n->outputs())
      for (Node* c : u.users(v)) {
        if (region.count(c)) return false;
        if (u.index(c) < last && seen.insert(c).second) work.push_back(c);
      }
  }
  return true;
}

namespace {

// Builds the Fused node for `nodes` (appended to `g`), recording in `replace`
// which old values its outputs stand for. Consumers are rewired later.
Node* buildRegion(Graph& g, const UseInfo& u, const std::vector<Node*>& nodes, const std::string& kind,
                  std::unordered_map<const Value*, Value*>& replace) {
  std::unordered_set<const Node*> inRegion(nodes.begin(), nodes.end());
  std::vector<Node*> order(nodes);
  std::sort(order.begin(), order.end(), [&](Node* a, Node* b) { return u.index(a) < u.index(b); });

  // Copy the nodes into the body, binding outside values to body inputs.
  auto body = std::make_shared<Graph>(kind);
  body->setOpset(g.opset());
  std::unordered_map<const Value*, Value*> inner;
  std::vector<Value*> regionInputs, regionOutputs;
  std::vector<std::string> provenance;
  for (Node* n : order) {
    std::vector<Value*> ins;
    for (Value* v : n->inputs()) {
      if (v && !inner.count(v)) {
        inner[v] = body->addInput(v->name(), v->type());
        regionInputs.push_back(v);
      }
      ins.push_back(v ? inner.at(v) : nullptr);
    }
    std::vector<std::string> names;
    for (Value* v : n->outputs()) names.push_back(v->name());
    Node* copy = body->addNode(n->op(), std::move(ins), names, n->attrs(), n->name());
    for (size_t i = 0; i < n->numOutputs(); ++i) {
      Value* v = n->output(i);
      copy->output(i)->setType(v->type());
      copy->output(i)->setKnownContents(v->knownContents());
      inner[v] = copy->output(i);
      bool usedOutside = u.isGraphOutput(v);
      for (Node* c : u.users(v)) usedOutside |= !inRegion.count(c);
      if (usedOutside) regionOutputs.push_back(v);
    }
    provenance.push_back(n->name());
  }
  for (Value* v : regionOutputs) body->addOutput(inner.at(v));
  verify(*body);

  std::vector<std::string> outNames;
  for (Value* v : regionOutputs) outNames.push_back(g.freshName(v->name()));
  Node* fused = g.addNode("Fused", regionInputs, outNames,
                          {{"body", body}, {"kind", kind}, {"provenance", provenance}},
                          kind + ":" + order.back()->name());
  inferNode(*fused);
  for (size_t i = 0; i < regionOutputs.size(); ++i) {
    fused->output(i)->setKnownContents(regionOutputs[i]->knownContents());
    replace[regionOutputs[i]] = fused->output(i);
  }
  return fused;
}

// Rewires consumers and graph outputs to the regions' results, removes the
// fused nodes, and sorts once.
void finishRegions(Graph& g, const std::unordered_set<const Node*>& fusedAway,
                   const std::unordered_map<const Value*, Value*>& replace) {
  replaceAllUses(g, replace, [&](const Node& n) { return fusedAway.count(&n) > 0; });
  g.eraseNodes([&](const Node& n) { return fusedAway.count(&n) > 0; });
  g.topologicalSort();
}

}  // namespace

Node* fuseRegion(Graph& g, const std::vector<Node*>& nodes, const std::string& kind, PassContext& ctx) {
  UseInfo u(g);
  std::unordered_set<const Node*> inRegion(nodes.begin(), nodes.end());
  if (!isConvex(u, inRegion)) {
    ctx.count("regions rejected (cycle)");
    return nullptr;
  }
  std::unordered_map<const Value*, Value*> replace;
  Node* fused = buildRegion(g, u, nodes, kind, replace);
  finishRegions(g, inRegion, replace);
  ctx.count("regions");
  ctx.count("nodes fused", int64_t(nodes.size()));
  return fused;
}

void fuseSingleOutputRegions(Graph& g, const std::vector<std::vector<Node*>>& regions, const std::string& kind,
                             PassContext& ctx) {
  // Disjoint convex regions with one output each can be contracted together:
  // a cycle through two of them would need each to end before the other.
  UseInfo u(g);
  std::unordered_set<const Node*> fusedAway;
  std::unordered_map<const Value*, Value*> replace;
  for (const auto& nodes : regions) {
    std::unordered_set<const Node*> inRegion(nodes.begin(), nodes.end());
    if (!isConvex(u, inRegion)) {
      ctx.count("regions rejected (cycle)");
      continue;
    }
    size_t outputsBefore = replace.size();
    buildRegion(g, u, nodes, kind, replace);
    FRICTION_CHECK(replace.size() == outputsBefore + 1, kind + " region must have exactly one output");
    fusedAway.insert(inRegion.begin(), inRegion.end());
    ctx.count("regions");
    ctx.count("nodes fused", int64_t(nodes.size()));
  }
  if (!fusedAway.empty()) finishRegions(g, fusedAway, replace);
}

}  // namespace friction
