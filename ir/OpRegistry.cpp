#include "ir/OpRegistry.h"

#include "ir/Error.h"

namespace friction {

const TensorType& InferContext::inputType(size_t i) const {
  Value* v = node_.input(i);
  if (!v) fail("input " + std::to_string(i) + " is required");
  return v->type();
}

const Tensor* InferContext::inputConstant(size_t i) const { return constantData(node_.input(i)); }

std::optional<std::vector<Dim>> InferContext::inputContents(size_t i) const {
  Value* v = node_.input(i);
  if (!v) return std::nullopt;
  if (v->knownContents()) return v->knownContents();
  const Tensor* t = inputConstant(i);
  if (!t || !(isInteger(t->dtype()) || t->dtype() == DType::Bool) || t->rank() > 1 || t->numel() > 64) return std::nullopt;
  std::vector<Dim> r;
  for (int64_t k = 0; k < t->numel(); ++k) {
    int64_t x = t->elementAsInt(k);
    // Negative entries (e.g. -1 in a Reshape target) are kept as static values.
    Dim d;
    d.value = x;
    d.symbol.clear();
    r.push_back(d);
  }
  return r;
}

std::optional<std::vector<int64_t>> InferContext::inputStaticInts(size_t i) const {
  auto c = inputContents(i);
  if (!c) return std::nullopt;
  std::vector<int64_t> r;
  for (const Dim& d : *c) {
    if (!d.symbol.empty()) return std::nullopt;
    r.push_back(d.value);
  }
  return r;
}

void InferContext::setOutput(size_t i, TensorType t) {
  if (i >= node_.numOutputs()) return;  // optional output not requested
  node_.output(i)->setType(std::move(t));
}

void InferContext::setOutputContents(size_t i, std::vector<Dim> contents) {
  if (i < node_.numOutputs()) node_.output(i)->setKnownContents(std::move(contents));
}

void InferContext::fail(const std::string& msg) const { throw Error(node_.describe() + ": " + msg); }

int64_t InferContext::normalizeAxis(int64_t axis, int64_t rank) const {
  check(axis >= -rank && axis < rank,
        "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

const OpRegistry& OpRegistry::instance() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    registerElementwiseOps(r);
    registerNnOps(r);
    registerTensorOps(r);
    registerRegionOps(r);
    registerRecurrentOps(r);
    return r;
  }();
  return registry;
}

const OpSchema* OpRegistry::find(const std::string& op) const {
  auto it = schemas_.find(op);
  return it == schemas_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::names() const {
  std::vector<std::string> r;
  for (const auto& [n, s] : schemas_) r.push_back(n);
  return r;
}

void OpRegistry::add(OpSchema schema) {
  FRICTION_CHECK(!schemas_.count(schema.name), "op '" + schema.name + "' registered twice");
  std::string n = schema.name;
  schemas_.emplace(n, std::move(schema));
}

namespace {
void validateArityAndAttrs(const OpSchema& s, const Node& node) {
  int nin = int(node.numInputs());
  int nout = int(node.numOutputs());
  auto range = [](int lo, int hi) {
    return hi < 0 ? "at least " + std::to_string(lo)
                  : lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi);
  };
  FRICTION_CHECK(nin >= s.minInputs && (s.maxInputs < 0 || nin <= s.maxInputs),
                 node.describe() + ": has " + std::to_string(nin) + " inputs, expected " +
                     range(s.minInputs, s.maxInputs));
  FRICTION_CHECK(nout >= s.minOutputs && (s.maxOutputs < 0 || nout <= s.maxOutputs),
                 node.describe() + ": has " + std::to_string(nout) + " outputs, expected " +
                     range(s.minOutputs, s.maxOutputs));
  for (int i = 0; i < s.minInputs && i < nin; ++i)
    FRICTION_CHECK(node.input(size_t(i)) != nullptr,
                   node.describe() + ": required input " + std::to_string(i) + " is missing");
  for (const auto& [name, value] : node.attrs()) {
    const AttrSpec* spec = nullptr;
    for (const auto& a : s.attrs)
      if (a.name == name) spec = &a;
    FRICTION_CHECK(spec != nullptr, node.describe() + ": unknown attribute '" + name + "'");
    FRICTION_CHECK(attrKind(value) == spec->kind,
                   node.describe() + ": attribute '" + name + "' should be " +
                       std::string(attrKindName(spec->kind)) + ", got " +
                       std::string(attrKindName(attrKind(value))));
  }
  for (const auto& a : s.attrs)
    FRICTION_CHECK(!a.required || node.hasAttr(a.name),
                   node.describe() + ": missing required attribute '" + a.name + "'");
}
}  // namespace

const OpSchema& schemaOf(const Node& node) {
  const OpSchema* s = OpRegistry::instance().find(node.op());
  FRICTION_CHECK(s != nullptr, "unsupported op '" + node.op() + "' (node '" + node.name() + "')");
  return *s;
}

void validateNode(const Node& node) { validateArityAndAttrs(schemaOf(node), node); }

void inferNode(Node& node) {
  const OpSchema* s = &schemaOf(node);
  validateArityAndAttrs(*s, node);
  InferContext ctx(node);
  if (s->infer) s->infer(ctx);
}

void inferGraph(Graph& graph) {
  for (const auto& n : graph.nodes()) inferNode(*n);
}

const std::vector<OpTraitInfo>& allOpTraits() {
  static const std::vector<OpTraitInfo> traits = {
#define FRICTION_OP_TRAIT(name, summary) {OpTrait::name, #name, summary},
#include "ir/OpTraits.def"
#undef FRICTION_OP_TRAIT
  };
  return traits;
}

bool opHasTrait(const std::string& op, OpTrait t) {
  const OpSchema* s = OpRegistry::instance().find(op);
  return s && s->traits.has(t);
}

std::vector<std::string> opsWithTrait(OpTrait t) {
  std::vector<std::string> r;
  for (const std::string& op : OpRegistry::instance().names())
    if (opHasTrait(op, t)) r.push_back(op);
  return r;
}

int64_t nodeFlops(const Node& node) {
  const OpSchema* s = OpRegistry::instance().find(node.op());
  if (!s || !s->flops) return 0;
  for (Value* v : node.inputs())
    if (v && !v->shape().isStatic()) return 0;
  for (Value* v : node.outputs())
    if (!v->shape().isStatic()) return 0;
  return s->flops(node);
}

}  // namespace friction
