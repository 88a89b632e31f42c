// fold-constants: evaluates nodes whose inputs are all constants with the
// reference interpreter's kernels and replaces their outputs by initializers
// (Constant nodes become initializers). Also folds values whose elements shape
// tracking knows statically (Shape of a static shape, Size, and the
// Shape -> Gather -> Concat arithmetic PyTorch exports), so Reshape targets
// become constants and consumers, re-inferred, get static shapes.
// Folded values keep their names.
#include <algorithm>
#include <unordered_set>

#include "ir/Error.h"
#include "ir/OpRegistry.h"
#include "passes/Pass.h"
#include "passes/PassUtil.h"
#include "runtime/interp/KernelRegistry.h"

namespace friction {
namespace {

// Folding must not blow up the model: a constant result is stored in it, so
// ConstantOfShape of a large shape or Expand/Tile of a weight would turn a few
// bytes of graph into megabytes of parameters, and a huge MatMul of two
// constants would make the compiler slow. Results over 16 MiB are never folded;
// results over 1 MiB only when they are no larger than their inputs. An
// elementwise op with no more elements than its largest input only changes
// the element type (a quantized model's weights dequantized: Cast, Sub, Mul):
// folded up to 256 MiB, so the kernels get constant weights to pack once.
constexpr size_t kMaxFoldBytes = size_t(16) << 20;
constexpr size_t kMaxGrowthBytes = size_t(1) << 20;
constexpr size_t kMaxElementwiseFoldBytes = size_t(256) << 20;

bool tooBig(size_t outBytes, size_t inBytes, bool elementwiseOfAsMany) {
  if (elementwiseOfAsMany) return outBytes > kMaxElementwiseFoldBytes;
  return outBytes > kMaxFoldBytes || (outBytes > kMaxGrowthBytes && outBytes > inBytes);
}

// The value as a tensor when shape tracking knows every element statically.
std::optional<Tensor> trackedConstant(const Value* v) {
  if (!v->knownContents() || !(isInteger(v->dtype()) || v->dtype() == DType::Bool)) return std::nullopt;
  const Shape& s = v->shape();
  if (!s.isStatic() || s.rank() > 1 || *s.numel() != int64_t(v->knownContents()->size())) return std::nullopt;
  auto ints = staticInts(v);
  if (!ints) return std::nullopt;
  return Tensor::vectorI64(*ints).castTo(v->dtype()).reshaped(s.staticDims());
}

// The node's results when it can be folded, else nullopt.
std::optional<std::vector<Tensor>> evaluate(const Node& n, const UseIndex& uses, bool shapeValuesOnly) {
  if (hasTrait(n, OpTrait::Nondeterministic) || hasRegion(n) || uses.unused(n)) return std::nullopt;
  if (shapeValuesOnly && !isShapeArithmetic(n)) return std::nullopt;
  const auto* kernel = interp::KernelRegistry::instance().find(n.op());
  bool allConstant = n.op() == "Constant";  // no size limit: its data is already in the model
  size_t inBytes = 0;
  int64_t mostInElements = 0;
  if (!allConstant) {
    bool anyInput = false;
    allConstant = true;
    for (const Value* in : n.inputs()) {
      if (!in) continue;
      anyInput = true;
      allConstant &= in->isConstant();
      if (in->isConstant()) inBytes += in->constant().byteSize();
      if (in->isConstant()) mostInElements = std::max(mostInElements, in->constant().numel());
    }
    allConstant &= anyInput;
  }
  if (allConstant && kernel) {
    size_t outBytes = 0;
    for (const Value* out : n.outputs())
      if (auto numel = out->shape().numel()) outBytes += size_t(*numel) * dtypeSize(out->dtype());
    const std::optional<int64_t> outElements = n.numOutputs() == 1 ? n.output(0)->shape().numel() : std::nullopt;
    const bool widening = hasTrait(n, OpTrait::Elementwise) && outElements && *outElements <= mostInElements;
    if (n.op() != "Constant" && tooBig(outBytes, inBytes, widening)) return std::nullopt;
    std::vector<Tensor> args;
    for (const Value* in : n.inputs()) args.push_back(in ? in->constant() : Tensor());
    std::vector<Tensor> results;
    try {
      results = (*kernel)(n, args);
    } catch (const Error&) {
      return std::nullopt;  // e.g. a division by a constant zero: leave it to fail at run time
    }
    if (results.size() < n.numOutputs()) return std::nullopt;
    results.resize(n.numOutputs());
    outBytes = 0;
    for (size_t i = 0; i < results.size(); ++i) {
      const Value* out = n.output(i);
      // A kernel disagreeing with inference would change types downstream: leave the node alone.
      if (!results[i].defined() || results[i].dtype() != out->dtype()) return std::nullopt;
      if (out->shape().isStatic() && out->shape().staticDims() != results[i].shape()) return std::nullopt;
      outBytes += results[i].byteSize();
    }
    if (n.op() != "Constant" && tooBig(outBytes, inBytes, widening)) return std::nullopt;
    return results;
  }
  // Not all inputs constant, but shape tracking may know the result (Shape of a static shape, ...).
  std::vector<Tensor> results;
  for (const Value* out : n.outputs()) {
    auto t = trackedConstant(out);
    if (!t) return std::nullopt;
    results.push_back(std::move(*t));
  }
  return results;
}

// Folds what evaluate() can, re-inferring the users of what changed.
void fold(Graph& g, PassContext& ctx, bool shapeValuesOnly) {
  UseIndex uses(g);
  std::unordered_set<const Value*> changed;  // values whose type or constness changed: re-infer their users
  std::unordered_set<const Node*> folded;
  std::vector<std::pair<std::string, Value*>> foldedNames;  // old name, initializer holding its value
  std::unordered_set<Value*> maybeUnused;                    // initializers folding may leave unused
  std::vector<Node*> order;
  for (const auto& n : g.nodes()) order.push_back(n.get());
  for (Node* n : order) {
    bool inputsChanged = false;
    for (const Value* in : n->inputs()) inputsChanged |= in && changed.count(in) > 0;
    if (inputsChanged && reinferNode(*n))
      for (const Value* out : n->outputs()) changed.insert(out);
    auto results = evaluate(*n, uses, shapeValuesOnly);
    if (!results) continue;
    for (size_t i = 0; i < results->size(); ++i) {
      Value* old = n->output(i);
      Value* c = g.addInitializer(g.freshName(old->name()), std::move((*results)[i]));
      uses.replaceAllUses(old, c);
      changed.insert(c);
      foldedNames.emplace_back(old->name(), c);
      maybeUnused.insert(c);
      ctx.count("bytes folded", int64_t(c->constant().byteSize()));
    }
    for (Value* in : n->inputs())
      if (in && in->isConstant()) maybeUnused.insert(in);
    folded.insert(n);
    ctx.count("nodes folded");
  }
  if (folded.empty()) return;
  g.eraseNodes([&](const Node& n) { return folded.count(&n) > 0; });

  // Drop what folding made unused (a folded weight's original), and give each
  // folded value its old name back, now that the old value is gone.
  UseIndex after(g);
  std::unordered_set<const Value*> dropped;
  for (Value* v : maybeUnused)
    if (after.unused(v)) dropped.insert(v);
  g.eraseInitializers([&](const Value* v) { return dropped.count(v) > 0; });
  std::unordered_set<const Value*> renamed;
  for (const auto& [name, c] : foldedNames) {
    if (dropped.count(c) || g.findValue(name)) continue;
    Value* named = g.addInitializer(name, c->constant());
    after.replaceAllUses(c, named);
    renamed.insert(c);
  }
  g.eraseInitializers([&](const Value* v) { return renamed.count(v) > 0; });
}

}  // namespace

bool isShapeArithmetic(const Node& n) {
  auto shapeValue = [](const Value* v) { return !v || isInteger(v->dtype()) || v->dtype() == DType::Bool; };
  return (n.numOutputs() > 0 && std::all_of(n.outputs().begin(), n.outputs().end(), shapeValue)) ||
         (n.numInputs() > 0 && std::all_of(n.inputs().begin(), n.inputs().end(), shapeValue));
}

void foldConstants(Graph& g, PassContext& ctx) { fold(g, ctx, /*shapeValuesOnly=*/false); }

int64_t foldShapeArithmetic(Graph& g) {
  PassContext ctx;
  fold(g, ctx, /*shapeValuesOnly=*/true);
  return ctx.stats["nodes folded"];
}

}  // namespace friction
