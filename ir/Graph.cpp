#include "ir/Graph.h"

#include <algorithm>
#include <queue>
#include <unordered_set>

#include "ir/Error.h"

namespace friction {

const Tensor* constantData(const Value* v) {
  if (!v) return nullptr;
  if (v->isConstant()) return &v->constant();
  const Node* p = v->producer();
  if (p && p->op() == "Constant" && p->hasAttr("value")) return &p->attrTensor("value");
  return nullptr;
}

std::string_view attrKindName(AttrKind k) {
  static constexpr std::string_view names[] = {"int", "float", "string", "ints",
                                               "floats", "strings", "tensor", "graph"};
  return names[size_t(k)];
}

const Attribute* Node::findAttr(const std::string& n) const {
  auto it = attrs_.find(n);
  return it == attrs_.end() ? nullptr : &it->second;
}

std::string Node::describe() const {
  return name_.empty() ? op_ : op_ + " '" + name_ + "'";
}

namespace {
template <typename T>
const T& getAttr(const Node& node, const std::string& n, const Attribute& a, AttrKind want) {
  FRICTION_CHECK(std::holds_alternative<T>(a), node.describe() + ": attribute '" + n + "' should be " +
                                                   std::string(attrKindName(want)) + ", got " +
                                                   std::string(attrKindName(attrKind(a))));
  return std::get<T>(a);
}
}  // namespace

int64_t Node::attrInt(const std::string& n, int64_t def) const {
  const Attribute* a = findAttr(n);
  return a ? getAttr<int64_t>(*this, n, *a, AttrKind::Int) : def;
}
float Node::attrFloat(const std::string& n, float def) const {
  const Attribute* a = findAttr(n);
  return a ? getAttr<float>(*this, n, *a, AttrKind::Float) : def;
}
std::string Node::attrString(const std::string& n, const std::string& def) const {
  const Attribute* a = findAttr(n);
  return a ? getAttr<std::string>(*this, n, *a, AttrKind::String) : def;
}
std::vector<int64_t> Node::attrInts(const std::string& n, std::vector<int64_t> def) const {
  const Attribute* a = findAttr(n);
  return a ? getAttr<std::vector<int64_t>>(*this, n, *a, AttrKind::Ints) : def;
}
std::vector<float> Node::attrFloats(const std::string& n, std::vector<float> def) const {
  const Attribute* a = findAttr(n);
  return a ? getAttr<std::vector<float>>(*this, n, *a, AttrKind::Floats) : def;
}
const Tensor& Node::attrTensor(const std::string& n) const {
  const Attribute* a = findAttr(n);
  FRICTION_CHECK(a != nullptr, describe() + ": missing tensor attribute '" + n + "'");
  return getAttr<Tensor>(*this, n, *a, AttrKind::Tensor);
}

std::string Graph::freshName(const std::string& hint) {
  std::string base = hint.empty() ? "v" : hint;
  if (!byName_.count(base)) return base;
  for (;;) {
    std::string n = base + "_" + std::to_string(nextId_++);
    if (!byName_.count(n)) return n;
  }
}

Value* Graph::addValue(std::string name, TensorType type) {
  if (name.empty()) name = freshName("v");
  FRICTION_CHECK(!byName_.count(name), "duplicate value name '" + name + "'");
  values_.push_back(std::make_unique<Value>(name, std::move(type)));
  Value* v = values_.back().get();
  byName_[v->name()] = v;
  return v;
}

Value* Graph::addInput(std::string name, TensorType type) {
  Value* v = addValue(std::move(name), std::move(type));
  inputs_.push_back(v);
  return v;
}

Value* Graph::addInitializer(std::string name, Tensor data) {
  Value* v = addValue(std::move(name), data.type());
  v->setConstant(std::move(data));
  initializers_.push_back(v);
  return v;
}

Node* Graph::addNode(std::string op, std::vector<Value*> inputs, std::vector<std::string> outputNames,
                     std::map<std::string, Attribute> attrs, std::string nodeName) {
  auto node = std::make_unique<Node>(std::move(op), std::move(nodeName));
  node->inputs_ = std::move(inputs);
  node->attrs_ = std::move(attrs);
  for (size_t i = 0; i < outputNames.size(); ++i) {
    // ONNX marks an absent optional output by an empty name; it still gets a (hidden) value here.
    std::string n = outputNames[i].empty() ? freshName(node->op_ + "_unused") : outputNames[i];
    Value* v = addValue(n, TensorType{DType::F32, Shape::unknownRank()});
    v->setProducer(node.get(), int(i));
    node->outputs_.push_back(v);
  }
  nodes_.push_back(std::move(node));
  return nodes_.back().get();
}

Node* Graph::addNodeTakingLastOutput(Node& from, std::string op, std::vector<Value*> inputs,
                                     std::map<std::string, Attribute> attrs, std::string nodeName) {
  FRICTION_CHECK(from.outputs_.size() > 1, from.describe() + ": a node keeps at least one output");
  Node* node = addNode(std::move(op), std::move(inputs), {}, std::move(attrs), std::move(nodeName));
  Value* v = from.outputs_.back();
  from.outputs_.pop_back();
  v->setProducer(node, 0);
  node->outputs_.push_back(v);
  return node;
}

Value* Graph::findValue(const std::string& name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : it->second;
}

void Graph::renameValue(Value* v, const std::string& name) {
  if (v->name() == name) return;
  FRICTION_CHECK(!byName_.count(name), "cannot rename '" + v->name() + "' to '" + name + "': the name is taken");
  byName_.erase(v->name());
  v->name_ = name;
  byName_[name] = v;
}

std::vector<Value*> Graph::allValues() const {
  std::vector<Value*> r;
  r.reserve(values_.size());
  for (const auto& v : values_) r.push_back(v.get());
  return r;
}

void Graph::moveNodesBefore(size_t mark, const Node* anchor) {
  auto at = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& n) { return n.get() == anchor; });
  FRICTION_CHECK(at != nodes_.end() && size_t(at - nodes_.begin()) < mark && mark <= nodes_.size(),
                 "moveNodesBefore: anchor is not an older node of the graph");
  std::rotate(at, nodes_.begin() + std::ptrdiff_t(mark), nodes_.end());
}

void Graph::topologicalSort() {
  // Kahn's algorithm; ties keep the original order so sorted graphs are unchanged.
  std::unordered_map<const Node*, size_t> index;
  for (size_t i = 0; i < nodes_.size(); ++i) index[nodes_[i].get()] = i;
  std::vector<int> pending(nodes_.size(), 0);
  std::vector<std::vector<size_t>> users(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    std::unordered_set<const Node*> seen;
    for (Value* in : nodes_[i]->inputs_) {
      if (!in || !in->producer()) continue;
      auto it = index.find(in->producer());
      if (it == index.end() || !seen.insert(in->producer()).second) continue;
      pending[i]++;
      users[it->second].push_back(i);
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t u : users[i])
      if (--pending[u] == 0) ready.push(u);
  }
  if (order.size() != nodes_.size()) {
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (pending[i] > 0)
        throw Error("graph has a cycle through node " + nodes_[i]->describe());
  }
  std::vector<std::unique_ptr<Node>> sorted;
  sorted.reserve(nodes_.size());
  for (size_t i : order) sorted.push_back(std::move(nodes_[i]));
  nodes_ = std::move(sorted);
}

void Graph::eraseNodes(const std::function<bool(const Node&)>& dead) {
  std::unordered_set<const Value*> removed;
  std::vector<std::unique_ptr<Node>> kept;
  for (auto& n : nodes_) {
    if (dead(*n)) {
      for (Value* v : n->outputs_) removed.insert(v);
    } else {
      kept.push_back(std::move(n));
    }
  }
  nodes_ = std::move(kept);
  std::unordered_set<const Value*> used;
  for (const auto& n : nodes_)
    for (Value* v : n->inputs_) used.insert(v);
  for (Value* v : outputs_) used.insert(v);
  auto gone = [&](const std::unique_ptr<Value>& v) {
    if (!removed.count(v.get())) return false;
    FRICTION_CHECK(!used.count(v.get()), "erasing node whose output '" + v->name() + "' is still used");
    byName_.erase(v->name());
    return true;
  };
  values_.erase(std::remove_if(values_.begin(), values_.end(), gone), values_.end());
}

void Graph::eraseInitializers(const std::function<bool(const Value*)>& dead) {
  std::unordered_set<const Value*> gone;
  for (Value* v : initializers_)
    if (dead(v)) gone.insert(v);
  if (gone.empty()) return;
  for (const auto& n : nodes_)
    for (Value* in : n->inputs_)
      FRICTION_CHECK(!gone.count(in), "erasing initializer '" + in->name() + "' still used by " + n->describe());
  initializers_.erase(std::remove_if(initializers_.begin(), initializers_.end(), [&](Value* v) { return gone.count(v) > 0; }),
                      initializers_.end());
  values_.erase(std::remove_if(values_.begin(), values_.end(),
                               [&](const std::unique_ptr<Value>& v) {
                                 if (!gone.count(v.get())) return false;
                                 byName_.erase(v->name());
                                 return true;
                               }),
                values_.end());
}

size_t Graph::parameterBytes() const {
  size_t b = 0;
  for (Value* v : initializers_) b += v->constant().byteSize();
  return b;
}

std::unique_ptr<Graph> cloneGraph(const Graph& g) {
  auto c = std::make_unique<Graph>(g.name());
  c->setOpset(g.opset());
  std::unordered_map<const Value*, Value*> copyOf;
  auto copyValue = [&](const Value* from, Value* to) {
    to->setType(from->type());
    to->setKnownContents(from->knownContents());
    copyOf[from] = to;
  };
  for (const Value* v : g.inputs()) copyValue(v, c->addInput(v->name(), v->type()));
  for (const Value* v : g.initializers()) copyValue(v, c->addInitializer(v->name(), v->constant()));
  for (const auto& n : g.nodes()) {
    std::vector<Value*> inputs;
    for (const Value* v : n->inputs()) inputs.push_back(v ? copyOf.at(v) : nullptr);
    std::vector<std::string> names;
    for (const Value* v : n->outputs()) names.push_back(v->name());
    Node* m = c->addNode(n->op(), std::move(inputs), std::move(names), n->attrs(), n->name());
    for (size_t i = 0; i < n->numOutputs(); ++i) copyValue(n->output(i), m->output(i));
  }
  for (const Value* v : g.outputs()) c->addOutput(copyOf.at(v));
  c->metadata() = g.metadata();
  return c;
}

}  // namespace friction
