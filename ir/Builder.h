// Convenience API to build graphs in code (zoo generators, tests). Every op
// added is validated and shape-inferred at once, so errors point at the call.
#pragma once
#include <string>
#include <vector>

#include "ir/Graph.h"

namespace friction {

class GraphBuilder {
 public:
  explicit GraphBuilder(Graph& g) : g_(g) {}
  Graph& graph() { return g_; }

  Value* input(const std::string& name, TensorType type) { return g_.addInput(name, std::move(type)); }
  Value* constant(Tensor t, const std::string& name = "") { return g_.addInitializer(g_.freshName(name.empty() ? "const" : name), std::move(t)); }
  // Adds a single-output node and returns its output.
  Value* op(const std::string& op, std::vector<Value*> inputs, std::map<std::string, Attribute> attrs = {},
            const std::string& name = "");
  // Adds a node with `numOutputs` outputs.
  std::vector<Value*> opN(const std::string& op, std::vector<Value*> inputs, size_t numOutputs,
                          std::map<std::string, Attribute> attrs = {}, const std::string& name = "");
  void output(Value* v) { g_.addOutput(v); }

 private:
  Graph& g_;
};

}  // namespace friction
