// Kernel analysis (what becomes one compiled kernel) and structural keys.
#include "codegen/KernelAnalysis.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "codegen/NativeKernels.h"
#include "ir/FusedRegion.h"
#include "ir/Error.h"
#include "ir/OpRegistry.h"
#include "ir/ops/TensorShapes.h"
#include "ir/Structural.h"
#include "ir/ops/NnShapes.h"

namespace friction::codegen {
namespace {

// Right-aligned numpy broadcast of `s` into `domain`.
bool broadcastsTo(const std::vector<int64_t>& s, const std::vector<int64_t>& domain) {
  if (s.size() > domain.size()) return false;
  size_t off = domain.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != domain[i + off] && s[i] != 1) return false;
  return true;
}

bool fail(std::string* why, const std::string& msg) {
  if (why) *why = msg;
  return false;
}

bool isContraction(const Node& n) { return n.op() == "MatMul" || n.op() == "Gemm" || n.op() == "Conv"; }

// Checks a Conv for the window generics (KernelBuilder's convolution()).
bool checkConv(const Node& n, std::string* why) {
  std::vector<int64_t> xs = n.input(0)->shape().staticDims(), ws = n.input(1)->shape().staticDims();
  std::vector<int64_t> ys = n.output(0)->shape().staticDims();
  if (xs.size() < 3 || ws.size() != xs.size() || ys.size() != xs.size()) return fail(why, "Conv not 1-D, 2-D or 3-D");
  const int64_t group = n.attrInt("group", 1);
  if (group < 1 || xs[1] % group || ys[1] % group || ws[0] != ys[1] || ws[1] * group != xs[1])
    return fail(why, "Conv weights do not match the channels and group");
  if (n.input(2) && n.input(2)->shape().staticDims() != std::vector<int64_t>{ys[1]})
    return fail(why, "Conv bias is not one value per output channel");
  try {
    Window w = resolveWindow(n, {xs.begin() + 2, xs.end()}, {ws.begin() + 2, ws.end()});
    if (w.outputSpatial({xs.begin() + 2, xs.end()}) != std::vector<int64_t>(ys.begin() + 2, ys.end()))
      return fail(why, "Conv output shape does not match its window");
  } catch (const Error& e) {
    return fail(why, e.what());
  }
  return true;
}

// Checks the contraction node itself (operand ranks and types).
bool checkContraction(const Node& n, std::string* why) {
  for (size_t i = 0; i < n.numInputs(); ++i)
    if (n.input(i) && !isStaticF32(n.input(i))) return fail(why, n.op() + " on non-f32 or dynamic operands");
  if (!isStaticF32(n.output(0))) return fail(why, n.op() + " with a non-static result");
  const Value *a = n.input(0), *b = n.input(1);
  if (!a || !b) return fail(why, n.op() + " without two operands");
  if (n.op() == "Conv") return checkConv(n, why);
  if (n.op() == "MatMul") {
    if (a->shape().rank() < 2 || b->shape().rank() < 2) return fail(why, "MatMul on 1-D operands");
    return true;
  }
  if (n.numInputs() > 3 || a->shape().rank() != 2 || b->shape().rank() != 2) return fail(why, "Gemm operands not 2-D");
  if (const Value* c = n.input(2))
    if (!broadcastsTo(c->shape().staticDims(), n.output(0)->shape().staticDims()))
      return fail(why, "Gemm C does not broadcast");
  return true;
}

// Checks the elementwise nodes of a kernel against its domain.
bool checkElementwise(const std::vector<const Node*>& nodes, const std::vector<int64_t>& domain, std::string* why) {
  for (const Node* n : nodes) {
    if (!isSupportedElementwise(*n)) return fail(why, "op " + n->op() + " has no elementwise lowering");
    for (size_t i = 0; i < n->numInputs(); ++i) {
      const Value* v = n->input(i);
      if (!v) {
        if (n->op() == "Clip") continue;
        return fail(why, n->op() + " with an absent input");
      }
      if (!isStaticF32(v)) return fail(why, n->op() + " on a non-f32 or dynamic value");
      if (!broadcastsTo(v->shape().staticDims(), domain)) return fail(why, "value does not broadcast to the domain");
    }
    if (!isStaticF32(n->output(0)) || !broadcastsTo(n->output(0)->shape().staticDims(), domain))
      return fail(why, "result does not broadcast to the domain");
  }
  return true;
}

}  // namespace

bool isSupportedElementwise(const Node& n) {
  struct Inputs {
    size_t min, max;
  };
  static const std::unordered_map<std::string, Inputs> ops = {
#define FRICTION_SCALAR_OP(op, minInputs, maxInputs) {#op, {minInputs, maxInputs}},
#include "codegen/ScalarOps.def"
#undef FRICTION_SCALAR_OP
  };
  auto it = ops.find(n.op());
  return it != ops.end() && n.numOutputs() == 1 && n.numInputs() >= it->second.min &&
         (it->second.max == 0 || n.numInputs() <= it->second.max);
}

namespace {

// How a Structured op is passed: its leading inputs that are kernel
// arguments (-1: all) and its statistics buffers (StructuredOps.def).
struct StructuredCall {
  int arguments, statistics;
};
std::optional<StructuredCall> structuredCall(const std::string& op) {
  static const std::unordered_map<std::string, StructuredCall> ops = {
#define FRICTION_STRUCTURED_OP(op, arguments, statistics, build) {#op, {arguments, statistics}},
#include "codegen/StructuredOps.def"
#undef FRICTION_STRUCTURED_OP
  };
  auto it = ops.find(op);
  return it == ops.end() ? std::nullopt : std::optional<StructuredCall>(it->second);
}

// The Structured view of `node`: its leading inputs are the arguments (f32,
// static), the others constants or absent.
// `step` is what the program runs: `node` itself, or a Fused region whose
// only node it is (a fuse-reductions Softmax); argInputs index step's inputs.
std::unique_ptr<KernelView> analyzeStructured(const Node& step, const Node& node, StructuredCall call, std::string* why) {
  const int arguments = call.arguments;
  auto view = std::make_unique<KernelView>();
  view->kind = KernelKind::Structured;
  view->nodes = {&node};
  auto region = FusedRegion::of(step);
  auto stepInput = [&](const Value* v) {
    if (!region) {
      for (size_t i = 0; i < node.numInputs(); ++i)
        if (node.input(i) == v) return int(i);
      return -1;
    }
    const auto& inner = region->body().inputs();
    auto it = std::find(inner.begin(), inner.end(), v);
    return it == inner.end() ? -1 : int(it - inner.begin());
  };
  if (node.numOutputs() != 1 || !isStaticF32(node.output(0)))
    return fail(why, node.op() + ": one f32 result of static shape expected"), nullptr;
  for (size_t i = 0; i < node.numInputs(); ++i) {
    const Value* v = node.input(i);
    if (!v) continue;
    if (arguments < 0 || int(i) < arguments) {
      const bool integers = ((node.op() == "Gather" && i == 1) || node.op() == "Cast") && v->shape().isStatic() &&
                            (v->dtype() == DType::I64 || v->dtype() == DType::I32);
      if (node.op() == "Cast" && !integers) return fail(why, "Cast of a value other than i64 or i32"), nullptr;
      if (!isStaticF32(v) && !integers)
        return fail(why, node.op() + ": input " + std::to_string(i) + " is not f32/static"), nullptr;
      if (std::find(view->inputs.begin(), view->inputs.end(), v) != view->inputs.end()) continue;  // Mul(x, x)
      view->inputs.push_back(v);
      view->argInputs.push_back(stepInput(v));
      if (view->argInputs.back() < 0) return fail(why, node.op() + ": an input computed inside its region"), nullptr;
    } else if (region || !constantData(v)) {
      return fail(why, node.op() + ": input " + std::to_string(i) + " is not a constant"), nullptr;
    }
  }
  view->outputs = {node.output(0)};
  view->domain = node.output(0)->shape().staticDims();
  if (call.statistics > 0) {
    std::vector<int64_t> stats = node.input(0)->shape().staticDims();
    std::vector<bool> reduced;
    try {
      reduced = normalizedDims(node);
    } catch (const Error& e) {
      return fail(why, e.what()), nullptr;
    }
    for (size_t d = 0; d < stats.size(); ++d)
      if (reduced[d]) stats[d] = 1;
    view->scratch.assign(size_t(call.statistics), stats);
  }
  return view;
}

// Whether the halide target can define `n` inside a Graph kernel (nested regions recursively).
bool isGraphKernelNode(const Node& n, std::string* why) {
  if (auto region = FusedRegion::of(n)) {
    for (const auto& m : region->body().nodes())
      if (!isGraphKernelNode(*m, why)) return false;
    return true;
  }
  for (const Value* v : n.outputs())
    if (v && !v->shape().isStatic()) return fail(why, n.op() + " with a dynamic result");
  if (isSupportedElementwise(n)) return checkElementwise({&n}, n.output(0)->shape().staticDims(), why);
  if (isContraction(n)) return checkContraction(n, why);
  if (n.op() == "ConvTranspose") return checkConvTranspose(n, why);
  if (isStaticView(n)) return true;
  if (auto call = structuredCall(n.op())) return analyzeStructured(n, n, *call, why) != nullptr;
  return fail(why, "op " + n.op() + " has no kernel of the halide target");
}

// The Graph view of a Fused region: its whole body.
std::unique_ptr<KernelView> analyzeGraph(const Node& node, const FusedRegion& region, std::string* why) {
  auto view = std::make_unique<KernelView>();
  view->kind = KernelKind::Graph;
  const Graph& body = region.body();
  for (const auto& m : body.nodes()) {
    if (!isGraphKernelNode(*m, why)) return nullptr;
    view->nodes.push_back(m.get());
  }
  for (const Value* v : body.inputs()) {
    const bool typed = v->dtype() == DType::F32 || v->dtype() == DType::I64 || v->dtype() == DType::I32;
    if (!typed || !v->shape().isStatic()) return fail(why, "region input not f32/i64/i32 static"), nullptr;
    view->inputs.push_back(v);
  }
  if (body.inputs().size() != node.numInputs()) return fail(why, "region inputs do not match its operands"), nullptr;
  for (const Value* v : body.outputs()) {
    if (!isStaticF32(v) || !v->producer()) return fail(why, "region output not computed f32/static"), nullptr;
    view->outputs.push_back(v);
  }
  if (view->outputs.empty()) return fail(why, "empty region"), nullptr;
  view->domain = view->outputs[0]->shape().staticDims();
  return view;
}

// The mask ops' operand counts (codegen/MaskOps.def).
std::optional<size_t> maskInputs(const std::string& op) {
  static const std::unordered_map<std::string, size_t> ops = {
#define FRICTION_MASK_OP(op, inputs) {#op, inputs},
#include "codegen/MaskOps.def"
#undef FRICTION_MASK_OP
  };
  auto it = ops.find(op);
  return it == ops.end() ? std::nullopt : std::optional<size_t>(it->second);
}
// The ops the halide target builds as Typed kernels: the mask ops, ScatterND, every Cast (one a Structured
// kernel covers never gets here), Resize (its tap tables baked in) and ConvTranspose (the cpu target's is native).
bool isTypedKernelOp(const std::string& op) {
  return maskInputs(op) || op == "ScatterND" || op == "Cast" || op == "Resize" || op == "ConvTranspose";
}

// Whether ScatterND `node` has a Typed kernel: no reduction, at least one index tuple, constant and in
// range (scatterRows, as the cpu target checks them).
bool checkScatterND(const Node& node, std::string* why) {
  if (node.attrString("reduction", "none") != "none" || node.numInputs() != 3 || !node.input(1) ||
      !constantData(node.input(1)))
    return fail(why, "ScatterND with a reduction or indices that are not constants");
  const Tensor& indices = *constantData(node.input(1));
  if (indices.numel() == 0) return fail(why, "ScatterND of no index tuple");
  return scatterRows(node.input(0)->shape().staticDims(), indices.shape(), indices.toInt64Vector(),
                     node.input(2)->shape().numel().value_or(-1), why)
      .has_value();
}

// The Typed view of `node` (a mask op, a Cast, or a ScatterND of constant
// indices): its inputs that are not constants are the arguments, of any
// element type a kernel can read.
std::unique_ptr<KernelView> analyzeTyped(const Node& node, std::string* why) {
  auto storable = [](const Value* v) { return v->shape().isStatic() && isKernelElementType(v->dtype()); };
  const auto maskArity = maskInputs(node.op());
  const bool mask = maskArity.has_value();
  if (node.numOutputs() != 1 || !storable(node.output(0)))
    return fail(why, node.op() + ": one static result of f32, i64, i32 or bool expected"), nullptr;
  if (mask && node.numInputs() != *maskArity) return fail(why, node.op() + " with another operand count"), nullptr;
  for (const Value* v : node.inputs())  // Resize's roi, scales or sizes may be absent, ConvTranspose's bias
    if ((!v && node.op() != "Resize" && node.op() != "ConvTranspose") || (v && !storable(v)))
      return fail(why, node.op() + ": an operand is absent or not f32, i64, i32 or bool"), nullptr;
  if (node.op() == "ScatterND" && !checkScatterND(node, why)) return nullptr;
  if (node.op() == "ConvTranspose" && !checkConvTranspose(node, why)) return nullptr;
  if (node.op() == "Resize" &&
      (node.input(0)->dtype() != DType::F32 ||
       !resizeTables(node, {node.inputs().begin(), node.inputs().end()}, node.input(0)->shape().staticDims(),
                     node.output(0)->shape().staticDims(), why)))
    return nullptr;
  auto view = std::make_unique<KernelView>();
  view->kind = KernelKind::Typed;
  view->nodes = {&node};
  for (size_t i = 0; i < node.numInputs(); ++i) {
    const Value* v = node.input(i);
    if (mask && !broadcastsTo(v->shape().staticDims(), node.output(0)->shape().staticDims()))
      return fail(why, node.op() + ": input " + std::to_string(i) + " does not broadcast to the result"), nullptr;
    if (!v || constantData(v) || std::find(view->inputs.begin(), view->inputs.end(), v) != view->inputs.end()) continue;
    view->inputs.push_back(v);
    view->argInputs.push_back(int(i));
  }
  view->outputs = {node.output(0)};
  view->domain = node.output(0)->shape().staticDims();
  return view;
}

}  // namespace

bool checkConvTranspose(const Node& n, std::string* why) {
  for (size_t i = 0; i < n.numInputs(); ++i)
    if (n.input(i) && !isStaticF32(n.input(i))) return fail(why, "ConvTranspose on non-f32 or dynamic operands");
  if (!n.input(0) || !n.input(1) || !isStaticF32(n.output(0))) return fail(why, "ConvTranspose without two operands");
  std::vector<int64_t> xs = n.input(0)->shape().staticDims(), ws = n.input(1)->shape().staticDims();
  std::vector<int64_t> ys = n.output(0)->shape().staticDims();
  if (xs.size() < 3 || xs.size() > 5 || ws.size() != xs.size() || ys.size() != xs.size())
    return fail(why, "ConvTranspose not 1-D, 2-D or 3-D");
  const int64_t group = n.attrInt("group", 1);
  if (group < 1 || xs[1] % group || ws[0] != xs[1] || ws[1] * group != ys[1] || ys[0] != xs[0])
    return fail(why, "ConvTranspose weights do not match the channels and group");
  if (n.input(2) && n.input(2)->shape().staticDims() != std::vector<int64_t>{ys[1]})
    return fail(why, "ConvTranspose bias is not one value per output channel");
  try {
    if (resolveConvTranspose(n, {xs.begin() + 2, xs.end()}, {ws.begin() + 2, ws.end()}).outSpatial !=
        std::vector<int64_t>(ys.begin() + 2, ys.end()))
      return fail(why, "ConvTranspose output shape does not match its window");
  } catch (const Error& e) {
    return fail(why, e.what());
  }
  return true;
}

bool isKernelElementType(DType t) { return t == DType::F32 || t == DType::I64 || t == DType::I32 || t == DType::Bool; }

bool isStaticView(const Node& n) {
  return hasTrait(n, OpTrait::View) && n.numInputs() >= 1 && n.numOutputs() == 1 && isStaticF32(n.input(0)) &&
         isStaticF32(n.output(0)) && n.input(0)->shape().numel() == n.output(0)->shape().numel();
}

std::optional<std::vector<int64_t>> constantInts(const Node& n, size_t i) {
  if (i >= n.numInputs() || !n.input(i)) return std::nullopt;
  const Tensor* t = constantData(n.input(i));
  FRICTION_CHECK(t && isInteger(t->dtype()), n.describe() + ": input " + std::to_string(i) + " is not a constant of integers");
  return t->toInt64Vector();
}

ConstantPad constantPad(const Node& n) {
  FRICTION_CHECK(n.attrString("mode", "constant") == "constant", n.describe() + ": Pad mode other than constant");
  const int64_t rank = int64_t(n.input(0)->shape().rank());
  auto pads = constantInts(n, 1);
  FRICTION_CHECK(pads, n.describe() + ": Pad without pads");
  ConstantPad p{padsForAllAxes(rank, *pads, constantInts(n, 3))};
  if (n.numInputs() > 2 && n.input(2)) {
    const Tensor* v = constantData(n.input(2));
    FRICTION_CHECK(v && v->numel() <= 1, n.describe() + ": Pad value is not a constant scalar");
    if (v->numel() == 1) p.value = v->elementAsDouble(0);
  }
  for (int64_t d = 0; d < rank; ++d)
    FRICTION_CHECK(p.pads[size_t(d)] >= 0 && p.pads[size_t(d + rank)] >= 0, n.describe() + ": Pad with negative pads (a crop)");
  return p;
}

std::vector<bool> reducedDims(const Node& n) {
  const int64_t r = int64_t(n.input(0)->shape().rank());
  std::vector<int64_t> axes;
  if (n.op() == "GlobalAveragePool" || n.op() == "GlobalMaxPool") {
    for (int64_t d = 2; d < r; ++d) axes.push_back(d);
  } else {
    auto fromInput = constantInts(n, 1);
    axes = fromInput ? *fromInput : n.attrInts("axes");
    if (axes.empty()) {
      FRICTION_CHECK(!n.attrInt("noop_with_empty_axes", 0), n.describe() + ": a reduction over no axis");
      axes.resize(size_t(r)), std::iota(axes.begin(), axes.end(), 0);
    }
  }
  std::vector<bool> reduced(size_t(r), false);
  for (int64_t a : axes) {
    if (a < 0) a += r;
    FRICTION_CHECK(a >= 0 && a < r, n.describe() + ": axis out of range");
    reduced[size_t(a)] = true;
  }
  return reduced;
}

std::vector<bool> normalizedDims(const Node& n) {
  const int64_t rank = int64_t(n.input(0)->shape().rank());
  if (n.op() == "InstanceNormalization") {  // each image plane: every dim after the channels
    FRICTION_CHECK(rank >= 3, n.describe() + ": InstanceNormalization needs rank >= 3");
    std::vector<bool> dims(size_t(rank), true);
    dims[0] = dims[1] = false;
    return dims;
  }
  int64_t axis = n.attrInt("axis", -1);
  if (axis < 0) axis += rank;
  FRICTION_CHECK(axis >= 0 && axis < rank, n.describe() + ": axis out of range");
  std::vector<bool> dims(size_t(rank), false);
  for (int64_t d = axis; d < (n.op() == "LayerNormalization" ? rank : axis + 1); ++d) dims[size_t(d)] = true;
  return dims;
}

namespace {

// Every kind but Graph.
std::unique_ptr<KernelView> analyzeView(const Node& node, const CodegenOptions& options, std::string* why) {
  if (options.target != Target::Cpu) {
    auto region = FusedRegion::of(node);
    const Node* only = region && region->body().nodes().size() == 1 ? region->body().nodes()[0].get() : nullptr;
    if (!region)
      if (auto call = structuredCall(node.op())) return analyzeStructured(node, node, *call, why);
    if (only)
      if (auto call = structuredCall(only->op())) return analyzeStructured(node, *only, *call, why);
  }
  auto view = std::make_unique<KernelView>();
  auto region = FusedRegion::of(node);
  if (region) {
    const Graph& body = region->body();
    for (const auto& m : body.nodes()) view->nodes.push_back(m.get());
    for (const Value* v : body.inputs()) view->inputs.push_back(v);
    for (const Value* v : body.outputs()) view->outputs.push_back(v);
    if (view->nodes.empty() || view->outputs.empty()) return fail(why, "empty region"), nullptr;
    for (const Value* v : body.inputs())
      if (!isStaticF32(v)) return fail(why, "region input not f32/static"), nullptr;
    for (const Value* v : view->outputs)
      if (!v->producer()) return fail(why, "region passes an input through"), nullptr;
  } else {
    view->nodes = {&node};
    for (const Value* v : node.inputs())
      if (v) view->inputs.push_back(v);  // absent optional inputs (Clip bounds) are no arguments
    for (const Value* v : node.outputs()) view->outputs.push_back(v);
  }
  const Node& first = *view->nodes.front();
  if (!isStaticF32(view->outputs[0])) return fail(why, "result is not f32 with a static shape"), nullptr;
  view->domain = view->outputs[0]->shape().staticDims();
  for (const Value* v : view->outputs)
    if (!isStaticF32(v) || v->shape().staticDims() != view->domain)
      return fail(why, "region outputs differ in shape"), nullptr;
  std::vector<const Node*> elementwise(view->nodes.begin(), view->nodes.end());
  // An anchor with a native kernel runs it (a Conv only while microkernels are on).
  const bool nativeAnchor = region && view->nodes.size() > 1 && options.nativeSteps() &&
                            matchNativeAnchor(first, region->outerInputs(first), options.ukernels());
  if (isContraction(first) && !nativeAnchor) {
    view->kind = KernelKind::Contraction;
    if (!checkContraction(first, why)) return nullptr;
    if (first.output(0)->shape().staticDims() != view->domain)
      return fail(why, "epilogue changes the shape"), nullptr;
    if (view->nodes.size() > 1)
      for (const Value* v : view->outputs)
        if (v == first.output(0)) return fail(why, "the accumulator is a region output"), nullptr;
    elementwise.erase(elementwise.begin());
  } else if (nativeAnchor) {
    view->kind = KernelKind::NativeEpilogue;
    for (const Value* v : first.inputs())
      if (v && std::find(view->inputs.begin(), view->inputs.end(), v) == view->inputs.end())
        return fail(why, "the anchor reads a value from inside the region"), nullptr;
    if (first.output(0)->shape().staticDims() != view->domain) return fail(why, "epilogue changes the shape"), nullptr;
    for (const Value* v : view->outputs)
      if (v == first.output(0)) return fail(why, "the anchor's result is a region output"), nullptr;
    elementwise.erase(elementwise.begin());
  }
  if (!checkElementwise(elementwise, view->domain, why)) return nullptr;
  // A native anchor's epilogue runs in place on the buffer the anchor filled: split like an elementwise
  // kernel, its operands as well, the anchor's own inputs (which it does not read) whole.
  const bool splits = view->kind == KernelKind::Elementwise || view->kind == KernelKind::NativeEpilogue;
  if (splits && options.splitsElementwise()) {
    const auto& domain = view->domain;
    auto split = std::find_if(domain.begin(), domain.end(), [](int64_t d) { return d >= 2; });
    auto readByEpilogue = [&](const Value* v) {
      return std::any_of(elementwise.begin(), elementwise.end(), [&](const Node* n) {
        return std::find(n->inputs().begin(), n->inputs().end(), v) != n->inputs().end();
      });
    };
    if (split != domain.end()) {
      view->splitDim = int(split - domain.begin());
      for (const Value* v : view->inputs) {
        std::vector<int64_t> s = v->shape().staticDims();
        int own = view->splitDim - int(domain.size() - s.size());  // inputs align to the domain's right
        const bool spans = own >= 0 && s[size_t(own)] == *split && readByEpilogue(v);
        view->inputSplitDims.push_back(spans ? own : -1);
      }
    }
  }
  return view;
}

}  // namespace

std::unique_ptr<KernelView> analyzeKernel(const Node& node, const CodegenOptions& options, std::string* why) {
  auto view = analyzeView(node, options, why);
  if (options.target != Target::Halide) return view;
  // The halide target: a region the other kinds do not cover is one kernel of its whole body; statistics
  // (a softmax's maxima) are Funcs of the pipeline, not scratch buffers.
  if (!view) {
    if (auto region = FusedRegion::of(node)) return analyzeGraph(node, *region, why);
    if (isTypedKernelOp(node.op())) return analyzeTyped(node, why);
  }
  if (view) view->scratch.clear();
  return view;
}

namespace {

// " LABEL=TYPE:v0,v1,...": every value exactly (a Pad of 1e-7 is not a Pad of 0).
std::string constantText(const std::string& label, const Tensor& t) {
  std::string text = " " + label + "=" + t.type().str() + ":";
  char digits[32];
  for (int64_t e = 0; e < t.numel(); ++e)
    text += std::string(digits, size_t(std::snprintf(digits, sizeof digits, "%.17g,", t.elementAsDouble(e))));
  return text;
}

// The integer constants a region's body reads as inputs (resolved region operands: Slice bounds, Pad
// amounts), nested regions too: a Graph kernel (the halide target) bakes them in.
std::string regionConstants(const Node& node, const std::string& prefix) {
  auto region = FusedRegion::of(node);
  if (!region) return "";
  std::string text;
  const auto& inputs = region->body().inputs();
  for (size_t i = 0; i < inputs.size(); ++i)
    if (const Tensor* t = constantData(inputs[i]); t && isInteger(t->dtype()))
      text += constantText(prefix + "in" + std::to_string(i), *t);
  for (size_t m = 0; m < region->body().nodes().size(); ++m)
    text += regionConstants(*region->body().nodes()[m], prefix + std::to_string(m) + ".");
  return text;
}

}  // namespace

std::string structuralKey(const Node& node) {
  std::string key = nodeStructure(node, {/*hashTensors=*/true});
  // A Structured kernel bakes its constant inputs in (Slice bounds, Pad amounts, Reduce axes), and so does a
  // Graph kernel those of its body: they are part of what it computes, so of its key.
  if (auto call = structuredCall(node.op()); call && call->arguments >= 0)
    for (size_t i = size_t(call->arguments); i < node.numInputs(); ++i)
      if (const Tensor* t = node.input(i) ? constantData(node.input(i)) : nullptr)
        key += constantText("const" + std::to_string(i), *t);
  // A Typed kernel bakes in every constant operand (ScatterND's indices, a mask's constant side), which may
  // be large: by its bytes' hash.
  if (isTypedKernelOp(node.op()))
    for (size_t i = 0; i < node.numInputs(); ++i)
      if (const Tensor* t = node.input(i) ? constantData(node.input(i)) : nullptr)
        key += " const" + std::to_string(i) + "=" + structuralAttribute(*t, {.hashTensors = true});
  return key + regionConstants(node, "");
}

}  // namespace friction::codegen
