#include "ir/Builder.h"

#include "ir/OpRegistry.h"

namespace friction {

Value* GraphBuilder::op(const std::string& op, std::vector<Value*> inputs, std::map<std::string, Attribute> attrs,
                        const std::string& name) {
  return opN(op, std::move(inputs), 1, std::move(attrs), name)[0];
}

std::vector<Value*> GraphBuilder::opN(const std::string& op, std::vector<Value*> inputs, size_t numOutputs,
                                      std::map<std::string, Attribute> attrs, const std::string& name) {
  std::string nodeName = name.empty() ? g_.freshName(op) : name;
  std::vector<std::string> outNames;
  for (size_t i = 0; i < numOutputs; ++i) outNames.push_back(g_.freshName(nodeName + (numOutputs > 1 ? "_out" + std::to_string(i) : "_out")));
  Node* n = g_.addNode(op, std::move(inputs), outNames, std::move(attrs), nodeName);
  inferNode(*n);
  return n->outputs();
}

}  // namespace friction
