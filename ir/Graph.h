// The graph IR: values (SSA tensors), nodes (op applications) and graphs.
// A graph owns its nodes and values. `nodes()` is kept in topological order.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/Attribute.h"
#include "ir/Shape.h"
#include "ir/Tensor.h"

namespace friction {

class Node;

class Value {
 public:
  Value(std::string name, TensorType type) : name_(std::move(name)), type_(std::move(type)) {}

  const std::string& name() const { return name_; }
  const TensorType& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  void setType(TensorType t) { type_ = std::move(t); }

  Node* producer() const { return producer_; }
  int producerIndex() const { return producerIndex_; }
  void setProducer(Node* n, int index) {
    producer_ = n;
    producerIndex_ = index;
  }

  // Initializers carry their data.
  bool isConstant() const { return constant_.has_value(); }
  const Tensor& constant() const { return *constant_; }
  void setConstant(Tensor t) { constant_ = std::move(t); }

  // For small 1-D/0-D integer values computed from shapes (Shape -> Gather ->
  // Concat -> Reshape), the known elements, which may be symbolic dims. Lets
  // shape inference see through PyTorch's dynamic-batch shape arithmetic.
  const std::optional<std::vector<Dim>>& knownContents() const { return knownContents_; }
  void setKnownContents(std::optional<std::vector<Dim>> c) { knownContents_ = std::move(c); }

 private:
  friend class Graph;
  std::string name_;
  TensorType type_;
  Node* producer_ = nullptr;
  int producerIndex_ = -1;
  std::optional<Tensor> constant_;
  std::optional<std::vector<Dim>> knownContents_;
};

class Node {
 public:
  Node(std::string op, std::string name) : op_(std::move(op)), name_(std::move(name)) {}

  const std::string& op() const { return op_; }
  const std::string& name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }

  // Absent optional inputs are nullptr.
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  Value* output(size_t i) const { return outputs_[i]; }
  size_t numInputs() const { return inputs_.size(); }
  size_t numOutputs() const { return outputs_.size(); }
  void setInput(size_t i, Value* v) { inputs_[i] = v; }
  void setInputs(std::vector<Value*> in) { inputs_ = std::move(in); }
  // Grows the input list with absent (nullptr) inputs up to `n` entries.
  void padInputs(size_t n) {
    if (inputs_.size() < n) inputs_.resize(n, nullptr);
  }
  void setOp(std::string op) { op_ = std::move(op); }

  const std::map<std::string, Attribute>& attrs() const { return attrs_; }
  bool hasAttr(const std::string& n) const { return attrs_.count(n) != 0; }
  void setAttr(const std::string& n, Attribute a) { attrs_[n] = std::move(a); }
  void removeAttr(const std::string& n) { attrs_.erase(n); }

  // Typed getters; the default is returned when the attribute is absent, and a
  // wrong kind throws Error naming the node.
  int64_t attrInt(const std::string& n, int64_t def) const;
  float attrFloat(const std::string& n, float def) const;
  std::string attrString(const std::string& n, const std::string& def) const;
  std::vector<int64_t> attrInts(const std::string& n, std::vector<int64_t> def = {}) const;
  std::vector<float> attrFloats(const std::string& n, std::vector<float> def = {}) const;
  const Tensor& attrTensor(const std::string& n) const;
  const Attribute* findAttr(const std::string& n) const;

  // "Conv 'conv1'" for error messages.
  std::string describe() const;

 private:
  friend class Graph;
  std::string op_;
  std::string name_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::map<std::string, Attribute> attrs_;
};

// A copy of `g` with values, nodes, attributes and metadata of the same names
// and types; tensors share their storage, region bodies are shared (they are
// immutable once built).
std::unique_ptr<Graph> cloneGraph(const Graph& g);

// The data of `v` when it is an initializer or a Constant node's output, else nullptr.
const Tensor* constantData(const Value* v);
// True when `v` is an f32 tensor of static shape: what the compiled backends' kernels take.
inline bool isStaticF32(const Value* v) {
  return v && v->dtype() == DType::F32 && v->shape().hasRank() && v->shape().isStatic();
}

class Graph {
 public:
  explicit Graph(std::string name = "main") : name_(std::move(name)) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }
  int64_t opset() const { return opset_; }
  void setOpset(int64_t v) { opset_ = v; }

  // Creates a value. Names must be unique; an empty name gets a fresh one.
  Value* addValue(std::string name, TensorType type);
  Value* addInput(std::string name, TensorType type);
  Value* addInitializer(std::string name, Tensor data);
  void addOutput(Value* v) { outputs_.push_back(v); }
  // Creates a node whose outputs are new values (typed later by shape inference).
  Node* addNode(std::string op, std::vector<Value*> inputs, std::vector<std::string> outputNames,
                std::map<std::string, Attribute> attrs = {}, std::string nodeName = "");
  // Splits a multi-output node in a rewrite: `from`'s last output (its name, type and users stay) becomes the
  // one output of a new node `op` over `inputs`, and `from` no longer has it.
  Node* addNodeTakingLastOutput(Node& from, std::string op, std::vector<Value*> inputs,
                                std::map<std::string, Attribute> attrs = {}, std::string nodeName = "");

  Value* findValue(const std::string& name) const;
  // Renames `v`; the name must be free.
  void renameValue(Value* v, const std::string& name);
  std::string freshName(const std::string& hint);

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  const std::vector<Value*>& initializers() const { return initializers_; }
  std::vector<Value*> allValues() const;
  void setOutputs(std::vector<Value*> outs) { outputs_ = std::move(outs); }

  // Graph-level results of analyses (e.g. plan-memory's buffer assignment),
  // keyed by name; printed and parsed by the text format.
  std::map<std::string, Attribute>& metadata() { return metadata_; }
  const std::map<std::string, Attribute>& metadata() const { return metadata_; }

  // Reorders nodes topologically (stable for already-sorted graphs). Throws on cycles.
  void topologicalSort();
  // Moves the nodes added since the graph had `mark` nodes to just before
  // `anchor`, keeping their order: a rewrite puts its replacement where the
  // node it replaces ran (an analysis of the old order, like plan-memory's
  // liveness, stays true).
  void moveNodesBefore(size_t mark, const Node* anchor);
  // Removes nodes for which `dead` is true, and values no longer referenced.
  void eraseNodes(const std::function<bool(const Node&)>& dead);
  // Removes initializers for which `dead` is true (they must be unused).
  void eraseInitializers(const std::function<bool(const Value*)>& dead);
  // Total number of bytes held by initializers.
  size_t parameterBytes() const;

 private:
  std::string name_;
  int64_t opset_ = 17;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::unordered_map<std::string, Value*> byName_;
  std::vector<Value*> inputs_, outputs_, initializers_;
  std::map<std::string, Attribute> metadata_;
  int64_t nextId_ = 0;
};

}  // namespace friction
