// Kernel analysis (what becomes one compiled kernel) and structural keys.
// No MLIR here: this TU compiles in a second.
#include "codegen/Kernels.h"

#include "codegen/NativeKernels.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <unordered_map>

namespace friction::codegen {
namespace {

bool staticF32(const Value* v) { return v && v->dtype() == DType::F32 && v->shape().hasRank() && v->shape().isStatic(); }

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

bool isContraction(const Node& n) { return n.op() == "MatMul" || n.op() == "Gemm"; }

// Checks the contraction node itself (operand ranks and types).
bool checkContraction(const Node& n, std::string* why) {
  for (size_t i = 0; i < n.numInputs(); ++i)
    if (n.input(i) && !staticF32(n.input(i))) return fail(why, n.op() + " on non-f32 or dynamic operands");
  if (!staticF32(n.output(0))) return fail(why, n.op() + " with a non-static result");
  const Value *a = n.input(0), *b = n.input(1);
  if (!a || !b) return fail(why, n.op() + " without two operands");
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
      if (!staticF32(v)) return fail(why, n->op() + " on a non-f32 or dynamic value");
      if (!broadcastsTo(v->shape().staticDims(), domain)) return fail(why, "value does not broadcast to the domain");
    }
    if (!staticF32(n->output(0)) || !broadcastsTo(n->output(0)->shape().staticDims(), domain))
      return fail(why, "result does not broadcast to the domain");
  }
  return true;
}

}  // namespace

std::vector<const Value*> regionOperands(const Node& region, const Node& inner) {
  const Graph& body = *std::get<std::shared_ptr<Graph>>(*region.findAttr("body"));
  std::vector<const Value*> out;
  for (const Value* v : inner.inputs()) {
    auto it = std::find(body.inputs().begin(), body.inputs().end(), v);
    out.push_back(it == body.inputs().end() ? v : region.input(size_t(it - body.inputs().begin())));
  }
  return out;
}

bool isSupportedElementwise(const Node& n) {
  static const std::set<std::string> unary = {"Relu", "Neg",  "Exp",   "Tanh", "Sigmoid",    "Erf",      "Sqrt",
                                              "Log",  "Abs",  "Floor", "Ceil", "Reciprocal", "Identity", "LeakyRelu"};
  static const std::set<std::string> binary = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"};
  if (n.numOutputs() != 1) return false;
  if (unary.count(n.op())) return n.numInputs() == 1;
  if (binary.count(n.op())) return n.numInputs() == 2;
  if (n.op() == "Clip") return n.numInputs() >= 1 && n.numInputs() <= 3 && !n.hasAttr("min") && !n.hasAttr("max");
  return false;
}

std::unique_ptr<KernelView> analyzeKernel(const Node& node, std::string* why) {
  auto view = std::make_unique<KernelView>();
  if (node.op() == "Fused") {
    const Attribute* bodyAttr = node.findAttr("body");
    if (!bodyAttr) return fail(why, "Fused without body"), nullptr;
    const Graph& body = *std::get<std::shared_ptr<Graph>>(*bodyAttr);
    for (const auto& m : body.nodes()) view->nodes.push_back(m.get());
    for (const Value* v : body.inputs()) view->inputs.push_back(v);
    for (const Value* v : body.outputs()) view->outputs.push_back(v);
    if (view->nodes.empty() || view->outputs.empty()) return fail(why, "empty region"), nullptr;
    for (const Value* v : body.inputs())
      if (!staticF32(v)) return fail(why, "region input not f32/static"), nullptr;
    for (const Value* v : view->outputs)
      if (!v->producer()) return fail(why, "region passes an input through"), nullptr;
  } else {
    view->nodes = {&node};
    for (const Value* v : node.inputs())
      if (v) view->inputs.push_back(v);  // absent optional inputs (Clip bounds) are no arguments
    for (const Value* v : node.outputs()) view->outputs.push_back(v);
  }
  const Node& first = *view->nodes.front();
  if (!staticF32(view->outputs[0])) return fail(why, "result is not f32 with a static shape"), nullptr;
  view->domain = view->outputs[0]->shape().staticDims();
  for (const Value* v : view->outputs)
    if (!staticF32(v) || v->shape().staticDims() != view->domain)
      return fail(why, "region outputs differ in shape"), nullptr;
  std::vector<const Node*> elementwise(view->nodes.begin(), view->nodes.end());
  if (isContraction(first)) {
    view->kind = KernelKind::Contraction;
    if (!checkContraction(first, why)) return nullptr;
    if (first.output(0)->shape().staticDims() != view->domain)
      return fail(why, "epilogue changes the shape"), nullptr;
    if (view->nodes.size() > 1)
      for (const Value* v : view->outputs)
        if (v == first.output(0)) return fail(why, "the accumulator is a region output"), nullptr;
    elementwise.erase(elementwise.begin());
  } else if (node.op() == "Fused" && view->nodes.size() > 1 && matchNative(first, regionOperands(node, first))) {
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
  if (view->kind == KernelKind::Elementwise && view->domain.size() >= 1 && view->domain[0] >= 2) {
    view->rowSplit = true;
    for (const Value* v : view->inputs) {
      std::vector<int64_t> s = v->shape().staticDims();
      view->rowInputs.push_back(s.size() == view->domain.size() && s[0] == view->domain[0]);
    }
  }
  return view;
}

namespace {

void appendAttr(std::string& out, const Attribute& a);

void appendType(std::string& out, const Value* v) {
  if (!v) {
    out += "none";
    return;
  }
  out += v->type().str();
}

// Values are named by position, so two bodies that differ only in names print alike.
void appendGraph(std::string& out, const Graph& g) {
  std::unordered_map<const Value*, std::string> ids;
  int next = 0;
  auto id = [&](const Value* v) -> std::string {
    if (!v) return "_";
    auto it = ids.find(v);
    if (it != ids.end()) return it->second;
    // Initializers inside a body are data: print them by content.
    std::string s = "c" + std::to_string(next++);
    if (v->isConstant()) {
      s += "=";
      appendAttr(s, v->constant());
    }
    return ids[v] = s;
  };
  out += "{in";
  for (const Value* v : g.inputs()) {
    ids[v] = "%" + std::to_string(next++);
    out += " " + ids[v] + ":";
    appendType(out, v);
  }
  for (const auto& n : g.nodes()) {
    out += "; ";
    for (const Value* v : n->outputs()) {
      ids[v] = "%" + std::to_string(next++);
      out += ids[v] + ":";
      appendType(out, v);
      out += " ";
    }
    out += "= " + n->op() + "(";
    for (const Value* v : n->inputs()) out += id(v) + ",";
    out += ")[";
    for (const auto& [k, a] : n->attrs()) {
      if (k == "provenance") continue;
      out += k + "=";
      appendAttr(out, a);
      out += ",";
    }
    out += "]";
  }
  out += "; out";
  for (const Value* v : g.outputs()) out += " " + id(v);
  out += "}";
}

void appendAttr(std::string& out, const Attribute& a) {
  char buf[64];
  switch (attrKind(a)) {
    case AttrKind::Int: out += std::to_string(std::get<int64_t>(a)); break;
    case AttrKind::Float:
      std::snprintf(buf, sizeof buf, "%a", double(std::get<float>(a)));
      out += buf;
      break;
    case AttrKind::String: out += "'" + std::get<std::string>(a) + "'"; break;
    case AttrKind::Ints:
      for (int64_t v : std::get<std::vector<int64_t>>(a)) out += std::to_string(v) + " ";
      break;
    case AttrKind::Floats:
      for (float v : std::get<std::vector<float>>(a)) {
        std::snprintf(buf, sizeof buf, "%a ", double(v));
        out += buf;
      }
      break;
    case AttrKind::Strings:
      for (const auto& s : std::get<std::vector<std::string>>(a)) out += "'" + s + "' ";
      break;
    case AttrKind::Tensor: {
      const Tensor& t = std::get<Tensor>(a);
      out += t.type().str() + "#";
      uint64_t h = 1469598103934665603ull;
      const unsigned char* p = static_cast<const unsigned char*>(t.rawData());
      for (size_t i = 0; i < t.byteSize(); ++i) h = (h ^ p[i]) * 1099511628211ull;
      std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
      out += buf;
      break;
    }
    case AttrKind::Graph: appendGraph(out, *std::get<std::shared_ptr<Graph>>(a)); break;
  }
}

}  // namespace

std::string structuralKey(const Node& node) {
  std::string key = node.op() + "(";
  for (size_t i = 0; i < node.numInputs(); ++i) {
    appendType(key, node.input(i));
    // Operands that are the same value (Mul(x, x)) compile to one argument read twice: part of the structure.
    for (size_t j = 0; j < i; ++j)
      if (node.input(i) && node.input(j) == node.input(i)) {
        key += "=#" + std::to_string(j);
        break;
      }
    key += ",";
  }
  key += ")->(";
  for (const Value* v : node.outputs()) {
    appendType(key, v);
    key += ",";
  }
  key += ")[";
  for (const auto& [k, a] : node.attrs()) {
    if (k == "provenance") continue;
    key += k + "=";
    appendAttr(key, a);
    key += ",";
  }
  return key + "]";
}

}  // namespace friction::codegen
