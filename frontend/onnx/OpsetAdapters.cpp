#include "frontend/onnx/OpsetAdapters.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <set>
#include <limits>

#include "frontend/onnx/AdapterUtil.h"
#include "ir/Error.h"
#include "ir/OpRegistry.h"

namespace friction::onnxio {

Value* addInferred(Graph& g, const Node& n, const std::string& op, std::vector<Value*> in,
                   std::map<std::string, Attribute> attrs) {
  Node* m = g.addNode(op, std::move(in), {g.freshName(n.name() + "_" + op)}, std::move(attrs),
                      g.freshName(n.name() + "_" + op));
  inferNode(*m);
  return m->output(0);
}

void becomes(Node& n, const std::string& op, std::vector<Value*> in, std::map<std::string, Attribute> attrs) {
  n.setOp(op);
  std::vector<std::string> names;
  for (const auto& [name, value] : n.attrs()) names.push_back(name);
  for (const auto& name : names) n.removeAttr(name);
  for (auto& [k, v] : attrs) n.setAttr(k, std::move(v));
  n.setInputs(std::move(in));
}

int64_t knownRank(const Node& n) {
  FRICTION_CHECK(n.input(0)->shape().hasRank(), n.describe() + ": the input's rank must be known");
  return int64_t(n.input(0)->shape().rank());
}

int64_t NodeRewrite::staticDim(const Value* v, int64_t axis, const std::string& what) const {
  const Shape& s = v->shape();
  FRICTION_CHECK(s.hasRank() && s.rank() > 0, n.describe() + ": " + what + " needs a known rank");
  size_t a = size_t(axis < 0 ? axis + int64_t(s.rank()) : axis);
  FRICTION_CHECK(a < s.rank() && s[a].isStatic(),
                 n.describe() + ": " + what + " needs a static extent on axis " + std::to_string(axis));
  return s[a].value;
}

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

// `v` in the dtype of the node's first input: a scalar (Clip bounds, Pad value), or `count` copies of it.
Tensor filledLike(const Node& n, double v, int64_t count = -1) {
  std::vector<int64_t> shape;
  if (count >= 0) shape = {count};
  return Tensor::fromVector<double>(DType::F64, shape, std::vector<double>(size_t(std::max<int64_t>(count, 1)), v))
      .castTo(n.input(0)->dtype());
}

void adaptClip(Graph& g, Node& n) {
  auto bound = [&](const Attribute& a) { return filledLike(n, std::get<float>(a)); };
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
    n.setInput(2, g.addInitializer(g.freshName(n.name() + "_value"), filledLike(n, value)));
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

// filledLike as an initializer named after `n` and `what`.
Value* constantLike(Graph& g, const Node& n, double v, const std::string& what, int64_t count = -1) {
  return g.addInitializer(g.freshName(n.name() + "_" + what), filledLike(n, v, count));
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
  Value* shape = addInferred(g, n, "Shape", {x});
  Value* flat = addInferred(g, n, "Flatten", {x}, {{"axis", axis}});
  Value* soft = addInferred(g, n, n.op(), {flat}, {{"axis", int64_t(1)}});
  becomes(n, "Reshape", {soft, shape});
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


// ---- Opsets 18 and later: newer forms of supported ops, and new ops written with supported ones. ----

// The constant ints of input `slot` (an initializer or a Constant's output); an Error naming `what` otherwise.
std::vector<int64_t> constantInts(const Node& n, size_t slot, const std::string& what) {
  const Tensor* t = constantData(n.input(slot));
  FRICTION_CHECK(t != nullptr, n.describe() + ": " + what + " must be a constant");
  return t->toInt64Vector();
}

// `axis` of a rank-`rank` tensor in [0, rank); an Error naming `n` otherwise.
int64_t checkedAxis(const Node& n, int64_t axis, int64_t rank) {
  FRICTION_CHECK(axis >= -rank && axis < rank, n.describe() + ": axis " + std::to_string(axis) + " is out of range for rank " +
                                                   std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// Reduce*-18 take `axes` as input 1; constant axes become the opset-17 attribute, which the passes and code
// generators read (axes computed at run time stay an input, which the ops also accept).
void reduceAxesToAttribute(Graph& g, Node& n) {
  if (n.numInputs() > 1 && n.input(1) && !constantData(n.input(1))) return;
  bool noop = n.attrInt("noop_with_empty_axes", 0) != 0;
  n.removeAttr("noop_with_empty_axes");
  std::vector<int64_t> axes;
  if (n.numInputs() > 1 && n.input(1)) axes = constantInts(n, 1, "axes");
  n.setInputs({n.input(0)});
  if (!axes.empty()) n.setAttr("axes", axes);
  else if (noop) becomes(n, "Identity", {n.input(0)});  // empty axes with noop_with_empty_axes: no reduction
}

// Split-18's `num_outputs`: equal parts, the last smaller when the axis does not divide.
void splitNumOutputs(Graph& g, Node& n) {
  if (!n.hasAttr("num_outputs")) return;
  int64_t parts = n.attrInt("num_outputs", 0);
  n.removeAttr("num_outputs");
  FRICTION_CHECK(n.numInputs() < 2 || !n.input(1), n.describe() + ": give num_outputs or split, not both");
  FRICTION_CHECK(parts > 0 && parts == int64_t(n.numOutputs()),
                 n.describe() + ": num_outputs " + std::to_string(parts) + " but " + std::to_string(n.numOutputs()) + " outputs");
  int64_t rank = knownRank(n), axis = checkedAxis(n, n.attrInt("axis", 0), rank);
  const Dim& d = n.input(0)->shape()[size_t(axis)];
  FRICTION_CHECK(d.isStatic(), n.describe() + ": num_outputs needs a static extent on the split axis");
  int64_t chunk = (d.value + parts - 1) / parts;
  std::vector<int64_t> sizes(size_t(parts), chunk);
  sizes.back() = d.value - chunk * (parts - 1);
  FRICTION_CHECK(sizes.back() >= 0, n.describe() + ": cannot split " + std::to_string(d.value) + " into " +
                                        std::to_string(parts) + " parts of " + std::to_string(chunk));
  n.padInputs(2);
  n.setInput(1, g.addInitializer(g.freshName(n.name() + "_split"), Tensor::vectorI64(sizes)));
}

// Resize-18's keep_aspect_ratio_policy not_larger / not_smaller: one scale for every resized axis (`axes`, or all),
// the smallest / largest of sizes over the input's extents, each output extent that scale times the input's
// rounded half up. Written as both: sizes for the extents, scales for the coordinate mapping (the IR's Resize
// takes the two together for this).
void keepAspectRatio(Graph& g, Node& n, const std::vector<int64_t>& axes) {
  const std::string policy = n.attrString("keep_aspect_ratio_policy", "stretch");
  if (policy == "stretch") return;
  FRICTION_CHECK(policy == "not_larger" || policy == "not_smaller",
                 n.describe() + ": keep_aspect_ratio_policy must be stretch, not_larger or not_smaller, got '" + policy + "'");
  const Tensor* sizes = n.numInputs() > 3 ? constantData(n.input(3)) : nullptr;
  const Shape& x = n.input(0)->shape();
  FRICTION_CHECK(sizes && x.isStatic(), n.describe() + ": keep_aspect_ratio_policy needs constant sizes and a static input");
  FRICTION_CHECK(sizes->numel() == int64_t(axes.size()), n.describe() + ": sizes has " + std::to_string(sizes->numel()) +
                                                            " values for " + std::to_string(axes.size()) + " axes");
  double scale = policy == "not_larger" ? INFINITY : 0.0;
  for (size_t i = 0; i < axes.size(); ++i) {
    double ratio = sizes->elementAsDouble(int64_t(i)) / double(x[size_t(axes[i])].value);
    scale = policy == "not_larger" ? std::min(scale, ratio) : std::max(scale, ratio);
  }
  std::vector<int64_t> extents;
  for (int64_t a : axes) extents.push_back(int64_t(scale * double(x[size_t(a)].value) + 0.5));
  std::vector<float> scales(axes.size(), float(scale));
  auto named = [&](const char* what, Tensor t) { return g.addInitializer(g.freshName(n.name() + what), std::move(t)); };
  n.setInputs({n.input(0), n.input(1),
               named("_scales", Tensor::fromVector<float>(DType::F32, {int64_t(scales.size())}, scales)),
               named("_sizes", Tensor::vectorI64(extents))});
}

// Resize-18: `axes` names the dims roi/scales/sizes cover (the others keep their size); antialias stays (the IR's
// Resize takes it) where it changes anything: linear and cubic modes.
void adaptResize18(Graph& g, Node& n) {
  if (n.attrString("mode", "nearest") == "nearest" || n.attrInt("antialias", 0) == 0) n.removeAttr("antialias");
  std::vector<int64_t> axes = n.attrInts("axes");
  const bool policy = n.attrString("keep_aspect_ratio_policy", "stretch") != "stretch";
  const int64_t rank = axes.empty() && !policy ? 0 : knownRank(n);
  for (int64_t& a : axes) a = checkedAxis(n, a, rank);
  if (policy) {
    std::vector<int64_t> resized = axes;  // no axes: every dim
    if (resized.empty()) resized.resize(size_t(rank)), std::iota(resized.begin(), resized.end(), int64_t(0));
    keepAspectRatio(g, n, resized);
  }
  for (const char* a : {"keep_aspect_ratio_policy", "axes"}) n.removeAttr(a);
  if (axes.empty()) return;
  FRICTION_CHECK(std::set<int64_t>(axes.begin(), axes.end()).size() == axes.size(), n.describe() + ": axes repeat a dim");
  // Input `slot` over all dims: the given values at `axes` (roi: starts, then ends), `fill(d)` elsewhere;
  // computed here for a constant input, else by a ScatterElements into the fill values.
  auto widen = [&](size_t slot, bool roi, const std::function<Value*()>& fillAll) {
    if (n.numInputs() <= slot || !n.input(slot)) return;
    if (const Tensor* t = constantData(n.input(slot)); t && t->numel() == 0) return;  // an empty constant: not given
    std::vector<int64_t> at = axes;
    if (roi)
      for (int64_t a : axes) at.push_back(a + rank);
    Value* fill = fillAll();
    Value* given = n.input(slot);
    const Tensor* t = constantData(given);
    const Tensor* f = constantData(fill);
    if (t && f) {
      FRICTION_CHECK(t->numel() == int64_t(at.size()), n.describe() + ": input " + std::to_string(slot) + " has " +
                                                           std::to_string(t->numel()) + " values for " +
                                                           std::to_string(axes.size()) + " axes");
      Tensor full = f->clone();
      for (size_t i = 0; i < at.size(); ++i) {
        Tensor one = Tensor::fromVector<double>(DType::F64, {}, {t->elementAsDouble(int64_t(i))}).castTo(full.dtype());
        std::memcpy(static_cast<char*>(full.rawData()) + size_t(at[i]) * dtypeSize(full.dtype()), one.rawData(),
                    dtypeSize(full.dtype()));
      }
      n.setInput(slot, g.addInitializer(g.freshName(n.name() + "_all_axes"), std::move(full)));
      return;
    }
    Value* indices = g.addInitializer(g.freshName(n.name() + "_axes"), Tensor::vectorI64(at));
    n.setInput(slot, addInferred(g, n, "ScatterElements", {fill, indices, given}, {{"axis", int64_t(0)}}));
  };
  auto constantFill = [&](size_t slot, std::vector<double> values) {
    DType dt = n.input(slot) ? n.input(slot)->dtype() : DType::F32;
    return [&g, &n, values, dt] {
      return g.addInitializer(g.freshName(n.name() + "_fill"),
                              Tensor::fromVector<double>(DType::F64, {int64_t(values.size())}, values).castTo(dt));
    };
  };
  std::vector<double> roiFill(size_t(2 * rank), 0.0);
  std::fill(roiFill.begin() + rank, roiFill.end(), 1.0);
  widen(1, true, constantFill(1, roiFill));
  widen(2, false, constantFill(2, std::vector<double>(size_t(rank), 1.0)));
  widen(3, false, [&]() -> Value* {
    Value* x = n.input(0);
    if (x->shape().isStatic())
      return g.addInitializer(g.freshName(n.name() + "_fill"), Tensor::vectorI64(x->shape().staticDims()));
    return addInferred(g, n, "Shape", {x});
  });
}

// Attributes that only matter for dtypes friction does not have (float8): Cast's saturate and round_mode.
void dropFloat8Attributes(Graph&, Node& n) {
  n.removeAttr("saturate");
  n.removeAttr("round_mode");
}

// SpaceToDepth-28's mode: DCR is the earlier opsets' order; CRD (each channel's b x b block kept together, the
// inverse of DepthToSpace's CRD) is a Reshape to [N, C, H/b, b, W/b, b], a Transpose and a Reshape.
void spaceToDepthMode(Graph& g, Node& n) {
  std::string mode = n.attrString("mode", "DCR");
  n.removeAttr("mode");
  if (mode == "DCR") return;
  FRICTION_CHECK(mode == "CRD", n.describe() + ": mode must be DCR or CRD, got '" + mode + "'");
  const Shape& s = n.input(0)->shape();
  int64_t b = n.attrInt("blocksize", 0);
  FRICTION_CHECK(s.hasRank() && s.rank() == 4 && s[1].isStatic() && s[2].isStatic() && s[3].isStatic(),
                 n.describe() + ": mode CRD needs a 4-D input of static channels and size");
  FRICTION_CHECK(b > 0 && s[2].value % b == 0 && s[3].value % b == 0,
                 n.describe() + ": the spatial dims are not divisible by blocksize " + std::to_string(b));
  int64_t c = s[1].value, h = s[2].value / b, w = s[3].value / b;
  auto shape = [&](std::vector<int64_t> dims) { return g.addInitializer(g.freshName(n.name() + "_shape"), Tensor::vectorI64(dims)); };
  Value* blocks = addInferred(g, n, "Reshape", {n.input(0), shape({0, c, h, b, w, b})});
  Value* moved = addInferred(g, n, "Transpose", {blocks}, {{"perm", std::vector<int64_t>{0, 1, 3, 5, 2, 4}}});
  becomes(n, "Reshape", {moved, shape({0, c * b * b, h, w})});
}

// GridSample-20 names its modes linear and cubic (and samples N-D grids, which the op takes as it is).
void gridSampleModeNames(Graph&, Node& n) {
  const std::string mode = n.attrString("mode", "linear");
  n.setAttr("mode", mode == "linear" ? std::string("bilinear") : mode == "cubic" ? std::string("bicubic") : mode);
}

// Gelu-20 as the Erf (or tanh) formula, which fuse-reductions fuses again.
void decomposeGelu(Graph& g, Node& n) {
  Value* x = n.input(0);
  std::string approximate = n.attrString("approximate", "none");
  FRICTION_CHECK(approximate == "none" || approximate == "tanh",
                 n.describe() + ": approximate must be none or tanh, got '" + approximate + "'");
  Value* inner;  // erf(x / sqrt 2), or tanh(sqrt(2/pi) (x + 0.044715 x^3))
  if (approximate == "none") {
    inner = addInferred(g, n, "Erf", {addInferred(g, n, "Div", {x, constantLike(g, n, std::sqrt(2.0), "sqrt2")})});
  } else {
    Value* cube = addInferred(g, n, "Mul", {addInferred(g, n, "Mul", {x, x}), x});
    Value* sum = addInferred(g, n, "Add", {x, addInferred(g, n, "Mul", {cube, constantLike(g, n, 0.044715, "c")})});
    inner = addInferred(g, n, "Tanh", {addInferred(g, n, "Mul", {sum, constantLike(g, n, std::sqrt(2.0 / M_PI), "k")})});
  }
  Value* onePlus = addInferred(g, n, "Add", {inner, constantLike(g, n, 1.0, "one")});
  becomes(n, "Mul", {addInferred(g, n, "Mul", {x, onePlus}), constantLike(g, n, 0.5, "half")});
}

// GroupNormalization (18: scale and bias per group; 21: per channel) as InstanceNormalization over
// [N, groups, rest], reshaped back.
void decomposeGroupNorm(Graph& g, Node& n, bool perChannel) {
  Value *x = n.input(0), *scale = n.input(1), *bias = n.input(2);
  int64_t groups = n.attrInt("num_groups", 0), rank = knownRank(n);
  FRICTION_CHECK(groups > 0, n.describe() + ": num_groups must be positive");
  FRICTION_CHECK(rank >= 2, n.describe() + ": the input needs a channel dim");
  float epsilon = n.attrFloat("epsilon", 1e-5f);
  Value* grouped = addInferred(g, n, "Reshape", {x, g.addInitializer(g.freshName(n.name() + "_groups"),
                                                                      Tensor::vectorI64({0, groups, -1}))});
  Value* normScale = perChannel ? constantLike(g, n, 1.0, "ones", groups) : scale;
  Value* normBias = perChannel ? constantLike(g, n, 0.0, "zeros", groups) : bias;
  Value* normed = addInferred(g, n, "InstanceNormalization", {grouped, normScale, normBias}, {{"epsilon", epsilon}});
  Value* shapeOfX = addInferred(g, n, "Shape", {x});
  if (!perChannel) return becomes(n, "Reshape", {normed, shapeOfX});
  Value* back = addInferred(g, n, "Reshape", {normed, shapeOfX});
  std::vector<int64_t> perC(size_t(rank - 1), 1);
  perC[0] = -1;
  Value* shape = g.addInitializer(g.freshName(n.name() + "_per_channel"), Tensor::vectorI64(perC));
  Value* scaled = addInferred(g, n, "Mul", {back, addInferred(g, n, "Reshape", {scale, shape})});
  becomes(n, "Add", {scaled, addInferred(g, n, "Reshape", {bias, shape})});
}

// RMSNormalization-23: x / sqrt(mean(x^2 over the dims from axis) + epsilon) * scale.
void decomposeRmsNorm(Graph& g, Node& n) {
  Value *x = n.input(0), *scale = n.input(1);
  int64_t rank = knownRank(n), axis = checkedAxis(n, n.attrInt("axis", -1), rank);
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d) axes.push_back(d);
  Value* meanSquare = addInferred(g, n, "ReduceMean", {addInferred(g, n, "Mul", {x, x})},
                                  {{"axes", axes}, {"keepdims", int64_t(1)}});
  Value* eps = constantLike(g, n, n.attrFloat("epsilon", 1e-5f), "epsilon");
  Value* rms = addInferred(g, n, "Sqrt", {addInferred(g, n, "Add", {meanSquare, eps})});
  becomes(n, "Mul", {addInferred(g, n, "Div", {x, rms}), scale});
}

// MeanVarianceNormalization (9, 13) as its function body: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over
// `axes` (default: all but the channels).
void decomposeMeanVarianceNorm(Graph& g, Node& n) {
  Value* x = n.input(0);
  const std::map<std::string, Attribute> over{{"axes", n.attrInts("axes", {0, 2, 3})}, {"keepdims", int64_t(1)}};
  Value* mean = addInferred(g, n, "ReduceMean", {x}, over);
  Value* meanOfSquares = addInferred(g, n, "ReduceMean", {addInferred(g, n, "Mul", {x, x})}, over);
  Value* variance = addInferred(g, n, "Sub", {meanOfSquares, addInferred(g, n, "Mul", {mean, mean})});
  Value* deviation = addInferred(g, n, "Add", {addInferred(g, n, "Sqrt", {variance}), constantLike(g, n, 1e-9, "epsilon")});
  becomes(n, "Div", {addInferred(g, n, "Sub", {x, mean}), deviation});
}

// Mish-18: x tanh(softplus(x)); Swish-24: x sigmoid(alpha x).
void decomposeMish(Graph& g, Node& n) {
  Value* x = n.input(0);
  becomes(n, "Mul", {x, addInferred(g, n, "Tanh", {addInferred(g, n, "Softplus", {x})})});
}
void decomposeSwish(Graph& g, Node& n) {
  Value* x = n.input(0);
  Value* scaled = addInferred(g, n, "Mul", {x, constantLike(g, n, n.attrFloat("alpha", 1.0f), "alpha")});
  becomes(n, "Mul", {x, addInferred(g, n, "Sigmoid", {scaled})});
}

void squeezeAxes(Graph& g, Node& n) { attrToInput(g, n, "axes", 1, intsTensor); }
void splitSizes(Graph& g, Node& n) { attrToInput(g, n, "split", 1, intsTensor); }

constexpr int64_t kAll = 1000;  // no upper bound

// The recurrent layers before opset 7: output_sequence only said whether Y was wanted, which the node's
// outputs say too.
void dropOutputSequence(Graph&, Node& n) { n.removeAttr("output_sequence"); }

// Every opset difference of a supported op, and every newer op written with supported ones. An adapter
// applies to nodes of models whose opset is in [from, before); a null `fn` is a change friction's op
// already covers (listed so that tests can check every change of the onnx package's schemas is reviewed).
const OpsetAdapter kAdapters[] = {
    {"Clip", 1, 11, adaptClip, "min and max attributes become inputs"},
    {"PRelu", 1, 7, adaptPRelu, "a 1-D per-channel slope is shaped to broadcast"},
    {"Pad", 1, 11, adaptPad, "pads and value attributes become inputs"},
    {"Dropout", 1, 12, adaptDropout, "ratio becomes an input"},
    {"Slice", 1, 10, adaptSlice, "starts, ends and axes attributes become inputs"},
    {"Split", 1, 13, splitSizes, "split attribute becomes an input"},
    {"Squeeze", 1, 13, squeezeAxes, "axes attribute becomes an input"},
    {"Unsqueeze", 1, 13, squeezeAxes, "axes attribute becomes an input"},
    {"ReduceSum", 1, 13, squeezeAxes, "axes attribute becomes an input"},
    {"Resize", 1, 11, adaptResize10, "Resize-10: scales with asymmetric coordinates"},
    {"Upsample", 1, kAll, adaptResize10, "removed op: Resize with asymmetric coordinates"},
    {"Scatter", 1, kAll, [](Graph&, Node& n) { n.setOp("ScatterElements"); }, "removed op: ScatterElements"},
    {"Softmax", 1, 13, adaptCoercedSoftmax, "the input coerced to 2-D at axis: Flatten, Softmax, Reshape"},
    {"LogSoftmax", 1, 13, adaptCoercedSoftmax, "the input coerced to 2-D at axis: Flatten, LogSoftmax, Reshape"},
    {"Hardmax", 1, 13, adaptCoercedSoftmax, "the input coerced to 2-D at axis: Flatten, Hardmax, Reshape"},
    {"RNN", 1, 7, dropOutputSequence, "output_sequence dropped: Y is computed when the node has it"},
    {"GRU", 1, 7, dropOutputSequence, "output_sequence dropped: Y is computed when the node has it"},
    {"LSTM", 1, 7, dropOutputSequence, "output_sequence dropped: Y is computed when the node has it"},
    {"Pad", 18, kAll, nullptr, "axes input: supported by Pad"},
    {"LpPool", 18, kAll, nullptr, "ceil_mode and dilations: supported by the pools"},
    {"AveragePool", 19, kAll, nullptr, "dilations: supported by the pools"},
    {"ReduceMean", 18, kAll, reduceAxesToAttribute, "axes input becomes the attribute (noop_with_empty_axes: Identity)"},
    {"ReduceMax", 18, kAll, reduceAxesToAttribute, "axes input becomes the attribute (noop_with_empty_axes: Identity)"},
    {"ReduceMin", 18, kAll, reduceAxesToAttribute, "axes input becomes the attribute (noop_with_empty_axes: Identity)"},
    {"ReduceProd", 18, kAll, reduceAxesToAttribute, "axes input becomes the attribute (noop_with_empty_axes: Identity)"},
    {"ReduceL1", 18, kAll, reduceAxesToAttribute, "axes input becomes the attribute (noop_with_empty_axes: Identity)"},
    {"ReduceL2", 18, kAll, reduceAxesToAttribute, "axes input becomes the attribute (noop_with_empty_axes: Identity)"},
    {"ReduceSumSquare", 18, kAll, reduceAxesToAttribute, "axes input becomes the attribute (noop_with_empty_axes: Identity)"},
    {"ReduceLogSum", 18, kAll, reduceAxesToAttribute, "axes input becomes the attribute (noop_with_empty_axes: Identity)"},
    {"ReduceLogSumExp", 18, kAll, reduceAxesToAttribute, "axes input becomes the attribute (noop_with_empty_axes: Identity)"},
    {"Split", 18, kAll, splitNumOutputs, "num_outputs becomes split sizes (the last part smaller)"},
    {"Resize", 18, kAll, adaptResize18, "axes widens roi/scales/sizes to every dim; keep_aspect_ratio_policy as one scale; antialias supported by Resize"},
    {"Mish", 18, kAll, decomposeMish, "new op: x * Tanh(Softplus(x))"},
    {"GroupNormalization", 18, 21, [](Graph& g, Node& n) { decomposeGroupNorm(g, n, false); },
     "new op: InstanceNormalization over [N, groups, rest], scale and bias per group"},
    {"GroupNormalization", 21, kAll, [](Graph& g, Node& n) { decomposeGroupNorm(g, n, true); },
     "InstanceNormalization over [N, groups, rest], then scale and bias per channel"},
    {"Cast", 19, kAll, dropFloat8Attributes, "saturate (19) and round_mode (24) only concern float8 types"},
    {"CastLike", 19, kAll, dropFloat8Attributes, "saturate (19) and round_mode (24) only concern float8 types"},
    {"GridSample", 20, kAll, gridSampleModeNames, "mode names linear and cubic become bilinear and bicubic; N-D grids supported by GridSample"},
    {"Gelu", 20, kAll, decomposeGelu, "new op: the Erf formula (approximate=tanh: the tanh formula)"},
    {"RMSNormalization", 23, kAll, decomposeRmsNorm, "new op: x / Sqrt(ReduceMean(x*x) + epsilon) * scale"},
    {"Swish", 24, kAll, decomposeSwish, "new op: x * Sigmoid(alpha * x)"},
    {"Range", 27, kAll, [](Graph&, Node& n) { n.removeAttr("stash_type"); }, "stash_type: friction computes in double"},
    {"SpaceToDepth", 28, kAll, spaceToDepthMode, "mode: DCR is the earlier order; CRD a Reshape, Transpose and Reshape"},
    {"QuantizeLinear", 10, kAll, decomposeQuantization, "new op: Div, Round, Add, Clip, Cast (per tensor, axis or block)"},
    {"DequantizeLinear", 10, kAll, decomposeQuantization, "new op: Cast, Sub, Mul (per tensor, axis or block)"},
    {"DynamicQuantizeLinear", 11, kAll, decomposeQuantization, "new op: the range by ReduceMin/ReduceMax, then as QuantizeLinear"},
    {"QLinearMatMul", 10, kAll, decomposeQuantization, "new op: MatMul of the centred operands in f32, requantized"},
    {"QLinearConv", 10, kAll, decomposeQuantization, "new op: Conv of the centred operands in f32, requantized"},
    {"MatMulInteger", 10, kAll, decomposeQuantization, "new op: MatMul of the centred operands in f32, Cast to int32"},
    {"ConvInteger", 10, kAll, decomposeQuantization, "new op: Conv of the centred operands in f32, Cast to int32"},
    {"MeanVarianceNormalization", 9, kAll, decomposeMeanVarianceNorm, "new op: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9)"},
    {"NegativeLogLikelihoodLoss", 12, kAll, decomposeLoss, "new op: GatherElements of the targets, weights, a reduction"},
    {"SoftmaxCrossEntropyLoss", 12, kAll, decomposeLoss, "new op: LogSoftmax, then as NegativeLogLikelihoodLoss"},
    {"RotaryEmbedding", 23, kAll, decomposeRotaryEmbedding, "new op: the rotated halves (or even and odd features) by Slice, Gather, Mul, Concat"},
    {"Attention", 23, kAll, decomposeAttention,
     "new op: MatMul, Softmax, MatMul; its masks, causal frontier, window and cache lengths a bias of 0 and -inf"},
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

std::vector<OpsetAdapter> opsetAdapters() { return {std::begin(kAdapters), std::end(kAdapters)}; }

bool isAdaptedOp(const std::string& op, int64_t opset) {
  if (OpRegistry::instance().find(op)) return false;
  for (const OpsetAdapter& a : kAdapters)
    if (op == a.op && a.fn && opset >= a.from && opset < a.before) return true;
  return false;
}

void adaptToOpset17(Graph& graph, Node& node, int64_t opset) {
  // Every adapted op needs input 0; without it, leave the node for inference to reject.
  if (!node.input(0)) return;
  if (opset < 9) dropLegacyAttributes(node, opset);
  for (const OpsetAdapter& a : kAdapters)
    if (node.op() == a.op && a.fn && opset >= a.from && opset < a.before) {
      a.fn(graph, node);
      return;
    }
}

}  // namespace friction::onnxio
