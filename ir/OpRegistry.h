// The op registry: for every supported op, its arity, attribute schema,
// shape/type inference and FLOP count. The IR holds ONNX opset-17 semantics
// (the importer normalizes older opsets), so there is one schema per op.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/Graph.h"

namespace friction {

class InferContext {
 public:
  explicit InferContext(Node& node) : node_(node) {}

  const Node& node() const { return node_; }
  size_t numInputs() const { return node_.numInputs(); }
  size_t numOutputs() const { return node_.numOutputs(); }
  bool hasInput(size_t i) const { return node_.input(i) != nullptr; }
  const TensorType& inputType(size_t i) const;
  const Shape& inputShape(size_t i) const { return inputType(i).shape; }
  DType inputDType(size_t i) const { return inputType(i).dtype; }
  // The data of an input that is an initializer or a Constant node's output, else nullptr.
  const Tensor* inputConstant(size_t i) const;
  // The elements of a small integer input when known (constant or tracked
  // shape arithmetic); may hold symbolic dims.
  std::optional<std::vector<Dim>> inputContents(size_t i) const;
  // Like inputContents, but every element must be a static integer.
  std::optional<std::vector<int64_t>> inputStaticInts(size_t i) const;

  void setOutput(size_t i, TensorType t);
  void setOutput(size_t i, DType d, Shape s) { setOutput(i, TensorType{d, std::move(s)}); }
  void setOutputContents(size_t i, std::vector<Dim> contents);

  // Throws Error("<op> '<name>': msg").
  [[noreturn]] void fail(const std::string& msg) const;
  void check(bool cond, const std::string& msg) const {
    if (!cond) fail(msg);
  }
  // Resolves a possibly negative axis against `rank`; fails when out of range.
  int64_t normalizeAxis(int64_t axis, int64_t rank) const;

 private:
  Node& node_;
};

// Categories of ops (ir/OpTraits.def), declared by each schema.
enum class OpTrait : uint32_t {
#define FRICTION_OP_TRAIT(name, summary) name,
#include "ir/OpTraits.def"
#undef FRICTION_OP_TRAIT
};

// A set of traits (a bit per trait).
class OpTraits {
 public:
  constexpr OpTraits() = default;
  constexpr OpTraits(std::initializer_list<OpTrait> traits) {
    for (OpTrait t : traits) bits_ |= bit(t);
  }
  constexpr bool has(OpTrait t) const { return (bits_ & bit(t)) != 0; }
  constexpr OpTraits& add(OpTrait t) {
    bits_ |= bit(t);
    return *this;
  }

 private:
  static constexpr uint32_t bit(OpTrait t) { return uint32_t(1) << uint32_t(t); }
  uint32_t bits_ = 0;
};

struct OpTraitInfo {
  OpTrait trait;
  const char* name;
  const char* summary;
};
// Every trait with its name and promise, in declaration order.
const std::vector<OpTraitInfo>& allOpTraits();

using InferFn = std::function<void(InferContext&)>;
using FlopsFn = std::function<int64_t(const Node&)>;

struct AttrSpec {
  std::string name;
  AttrKind kind;
  bool required = false;
};

struct OpSchema {
  std::string name;
  int minInputs = 1, maxInputs = 1;  // maxInputs -1: variadic
  int minOutputs = 1, maxOutputs = 1;
  std::vector<AttrSpec> attrs;
  OpTraits traits;
  InferFn infer;
  FlopsFn flops;  // optional; nullptr counts as 0 FLOPs

  explicit OpSchema(std::string n) : name(std::move(n)) {}
  OpSchema& inputs(int lo, int hi) { minInputs = lo; maxInputs = hi; return *this; }
  OpSchema& outputs(int lo, int hi) { minOutputs = lo; maxOutputs = hi; return *this; }
  OpSchema& attr(std::string n, AttrKind k, bool required = false) {
    attrs.push_back({std::move(n), k, required});
    return *this;
  }
  OpSchema& trait(OpTrait t) { traits.add(t); return *this; }
  OpSchema& inferWith(InferFn f) { infer = std::move(f); return *this; }
  OpSchema& flopsWith(FlopsFn f) { flops = std::move(f); return *this; }
};

class OpRegistry {
 public:
  static const OpRegistry& instance();
  const OpSchema* find(const std::string& op) const;
  std::vector<std::string> names() const;
  void add(OpSchema schema);

 private:
  std::map<std::string, OpSchema> schemas_;
};

// Checks arity and attributes of `node` against its schema. Throws Error naming the node.
void validateNode(const Node& node);
// Checks arity and attributes of `node` against its schema and infers its
// output types. Throws Error naming the node.
void inferNode(Node& node);
// Runs inferNode over every node in order.
void inferGraph(Graph& graph);
// FLOPs of one node (0 when unknown or shapes are symbolic).
int64_t nodeFlops(const Node& node);
// True when `op` is registered with trait `t` (unknown ops have no traits).
bool opHasTrait(const std::string& op, OpTrait t);
inline bool hasTrait(const Node& n, OpTrait t) { return opHasTrait(n.op(), t); }
// The registered ops with trait `t`, sorted.
std::vector<std::string> opsWithTrait(OpTrait t);

// Registration functions, one per op family (ir/ops/*.cpp).
void registerElementwiseOps(OpRegistry& r);
void registerNnOps(OpRegistry& r);
void registerTensorOps(OpRegistry& r);
void registerRegionOps(OpRegistry& r);
void registerRecurrentOps(OpRegistry& r);

}  // namespace friction
