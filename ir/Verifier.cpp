#include "ir/Verifier.h"

#include <unordered_set>

#include "ir/Error.h"
#include "ir/OpRegistry.h"

namespace friction {

void verifyStructure(const Graph& graph) {
  std::unordered_set<const Value*> defined;
  std::unordered_set<std::string> names;
  auto define = [&](const Value* v, const std::string& by) {
    FRICTION_CHECK(defined.insert(v).second, "value '" + v->name() + "' is defined twice (" + by + ")");
    FRICTION_CHECK(names.insert(v->name()).second, "value name '" + v->name() + "' is used by two values");
  };
  for (const Value* v : graph.inputs()) {
    FRICTION_CHECK(!v->isConstant(), "graph input '" + v->name() + "' carries constant data");
    define(v, "graph input");
  }
  for (const Value* v : graph.initializers()) {
    FRICTION_CHECK(v->isConstant(), "initializer '" + v->name() + "' has no data");
    FRICTION_CHECK(v->type() == v->constant().type(), "initializer '" + v->name() + "' has type " +
                                                          v->type().str() + " but data " +
                                                          v->constant().type().str());
    define(v, "initializer");
  }
  for (const auto& n : graph.nodes()) {
    validateNode(*n);
    for (const auto& [name, a] : n->attrs())
      if (auto* body = std::get_if<std::shared_ptr<Graph>>(&a)) {
        try {
          verifyStructure(**body);
        } catch (const Error& e) {
          throw Error(n->describe() + ": attribute '" + name + "': " + e.what());
        }
      }
    for (const Value* in : n->inputs())
      FRICTION_CHECK(!in || defined.count(in), n->describe() + ": input '" + (in ? in->name() : "") +
                                                   "' is not defined before use (dangling or cyclic)");
    for (size_t i = 0; i < n->numOutputs(); ++i) {
      const Value* out = n->output(i);
      FRICTION_CHECK(out->producer() == n.get() && out->producerIndex() == int(i),
                     n->describe() + ": output '" + out->name() + "' does not point back at its node");
      define(out, "output of " + n->describe());
    }
  }
  for (const Value* v : graph.outputs())
    FRICTION_CHECK(defined.count(v), "graph output '" + v->name() + "' is not defined");
}


void verify(Graph& graph) {
  verifyStructure(graph);
  for (const auto& n : graph.nodes()) {
    std::vector<TensorType> stored;
    for (const Value* out : n->outputs()) stored.push_back(out->type());
    inferNode(*n);
    for (size_t i = 0; i < stored.size(); ++i) {
      TensorType now = n->output(i)->type();
      n->output(i)->setType(stored[i]);  // keep what the graph knew
      FRICTION_CHECK(typeRefines(stored[i], now), n->describe() + ": output '" + n->output(i)->name() +
                                                  "' is typed " + stored[i].str() + " but inference gives " +
                                                  now.str());
    }
  }
}

}  // namespace friction
