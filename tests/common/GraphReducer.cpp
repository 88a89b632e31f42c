#include "tests/common/GraphReducer.h"

#include "ir/Uses.h"
#include "passes/Pass.h"

namespace friction::test {
namespace {

// Drops what no output depends on: the eliminate-dead-code pass.
void dropDeadNodes(Graph& g) {
  PassContext ignored;
  eliminateDeadCode(g, ignored);
}

bool holds(const std::function<bool(const Graph&)>& stillFails, const Graph& g) {
  try {
    return stillFails(g);
  } catch (...) {
    return false;
  }
}

// The graph with `value` (by name) as its only output; null when it is an input or constant.
std::unique_ptr<Graph> withOnlyOutput(const Graph& g, const std::string& value) {
  auto c = cloneGraph(g);
  Value* v = c->findValue(value);
  if (!v || !v->producer()) return nullptr;
  c->setOutputs({v});
  dropDeadNodes(*c);
  return c;
}

// The graph with node `index` bypassed through an input of its output's type; null when none has it.
std::unique_ptr<Graph> bypassing(const Graph& g, size_t index) {
  auto c = cloneGraph(g);
  Node& n = *c->nodes()[index];
  if (n.numOutputs() != 1 || !n.output(0)) return nullptr;
  Value* out = n.output(0);
  for (Value* in : n.inputs()) {
    if (!in || in->type() != out->type()) continue;
    UseIndex(*c).replaceAllUses(out, in);  // graph outputs too
    c->eraseNodes([&](const Node& m) { return &m == &n; });
    dropDeadNodes(*c);
    return c;
  }
  return nullptr;
}

}  // namespace

std::unique_ptr<Graph> minimizeGraph(const Graph& g, const std::function<bool(const Graph&)>& stillFails) {
  auto best = cloneGraph(g);
  for (bool shrunk = true; shrunk;) {
    shrunk = false;
    for (size_t i = 0; i < best->nodes().size() && !shrunk; ++i)
      for (const Value* v : best->nodes()[i]->outputs()) {
        if (!v) continue;
        auto c = withOnlyOutput(*best, v->name());
        if (c && c->nodes().size() < best->nodes().size() && holds(stillFails, *c)) {
          best = std::move(c), shrunk = true;
          break;
        }
      }
    for (size_t i = 0; i < best->nodes().size() && !shrunk; ++i) {
      auto c = bypassing(*best, i);
      if (c && holds(stillFails, *c)) best = std::move(c), shrunk = true;
    }
  }
  return best;
}

}  // namespace friction::test
