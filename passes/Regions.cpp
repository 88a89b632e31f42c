#include "passes/Regions.h"

#include <algorithm>

#include "ir/Error.h"
#include "ir/OpRegistry.h"
#include "ir/Verifier.h"
#include "passes/PassUtil.h"

namespace friction {

bool isConvex(const UseIndex& u, const std::unordered_set<const Node*>& region) {
  // A path that leaves and re-enters ends at a region node, so it only visits
  // nodes before the region's last node in topological order.
  size_t last = 0;
  for (const Node* n : region) last = std::max(last, u.position(n));
  std::vector<const Node*> work;
  std::unordered_set<const Node*> seen;
  auto leave = [&](const Node* n) {
    for (const Value* v : n->outputs())
      for (Node* c : u.users(v))
        if (!region.count(c) && u.position(c) < last && seen.insert(c).second) work.push_back(c);
  };
  for (const Node* n : region) leave(n);
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    for (const Value* v : n->outputs())
      for (Node* c : u.users(v)) {
        if (region.count(c)) return false;
        if (u.position(c) < last && seen.insert(c).second) work.push_back(c);
      }
  }
  return true;
}

namespace {

// True when `v`, made inside the region, is used after it or returned: one of its outputs.
bool usedOutside(const UseIndex& u, const std::unordered_set<const Node*>& inRegion, const Value* v) {
  if (u.isGraphOutput(v)) return true;
  for (const Node* c : u.users(v))
    if (!inRegion.count(c)) return true;
  return false;
}

// False for a region of dead nodes (eliminate-dead-code off): it would have no outputs.
bool hasResult(const UseIndex& u, const std::unordered_set<const Node*>& inRegion) {
  for (const Node* n : inRegion)
    for (const Value* v : n->outputs())
      if (usedOutside(u, inRegion, v)) return true;
  return false;
}

// Builds the Fused node for `nodes` (appended to `g`), recording in `replace`
// which old values its outputs stand for. Consumers are rewired later.
Node* buildRegion(Graph& g, const UseIndex& u, const std::vector<Node*>& nodes, RegionKind kind,
                  std::unordered_map<const Value*, Value*>& replace,
                  StructuralConstants constants = StructuralConstants::Operands) {
  std::unordered_set<const Node*> inRegion(nodes.begin(), nodes.end());
  std::vector<Node*> order(nodes);
  std::sort(order.begin(), order.end(), [&](Node* a, Node* b) { return u.position(a) < u.position(b); });

  // Copy the nodes into the body, binding outside values to body inputs.
  const std::string kindName(regionKindName(kind));
  auto body = std::make_shared<Graph>(kindName);
  body->setOpset(g.opset());
  std::unordered_map<const Value*, Value*> inner;
  std::vector<Value*> regionInputs, regionOutputs;
  std::vector<std::string> provenance;
  for (Node* n : order) {
    std::vector<Value*> ins;
    for (Value* v : n->inputs()) {
      if (v && !inner.count(v) && constants == StructuralConstants::CopiedIn && isStructuralConst(v)) {
        inner[v] = body->addInitializer(v->name(), *constantData(v));
      } else if (v && !inner.count(v)) {
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
      if (usedOutside(u, inRegion, v)) regionOutputs.push_back(v);
    }
    provenance.push_back(n->name());
  }
  for (Value* v : regionOutputs) body->addOutput(inner.at(v));
  verify(*body);

  std::vector<std::string> outNames;
  for (Value* v : regionOutputs) outNames.push_back(g.freshName(v->name()));
  Node* fused = g.addNode("Fused", regionInputs, outNames, fusedAttrs(body, kind, provenance),
                          kindName + ":" + order.back()->name());
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

Node* fuseRegion(Graph& g, const std::vector<Node*>& nodes, RegionKind kind, PassContext& ctx) {
  UseIndex u(g);
  std::unordered_set<const Node*> inRegion(nodes.begin(), nodes.end());
  if (!hasResult(u, inRegion)) {
    ctx.count("regions left alone (dead)");
    return nullptr;
  }
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

namespace {

// Contracts disjoint regions with one use analysis and one sort; each must be convex, and no pair may reach each
// other both ways (true of single-output chains, and of regions each reading only earlier ones' values).
void fuseDisjointRegions(Graph& g, const std::vector<std::vector<Node*>>& regions, RegionKind kind,
                         PassContext& ctx, StructuralConstants constants, bool singleOutput) {
  UseIndex u(g);
  std::unordered_set<const Node*> fusedAway;
  std::unordered_map<const Value*, Value*> replace;
  for (const auto& nodes : regions) {
    std::unordered_set<const Node*> inRegion(nodes.begin(), nodes.end());
    if (!hasResult(u, inRegion)) {
      ctx.count("regions left alone (dead)");
      continue;
    }
    if (!isConvex(u, inRegion)) {
      ctx.count("regions rejected (cycle)");
      continue;
    }
    size_t outputsBefore = replace.size();
    buildRegion(g, u, nodes, kind, replace, constants);
    FRICTION_CHECK(!singleOutput || replace.size() == outputsBefore + 1,
                   std::string(regionKindName(kind)) + " region must have exactly one output");
    fusedAway.insert(inRegion.begin(), inRegion.end());
    ctx.count("regions");
    ctx.count("nodes fused", int64_t(nodes.size()));
  }
  if (!fusedAway.empty()) finishRegions(g, fusedAway, replace);
}

}  // namespace

void fuseSingleOutputRegions(Graph& g, const std::vector<std::vector<Node*>>& regions, RegionKind kind,
                             PassContext& ctx) {
  // Disjoint convex regions with one output each can be contracted together:
  // a cycle through two of them would need each to end before the other.
  fuseDisjointRegions(g, regions, kind, ctx, StructuralConstants::Operands, /*singleOutput=*/true);
}

void fuseRegionsInOrder(Graph& g, const std::vector<std::vector<Node*>>& regions, RegionKind kind, PassContext& ctx,
                        StructuralConstants constants) {
  fuseDisjointRegions(g, regions, kind, ctx, constants, /*singleOutput=*/false);
}

}  // namespace friction
