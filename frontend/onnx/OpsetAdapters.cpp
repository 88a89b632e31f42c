#include "frontend/onnx/OpsetAdapters.h"

#include <functional>
#include <limits>

#include "ir/Error.h"
#include "ir/OpRegistry.h"

namespace friction::onnxio {
namespace {

// Moves attribute `attr` (when present) into input slot `slot` as a constant.
void attrToInput(Graph& g, Node& n, const std::string& attr, size_t slot,
                 const std::function<Tensor(const Attribute&)>& toTensor) {
  const Attribute* a = n.findAttr(attr);
  if (!a) return;
  Tensor t = toTensor(*a);
  n.removeAttr(attr);
  n.padInputs(slot + 1);
  n.setInput(slot, g.addInitializer(g.freshName(n.name() + "_" + attr), std::move(t)));
}

Tensor intsTensor(const Attribute& a) { return Tensor::vectorI64(std::get<std::vector<int64_t>>(a)); }

// A scalar of the dtype of the node's first input (Clip bounds, Pad value).
Tensor scalarLike(const Node& n, double v) {
  return Tensor::fromVector<double>(DType::F64, {}, {v}).castTo(n.input(0)->dtype());
}

void adaptClip(Graph& g, Node& n) {
  auto bound = [&](const Attribute& a) { return scalarLike(n, std::get<float>(a)); };
  // Slot 1 must exist (possibly absent) before max lands in slot 2.
  n.padInputs(3);
  attrToInput(g, n, "min", 1, bound);
  attrToInput(g, n, "max", 2, bound);
  while (n.numInputs() > 1 && !n.inputs().back()) n.setInputs({n.inputs().begin(), n.inputs().end() - 1});
}

void adaptPad(Graph& g, Node& n) {
  attrToInput(g, n, "pads", 1, intsTensor);
  std::string mode = n.attrString("mode", "constant");
  float value = n.attrFloat("value", 0.0f);
  n.removeAttr("value");
  if (mode == "constant") {
    n.padInputs(3);
    n.setInput(2, g.addInitializer(g.freshName(n.name() + "_value"), scalarLike(n, value)));
  }
}

void adaptDropout(Graph& g, Node& n) {
  n.removeAttr("is_test");
  attrToInput(g, n, "ratio", 1, [](const Attribute& a) { return Tensor::scalarF32(std::get<float>(a)); });
}

void adaptSlice(Graph& g, Node& n) {
  attrToInput(g, n, "starts", 1, intsTensor);
  attrToInput(g, n, "ends", 2, intsTensor);
  attrToInput(g, n, "axes", 3, intsTensor);
}

// Resize-10 and Upsample-7/9 scale by `scales` with asymmetric coordinates.
void adaptResize10(Graph& g, Node& n) {
  if (n.op() == "Upsample") {
    n.setOp("Resize");
    attrToInput(g, n, "scales", 1, [](const Attribute& a) {
      auto f = std::get<std::vector<float>>(a);
      return Tensor::fromVector<float>(DType::F32, {int64_t(f.size())}, f);
    });
  }
  Value* scales = n.input(1);
  n.setInputs({n.input(0), nullptr, scales});
  std::string mode = n.attrString("mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  n.setAttr("mode", mode);
  n.setAttr("coordinate_transformation_mode", std::string("asymmetric"));
  if (mode == "nearest") n.setAttr("nearest_mode", std::string("floor"));
}

// Pre-13 Softmax coerces the input to 2-D at `axis`; the same result is
// Reshape(Softmax(Flatten(x, axis), axis=1), Shape(x)).
void adaptCoercedSoftmax(Graph& g, Node& n) {
  Value* x = n.input(0);
  int64_t axis = n.attrInt("axis", 1);
  const Shape& s = x->shape();
  if (s.hasRank() && (axis == int64_t(s.rank()) - 1 || axis == -1)) {
    n.setAttr("axis", int64_t(-1));  // identical to the opset-13 semantics
    return;
  }
  auto add = [&](const std::string& op, std::vector<Value*> in, std::map<std::string, Attribute> attrs) {
    Node* m = g.addNode(op, std::move(in), {g.freshName(n.name() + "_" + op)}, std::move(attrs),
                        g.freshName(n.name() + "_" + op));
    inferNode(*m);
    return m->output(0);
  };
  Value* shape = add("Shape", {x}, {});
  Value* flat = add("Flatten", {x}, {{"axis", axis}});
  Value* soft = add(n.op(), {flat}, {{"axis", int64_t(1)}});
  n.setOp("Reshape");
  n.removeAttr("axis");
  n.setInputs({soft, shape});
}

// PRelu before opset 7 applied a 1-D slope of size C per channel (axis 1);
// numpy broadcasting needs it shaped [C, 1, ..., 1].
void adaptPRelu(Graph& g, Node& n) {
  Value* slope = n.input(1);
  if (!slope) return;
  const Shape& x = n.input(0)->shape();
  if (!slope->isConstant() || !x.hasRank() || x.rank() < 3 || slope->shape().rank() != 1) return;
  const Tensor& t = slope->constant();
  if (t.numel() == 1 || !x[1].isStatic() || x[1].value != t.numel()) return;
  std::vector<int64_t> dims(x.rank() - 1, 1);
  dims[0] = t.numel();
  n.setInput(1, g.addInitializer(g.freshName(slope->name() + "_per_channel"), t.reshaped(dims)));
}

struct Adapter {
  const char* op;
  int64_t before;  // applies to models whose opset is below this version
  void (*fn)(Graph&, Node&);
};

void squeezeAxes(Graph& g, Node& n) { attrToInput(g, n, "axes", 1, intsTensor); }
void splitSizes(Graph& g, Node& n) { attrToInput(g, n, "split", 1, intsTensor); }

const Adapter kAdapters[] = {
    {"Clip", 11, adaptClip},
    {"PRelu", 7, adaptPRelu},
    {"Pad", 11, adaptPad},
    {"Dropout", 12, adaptDropout},
    {"Slice", 10, adaptSlice},
    {"Split", 13, splitSizes},
    {"Squeeze", 13, squeezeAxes},
    {"Unsqueeze", 13, squeezeAxes},
    {"ReduceSum", 13, squeezeAxes},
    {"Resize", 11, adaptResize10},
    {"Upsample", 100, adaptResize10},
    {"Scatter", 100, [](Graph&, Node& n) { n.setOp("ScatterElements"); }},
    {"Softmax", 13, adaptCoercedSoftmax},
    {"LogSoftmax", 13, adaptCoercedSoftmax},
    {"Hardmax", 13, adaptCoercedSoftmax},
};

// Attributes of opsets 1-8 that carry no meaning for inference.
void dropLegacyAttributes(Node& n, int64_t opset) {
  if (opset < 6) n.removeAttr("consumed_inputs");  // an in-place hint of early opsets
  if (n.op() == "BatchNormalization" || n.op() == "Dropout") n.removeAttr("is_test");
  if (n.op() == "BatchNormalization" && n.hasAttr("spatial")) {
    FRICTION_CHECK(n.attrInt("spatial", 1) == 1, n.describe() + ": spatial=0 BatchNormalization is not supported");
    n.removeAttr("spatial");
  }
  if (opset < 7 && n.hasAttr("broadcast") && n.input(1)) {
    // Pre-7 broadcasting aligned B at `axis`; it equals numpy broadcasting when
    // B lines up with A's trailing dims.
    const Shape &a = n.input(0)->shape(), &b = n.input(1)->shape();
    if (n.hasAttr("axis") && a.hasRank() && b.hasRank())
      FRICTION_CHECK(n.attrInt("axis", 0) == int64_t(a.rank() - b.rank()) ||
                         n.attrInt("axis", 0) - int64_t(a.rank()) == -int64_t(b.rank()),
                     n.describe() + ": legacy broadcast with axis is not supported");
    n.removeAttr("broadcast");
    n.removeAttr("axis");
  }
}

}  // namespace

bool isLegacyOp(const std::string& op) { return op == "Upsample" || op == "Scatter"; }

void adaptToOpset17(Graph& graph, Node& node, int64_t opset) {
  // Every adapted op needs input 0; without it, leave the node for inference to reject.
  if (!node.input(0)) return;
  if (opset < 9) dropLegacyAttributes(node, opset);
  for (const Adapter& a : kAdapters)
    if (node.op() == a.op && opset < a.before) {
      a.fn(graph, node);
      return;
    }
}

}  // namespace friction::onnxio
