// Schemas and shape/type inference of the tensor (data movement) ops. Shape
// arithmetic shared with the kernels lives in TensorShapes.h. Ops that handle
// small integer vectors also propagate Value::knownContents, so shape
// arithmetic exported by PyTorch (Shape -> Gather -> Concat -> Reshape) keeps
// symbolic batch dims instead of collapsing to unknown shapes.
#include <algorithm>
#include <cmath>

#include "ir/Error.h"
#include "ir/OpRegistry.h"
#include "ir/ops/ShapeHelpers.h"
#include "ir/ops/TensorShapes.h"

namespace friction {
namespace {

constexpr size_t kMaxContents = 64;  // larger vectors are not shape arithmetic
// The most dims a shape input may give (numpy's limit): a longer one is malformed, and a length of billions
// would allocate that many dims.
constexpr int64_t kMaxRank = 64;

Shape unknownDims(size_t rank) { return Shape(std::vector<Dim>(rank, Dim::unknown())); }

// a + b: a symbolic dim survives only adding 0.
Dim addDims(const Dim& a, const Dim& b) {
  if (a.isStatic() && b.isStatic()) return Dim(a.value + b.value);
  if (a == Dim(0)) return b;
  if (b == Dim(0)) return a;
  return Dim::unknown();
}

// A shape from tracked contents: raw integers must be valid extents.
Shape shapeFromContents(const InferContext& ctx, const std::vector<Dim>& c) {
  std::vector<Dim> dims;
  for (const Dim& d : c) {
    ctx.check(!isIntDim(d) || d.value >= 0, "shape entry " + std::to_string(d.value) + " is negative");
    dims.push_back(isIntDim(d) ? Dim(d.value) : d);
  }
  return Shape(std::move(dims));
}

// Shape from the contents of a 1-D shape input; else its rank when the input's
// length is static; else unknown rank.
Shape shapeFromInput(const InferContext& ctx, size_t i) {
  if (auto c = ctx.inputContents(i)) return shapeFromContents(ctx, *c);
  const Shape& s = ctx.inputShape(i);
  if (s.hasRank() && s.rank() == 1 && s[0].isStatic()) {
    ctx.check(s[0].value <= kMaxRank, "shape input " + std::to_string(i) + " gives " + std::to_string(s[0].value) +
                                          " dims, more than " + std::to_string(kMaxRank));
    return unknownDims(size_t(s[0].value));
  }
  return Shape::unknownRank();
}

void setContents(InferContext& ctx, size_t out, std::vector<Dim> c) {
  if (c.size() <= kMaxContents) ctx.setOutputContents(out, std::move(c));
}

// Ops that keep row-major element order (Reshape, Squeeze, Unsqueeze) keep contents.
void forwardContents(InferContext& ctx) {
  if (auto c = ctx.node().input(0)->knownContents()) setContents(ctx, 0, *c);
}

// Errors from TensorShapes.h do not name the node; add it.
InferFn named(InferFn f) {
  return [f = std::move(f)](InferContext& ctx) {
    try {
      f(ctx);
    } catch (const Error& e) {
      std::string msg = e.what();
      if (msg.rfind(ctx.node().describe(), 0) == 0) throw;
      ctx.fail(msg);
    }
  };
}

void add(OpRegistry& r, OpSchema s, InferFn f) {
  s.inferWith(named(std::move(f)));
  r.add(std::move(s));
}

// Static int input i, or nullopt when absent; fails when present but unknown is the caller's call.
std::optional<std::vector<int64_t>> optionalInts(const InferContext& ctx, size_t i) {
  return ctx.hasInput(i) ? ctx.inputStaticInts(i) : std::nullopt;
}

void inferReshape(InferContext& ctx) {
  const TensorType& x = ctx.inputType(0);
  Shape out;
  if (auto target = ctx.inputContents(1))
    out = Shape(reshapeDims(x.shape, *target, ctx.node().attrInt("allowzero", 0) != 0));
  else
    out = shapeFromInput(ctx, 1);
  ctx.setOutput(0, x.dtype, out);
  forwardContents(ctx);
}

void inferFlatten(InferContext& ctx) {
  const TensorType& x = ctx.inputType(0);
  if (!x.shape.hasRank()) return ctx.setOutput(0, x.dtype, unknownDims(2));
  int64_t r = int64_t(x.shape.rank());
  int64_t axis = ctx.node().attrInt("axis", 1);
  ctx.check(axis >= -r && axis <= r, "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(r));
  if (axis < 0) axis += r;
  Dim outer(1), inner(1);
  for (int64_t i = 0; i < r; ++i) {
    Dim& part = i < axis ? outer : inner;
    part = mulDims(part, x.shape[size_t(i)]);
  }
  ctx.setOutput(0, x.dtype, Shape{outer, inner});
}

void inferTranspose(InferContext& ctx) {
  const TensorType& x = ctx.inputType(0);
  if (!x.shape.hasRank()) return ctx.setOutput(0, x);
  std::vector<int64_t> perm = transposePerm(ctx.node(), x.shape.rank());
  std::vector<Dim> dims;
  for (int64_t p : perm) dims.push_back(x.shape[size_t(p)]);
  ctx.setOutput(0, x.dtype, Shape(dims));
}

void inferSqueeze(InferContext& ctx) {
  const TensorType& x = ctx.inputType(0);
  auto axes = optionalInts(ctx, 1);
  if (!x.shape.hasRank() || (ctx.hasInput(1) && !axes)) return ctx.setOutput(0, x.dtype, Shape::unknownRank());
  std::vector<Dim> dims;
  if (axes) {
    std::vector<int64_t> ax = normalizeAxes(*axes, int64_t(x.shape.rank()));
    for (size_t i = 0; i < x.shape.rank(); ++i) {
      const Dim& d = x.shape[i];
      bool squeezed = std::find(ax.begin(), ax.end(), int64_t(i)) != ax.end();
      ctx.check(!squeezed || !d.isStatic() || d.value == 1,
                "cannot squeeze axis " + std::to_string(i) + " of extent " + d.str());
      if (!squeezed) dims.push_back(d);
    }
  } else {
    // Without axes every 1 goes; a symbolic dim might be 1, so the rank is unknown.
    for (const Dim& d : x.shape.dims()) {
      if (!d.isStatic()) return ctx.setOutput(0, x.dtype, Shape::unknownRank());
      if (d.value != 1) dims.push_back(d);
    }
  }
  ctx.setOutput(0, x.dtype, Shape(dims));
  forwardContents(ctx);
}

void inferUnsqueeze(InferContext& ctx) {
  const TensorType& x = ctx.inputType(0);
  auto axes = ctx.inputStaticInts(1);
  if (!x.shape.hasRank() || !axes) return ctx.setOutput(0, x.dtype, Shape::unknownRank());
  int64_t outRank = int64_t(x.shape.rank() + axes->size());
  std::vector<int64_t> ax = normalizeAxes(*axes, outRank);
  std::vector<Dim> dims;
  size_t next = 0;
  for (int64_t i = 0; i < outRank; ++i)
    dims.push_back(std::find(ax.begin(), ax.end(), i) != ax.end() ? Dim(1) : x.shape[next++]);
  ctx.setOutput(0, x.dtype, Shape(dims));
  forwardContents(ctx);
}

void inferConcat(InferContext& ctx) {
  const TensorType& first = ctx.inputType(0);
  Shape out = first.shape;
  int64_t axis = ctx.node().attrInt("axis", 0);
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    const TensorType& t = ctx.inputType(i);
    ctx.check(t.dtype == first.dtype, "inputs have different dtypes");
    if (!t.shape.hasRank()) continue;
    if (!out.hasRank()) out = t.shape;
    ctx.check(t.shape.rank() == out.rank(), "input " + std::to_string(i) + " has shape " + t.shape.str() +
                                                ", expected rank " + std::to_string(out.rank()));
  }
  if (!out.hasRank()) return ctx.setOutput(0, first.dtype, out);
  size_t a = size_t(ctx.normalizeAxis(axis, int64_t(out.rank())));
  Dim total(0);
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    const Shape& s = ctx.inputShape(i);
    if (!s.hasRank()) {
      total = Dim::unknown();
      continue;
    }
    for (size_t d = 0; d < out.rank(); ++d) {
      if (d == a) continue;
      if (s[d].isStatic() && out[d].isStatic())
        ctx.check(s[d] == out[d], "input " + std::to_string(i) + " has shape " + s.str() + ", which differs from " +
                                      out.str() + " off axis " + std::to_string(a));
      else if (s[d].isStatic())
        out[d] = s[d];  // the static extent is the more informative one
    }
    total = addDims(total, s[a]);
  }
  out[a] = total;
  ctx.setOutput(0, first.dtype, out);

  if (out.rank() != 1) return;
  std::vector<Dim> c;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    auto ci = ctx.inputContents(i);
    if (!ci) return;
    c.insert(c.end(), ci->begin(), ci->end());
  }
  setContents(ctx, 0, c);
}

void inferSplit(InferContext& ctx) {
  const TensorType& x = ctx.inputType(0);
  size_t n = ctx.numOutputs();
  if (!x.shape.hasRank()) {
    for (size_t i = 0; i < n; ++i) ctx.setOutput(i, x);
    return;
  }
  size_t a = size_t(ctx.normalizeAxis(ctx.node().attrInt("axis", 0), int64_t(x.shape.rank())));
  auto split = optionalInts(ctx, 1);
  std::vector<Dim> sizes(n, Dim::unknown());
  if (ctx.hasInput(1) && !split) {
    // sizes unknown
  } else if (x.shape[a].isStatic()) {
    sizes = dimsOf(splitSizes(x.shape[a].value, split, n));
  } else if (split) {
    ctx.check(split->size() == n, "split has " + std::to_string(split->size()) + " sizes for " +
                                      std::to_string(n) + " outputs");
    sizes = dimsOf(*split);
  }
  for (size_t i = 0; i < n; ++i) {
    Shape s = x.shape;
    s[a] = sizes[i];
    ctx.setOutput(i, x.dtype, s);
  }
}

void inferSlice(InferContext& ctx) {
  const TensorType& x = ctx.inputType(0);
  auto starts = ctx.inputStaticInts(1), ends = ctx.inputStaticInts(2);
  auto axes = optionalInts(ctx, 3), steps = optionalInts(ctx, 4);
  if (!x.shape.hasRank()) return ctx.setOutput(0, x);
  bool known = starts && ends && (!ctx.hasInput(3) || axes) && (!ctx.hasInput(4) || steps);
  if (!known) {
    // Without axes every axis may be sliced; with constant axes only those.
    Shape out = x.shape;
    for (size_t d = 0; d < out.rank(); ++d)
      if (!axes || std::find(axes->begin(), axes->end(), int64_t(d)) != axes->end() ||
          std::find(axes->begin(), axes->end(), int64_t(d) - int64_t(out.rank())) != axes->end())
        out[d] = Dim::unknown();
    return ctx.setOutput(0, x.dtype, out);
  }
  Shape out = x.shape;
  std::vector<SliceAxis> ranges = sliceAxes(int64_t(out.rank()), *starts, *ends, axes, steps);
  for (SliceAxis s : ranges) {
    Dim& d = out[size_t(s.axis)];
    if (d.isStatic()) d = Dim(clampSlice(d.value, s));
    else if (!(s.start == 0 && s.step == 1 && s.end >= (int64_t(1) << 62))) d = Dim::unknown();  // x[0:] keeps a symbol
  }
  ctx.setOutput(0, x.dtype, out);

  auto c = ctx.inputContents(0);
  if (c && x.shape.rank() == 1 && ranges.size() == 1) {
    SliceAxis s = ranges[0];
    int64_t count = clampSlice(int64_t(c->size()), s);
    std::vector<Dim> r;
    for (int64_t k = 0; k < count; ++k) r.push_back((*c)[size_t(s.start + k * s.step)]);
    setContents(ctx, 0, r);
  }
}

void inferGather(InferContext& ctx) {
  const TensorType& x = ctx.inputType(0);
  const Shape& idx = ctx.inputShape(1);
  if (!x.shape.hasRank() || !idx.hasRank()) return ctx.setOutput(0, x.dtype, Shape::unknownRank());
  int64_t r = int64_t(x.shape.rank());
  ctx.check(r >= 1, "data must have rank >= 1");
  size_t a = size_t(ctx.normalizeAxis(ctx.node().attrInt("axis", 0), r));
  std::vector<Dim> dims(x.shape.dims().begin(), x.shape.dims().begin() + long(a));
  dims.insert(dims.end(), idx.dims().begin(), idx.dims().end());
  dims.insert(dims.end(), x.shape.dims().begin() + long(a) + 1, x.shape.dims().end());
  ctx.setOutput(0, x.dtype, Shape(dims));

  auto c = ctx.inputContents(0);
  auto indices = ctx.inputStaticInts(1);
  if (c && indices && r == 1 && idx.rank() <= 1) {
    std::vector<Dim> out;
    int64_t n = int64_t(c->size());
    for (int64_t i : *indices) {
      ctx.check(i >= -n && i < n, "index " + std::to_string(i) + " out of range for extent " + std::to_string(n));
      out.push_back((*c)[size_t(i < 0 ? i + n : i)]);
    }
    setContents(ctx, 0, out);
  }
}

void inferGatherElements(InferContext& ctx) {
  const TensorType& x = ctx.inputType(0);
  const Shape& idx = ctx.inputShape(1);
  if (x.shape.hasRank() && idx.hasRank()) {
    ctx.check(x.shape.rank() == idx.rank(), "indices rank differs from data rank");
    ctx.normalizeAxis(ctx.node().attrInt("axis", 0), int64_t(x.shape.rank()));
  }
  ctx.setOutput(0, x.dtype, idx);
}

void inferGatherND(InferContext& ctx) {
  const TensorType& x = ctx.inputType(0);
  const Shape& idx = ctx.inputShape(1);
  int64_t b = ctx.node().attrInt("batch_dims", 0);
  if (!x.shape.hasRank() || !idx.hasRank() || idx.rank() == 0 || !idx[idx.rank() - 1].isStatic())
    return ctx.setOutput(0, x.dtype, Shape::unknownRank());
  int64_t m = idx[idx.rank() - 1].value;
  ctx.check(b >= 0 && b < int64_t(idx.rank()) && b + m <= int64_t(x.shape.rank()),
            "indices " + idx.str() + " do not fit data " + x.shape.str() + " with batch_dims " + std::to_string(b));
  std::vector<Dim> dims(idx.dims().begin(), idx.dims().end() - 1);
  dims.insert(dims.end(), x.shape.dims().begin() + long(b + m), x.shape.dims().end());
  ctx.setOutput(0, x.dtype, Shape(dims));
}

void inferSameAsInput(InferContext& ctx) { ctx.setOutput(0, ctx.inputType(0)); }

void inferExpand(InferContext& ctx) {
  const TensorType& x = ctx.inputType(0);
  Shape target = shapeFromInput(ctx, 1);
  Shape out;
  if (!x.shape.hasRank() && target.hasRank()) out = unknownDims(target.rank());
  else if (!target.hasRank()) out = Shape::unknownRank();
  else ctx.check(broadcastShapes(x.shape, target, out), "cannot expand " + x.shape.str() + " to " + target.str());
  ctx.setOutput(0, x.dtype, out);
}

void inferTile(InferContext& ctx) {
  const TensorType& x = ctx.inputType(0);
  if (!x.shape.hasRank()) return ctx.setOutput(0, x);
  auto reps = ctx.inputContents(1);
  if (!reps) return ctx.setOutput(0, x.dtype, unknownDims(x.shape.rank()));
  ctx.check(reps->size() == x.shape.rank(), "repeats has " + std::to_string(reps->size()) +
                                                 " entries for rank " + std::to_string(x.shape.rank()));
  std::vector<Dim> dims;
  for (size_t i = 0; i < reps->size(); ++i) {
    const Dim& rep = (*reps)[i];
    ctx.check(!isIntDim(rep) || rep.value >= 0, "repeats must be non-negative");
    dims.push_back(mulDims(x.shape[i], isIntDim(rep) ? Dim(rep.value) : rep));
  }
  ctx.setOutput(0, x.dtype, Shape(dims));
}

void inferPad(InferContext& ctx) {
  const TensorType& x = ctx.inputType(0);
  std::string mode = ctx.node().attrString("mode", "constant");
  ctx.check(mode == "constant" || mode == "reflect" || mode == "edge" || mode == "wrap", "unsupported mode '" + mode + "'");
  if (!x.shape.hasRank()) return ctx.setOutput(0, x);
  auto pads = ctx.inputStaticInts(1);
  auto axes = optionalInts(ctx, 3);
  if (!pads || (ctx.hasInput(3) && !axes)) return ctx.setOutput(0, x.dtype, unknownDims(x.shape.rank()));
  int64_t r = int64_t(x.shape.rank());
  std::vector<int64_t> all = padsForAllAxes(r, *pads, axes);
  std::vector<Dim> dims;
  for (int64_t i = 0; i < r; ++i) {
    Dim d = addDims(x.shape[size_t(i)], Dim(all[size_t(i)] + all[size_t(i + r)]));
    ctx.check(!d.isStatic() || d.value >= 0, "pads make axis " + std::to_string(i) + " negative");
    dims.push_back(d);
  }
  ctx.setOutput(0, x.dtype, Shape(dims));
}

void inferShape(InferContext& ctx) {
  const Shape& s = ctx.inputShape(0);
  if (!s.hasRank()) return ctx.setOutput(0, DType::I64, unknownDims(1));
  int64_t r = int64_t(s.rank());
  auto clampIndex = [r](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + r : i, 0, r); };
  int64_t start = clampIndex(ctx.node().attrInt("start", 0));
  int64_t end = clampIndex(ctx.node().attrInt("end", r));
  std::vector<Dim> c;
  for (int64_t i = start; i < end; ++i) c.push_back(s[size_t(i)]);
  ctx.setOutput(0, DType::I64, Shape{Dim(int64_t(c.size()))});
  setContents(ctx, 0, c);
}

void inferSize(InferContext& ctx) {
  ctx.setOutput(0, DType::I64, Shape{});
  const Shape& s = ctx.inputShape(0);
  if (!s.hasRank()) return;
  Dim n(1);
  for (const Dim& d : s.dims()) n = mulDims(n, d);
  if (!n.isUnknown()) setContents(ctx, 0, {n});
}

void inferConstant(InferContext& ctx) {
  Tensor t = constantValue(ctx.node());
  ctx.setOutput(0, t.type());
  if (isInteger(t.dtype()) && t.rank() <= 1 && size_t(t.numel()) <= kMaxContents)
    setContents(ctx, 0, dimsOf(t.toInt64Vector()));
}

void inferConstantOfShape(InferContext& ctx) {
  DType dt = DType::F32;
  if (ctx.node().hasAttr("value")) {
    const Tensor& v = ctx.node().attrTensor("value");
    ctx.check(v.numel() == 1, "value must have exactly one element");
    dt = v.dtype();
  }
  Shape out = shapeFromInput(ctx, 0);
  ctx.setOutput(0, dt, out);
  if (isInteger(dt) && out.isStatic() && out.rank() <= 1 && *out.numel() <= int64_t(kMaxContents)) {
    int64_t v = ctx.node().hasAttr("value") ? ctx.node().attrTensor("value").elementAsInt(0) : 0;
    setContents(ctx, 0, std::vector<Dim>(size_t(*out.numel()), Dim(v)));
  }
}

void inferRange(InferContext& ctx) {
  DType dt = ctx.inputDType(0);
  for (size_t i = 1; i < 3; ++i) ctx.check(ctx.inputDType(i) == dt, "start, limit and delta must share a dtype");
  auto start = ctx.inputStaticInts(0), limit = ctx.inputStaticInts(1), delta = ctx.inputStaticInts(2);
  const Tensor *t0 = ctx.inputConstant(0), *t1 = ctx.inputConstant(1), *t2 = ctx.inputConstant(2);
  Dim n = Dim::unknown();
  if (start && limit && delta && start->size() == 1 && limit->size() == 1 && delta->size() == 1) {
    n = rangeCount(double((*start)[0]), double((*limit)[0]), double((*delta)[0]));
    std::vector<Dim> v;
    for (int64_t k = 0; k < n.value; ++k) v.push_back((*start)[0] + k * (*delta)[0]);
    setContents(ctx, 0, v);
  } else if (t0 && t1 && t2) {
    n = rangeCount(t0->elementAsDouble(0), t1->elementAsDouble(0), t2->elementAsDouble(0));
  }
  ctx.setOutput(0, dt, Shape{n});
}

void inferResize(InferContext& ctx) {
  const TensorType& x = ctx.inputType(0);
  const Node& node = ctx.node();
  std::string mode = node.attrString("mode", "nearest");
  ctx.check(mode == "nearest" || mode == "linear" || mode == "cubic", "unsupported mode '" + mode + "'");
  std::string ctm = node.attrString("coordinate_transformation_mode", "half_pixel");
  for (const char* m : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize",
                        "tf_half_pixel_for_nn", "half_pixel_symmetric"})
    if (ctm == m) ctm.clear();
  ctx.check(ctm.empty(), "unsupported coordinate_transformation_mode '" +
                             node.attrString("coordinate_transformation_mode", "") + "'");
  std::string nm = node.attrString("nearest_mode", "round_prefer_floor");
  ctx.check(nm == "round_prefer_floor" || nm == "round_prefer_ceil" || nm == "floor" || nm == "ceil",
            "unsupported nearest_mode '" + nm + "'");
  if (!x.shape.hasRank()) return ctx.setOutput(0, x);
  size_t r = x.shape.rank();
  // An empty scales (or sizes) tensor, as older exporters write, counts as absent.
  auto given = [&](size_t i) { return ctx.hasInput(i) && ctx.inputShape(i) != Shape{Dim(0)}; };
  const Tensor* scales = ctx.inputConstant(2);
  bool scalesGiven = given(2), sizesGiven = given(3);
  // Both given is the IR's form of Resize-18's keep_aspect_ratio_policy: sizes are the output's extents, scales
  // the coordinate mapping.
  ctx.check(scalesGiven || sizesGiven, "scales or sizes must be given");
  Shape out = unknownDims(r);
  if (sizesGiven) {
    Shape s = shapeFromInput(ctx, 3);
    if (s.hasRank()) {
      ctx.check(s.rank() == r, "sizes has " + std::to_string(s.rank()) + " entries for rank " + std::to_string(r));
      out = s;
    }
  } else if (scales) {
    ctx.check(size_t(scales->numel()) == r,
              "scales has " + std::to_string(scales->numel()) + " entries for rank " + std::to_string(r));
    for (size_t i = 0; i < r; ++i) {
      float sc = float(scales->elementAsDouble(int64_t(i)));
      if (x.shape[i].isStatic()) out[i] = resizeDim(x.shape[i].value, sc);
      else if (sc == 1.0f) out[i] = x.shape[i];
    }
  }
  ctx.setOutput(0, x.dtype, out);
}

int64_t resizeFlops(const Node& node) {
  std::string mode = node.attrString("mode", "nearest");
  int64_t perAxis = mode == "cubic" ? 4 : mode == "linear" ? 2 : 1;
  const Shape& in = node.input(0)->shape();
  const Shape& out = node.output(0)->shape();
  int64_t taps = 1;
  for (size_t i = 0; i < out.rank(); ++i)
    if (in[i] != out[i]) taps *= perAxis;
  return *out.numel() * taps;
}

void inferDepthToSpace(InferContext& ctx, bool toSpace) {
  const TensorType& x = ctx.inputType(0);
  int64_t b = ctx.node().attrInt("blocksize", 0);
  ctx.check(b > 0, "blocksize must be positive");
  if (toSpace) {
    std::string mode = ctx.node().attrString("mode", "DCR");
    ctx.check(mode == "DCR" || mode == "CRD", "unsupported mode '" + mode + "'");
  }
  if (!x.shape.hasRank()) return ctx.setOutput(0, x.dtype, unknownDims(4));
  ctx.check(x.shape.rank() == 4, "input must be 4-D, got " + x.shape.str());
  auto divide = [&](const Dim& d, int64_t k) {
    if (!d.isStatic()) return Dim::unknown();
    ctx.check(d.value % k == 0, "extent " + d.str() + " is not divisible by " + std::to_string(k));
    return Dim(d.value / k);
  };
  const Shape& s = x.shape;
  Shape out = toSpace ? Shape{s[0], divide(s[1], b * b), mulDims(s[2], b), mulDims(s[3], b)}
                      : Shape{s[0], mulDims(s[1], b * b), divide(s[2], b), divide(s[3], b)};
  ctx.setOutput(0, x.dtype, out);
}

// GridSample: X [N, C, D1..Dr] sampled at grid [N, O1..Or, r] (coordinates in [-1, 1], the last spatial dim's
// first) -> [N, C, O1..Or].
void inferGridSample(InferContext& ctx) {
  gridSampleParams(ctx.node());  // the attributes' errors at import
  const TensorType& x = ctx.inputType(0);
  const TensorType& grid = ctx.inputType(1);
  ctx.check(isFloat(x.dtype) && isFloat(grid.dtype), "X and grid must be float tensors");
  if (!x.shape.hasRank() || !grid.shape.hasRank()) return ctx.setOutput(0, x.dtype, Shape::unknownRank());
  const size_t rank = x.shape.rank();
  ctx.check(rank >= 3, "X must have a batch, a channel and spatial dims, got " + x.shape.str());
  ctx.check(grid.shape.rank() == rank, "grid " + grid.shape.str() + " does not match X " + x.shape.str());
  const Dim& coordinates = grid.shape[rank - 1];
  ctx.check(!coordinates.isStatic() || coordinates.value == int64_t(rank) - 2,
            "grid's last dim must be " + std::to_string(rank - 2) + " (one coordinate a spatial dim), got " +
                coordinates.str());
  ctx.check(!x.shape[0].isStatic() || !grid.shape[0].isStatic() || x.shape[0].value == grid.shape[0].value,
            "X and grid have different batches");
  std::vector<Dim> out = {x.shape[0], x.shape[1]};
  for (size_t d = 1; d + 1 < rank; ++d) out.push_back(grid.shape[d]);
  ctx.setOutput(0, x.dtype, Shape(out));
}

int64_t gridSampleFlops(const Node& node) {
  const Shape& y = node.output(0)->shape();
  const int64_t spatial = int64_t(y.rank()) - 2;
  const auto taps = gridSampleParams(node).mode == GridSampleParams::Mode::Cubic ? 4 : 2;
  return y.isStatic() ? 2 * *y.numel() * int64_t(std::pow(taps, spatial)) : 0;
}

void inferOneHot(InferContext& ctx) {
  const Shape& idx = ctx.inputShape(0);
  DType dt = ctx.inputDType(2);
  if (!idx.hasRank()) return ctx.setOutput(0, dt, Shape::unknownRank());
  int64_t r = int64_t(idx.rank()) + 1;
  int64_t axis = ctx.node().attrInt("axis", -1);
  ctx.check(axis >= -r && axis < r, "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(r));
  if (axis < 0) axis += r;
  Dim depth = Dim::unknown();
  if (const Tensor* d = ctx.inputConstant(1)) depth = Dim(int64_t(d->elementAsDouble(0)));
  std::vector<Dim> dims = idx.dims();
  dims.insert(dims.begin() + long(axis), depth);
  ctx.setOutput(0, dt, Shape(dims));
}

void inferEyeLike(InferContext& ctx) {
  const TensorType& x = ctx.inputType(0);
  ctx.check(!x.shape.hasRank() || x.shape.rank() == 2, "input must be 2-D, got " + x.shape.str());
  DType dt = ctx.node().hasAttr("dtype") ? dtypeFromOnnxCode(ctx.node().attrInt("dtype", 1), ctx.node().describe()) : x.dtype;
  ctx.setOutput(0, dt, x.shape.hasRank() ? x.shape : unknownDims(2));
}

void inferNonZero(InferContext& ctx) {
  const Shape& s = ctx.inputShape(0);
  ctx.setOutput(0, DType::I64, Shape{s.hasRank() ? Dim(int64_t(s.rank())) : Dim::unknown(), Dim::unknown()});
}

void inferTopK(InferContext& ctx) {
  const TensorType& x = ctx.inputType(0);
  Shape out = x.shape;
  if (out.hasRank()) {
    size_t a = size_t(ctx.normalizeAxis(ctx.node().attrInt("axis", -1), int64_t(out.rank())));
    auto k = ctx.inputStaticInts(1);
    out[a] = k && k->size() == 1 ? Dim((*k)[0]) : Dim::unknown();
    ctx.check(!out[a].isStatic() || !x.shape[a].isStatic() || out[a].value <= x.shape[a].value,
              "k=" + out[a].str() + " exceeds extent " + x.shape[a].str());
  }
  ctx.setOutput(0, x.dtype, out);
  ctx.setOutput(1, DType::I64, out);
}

void inferCompress(InferContext& ctx) {
  const TensorType& x = ctx.inputType(0);
  if (!ctx.node().hasAttr("axis")) return ctx.setOutput(0, x.dtype, unknownDims(1));
  if (!x.shape.hasRank()) return ctx.setOutput(0, x);
  Shape out = x.shape;
  out[size_t(ctx.normalizeAxis(ctx.node().attrInt("axis", 0), int64_t(out.rank())))] = Dim::unknown();
  ctx.setOutput(0, x.dtype, out);
}

void inferScatter(InferContext& ctx) {
  std::string red = ctx.node().attrString("reduction", "none");
  ctx.check(red == "none" || red == "add" || red == "mul" || red == "max" || red == "min",
            "unsupported reduction '" + red + "'");
  ctx.check(ctx.inputDType(2) == ctx.inputDType(0), "updates dtype differs from data dtype");
  ctx.setOutput(0, ctx.inputType(0));
}

}  // namespace

void registerTensorOps(OpRegistry& r) {
  using K = AttrKind;
  add(r, OpSchema("Reshape").trait(OpTrait::View).inputs(2, 2).attr("allowzero", K::Int), inferReshape);
  add(r, OpSchema("Flatten").trait(OpTrait::View).attr("axis", K::Int), inferFlatten);
  add(r, OpSchema("Transpose").trait(OpTrait::SelectsElements).attr("perm", K::Ints), inferTranspose);
  add(r, OpSchema("Squeeze").trait(OpTrait::View).inputs(1, 2), inferSqueeze);
  add(r, OpSchema("Unsqueeze").trait(OpTrait::View).inputs(2, 2), inferUnsqueeze);
  add(r, OpSchema("Concat").trait(OpTrait::SelectsElements).inputs(1, -1).attr("axis", K::Int, true), inferConcat);
  add(r, OpSchema("Split").trait(OpTrait::SelectsElements).inputs(1, 2).outputs(1, -1).attr("axis", K::Int), inferSplit);
  add(r, OpSchema("Slice").trait(OpTrait::SelectsElements).inputs(3, 5), inferSlice);
  add(r, OpSchema("Gather").trait(OpTrait::SelectsElements).inputs(2, 2).attr("axis", K::Int), inferGather);
  add(r, OpSchema("GatherElements").trait(OpTrait::SelectsElements).inputs(2, 2).attr("axis", K::Int), inferGatherElements);
  add(r, OpSchema("GatherND").trait(OpTrait::SelectsElements).inputs(2, 2).attr("batch_dims", K::Int), inferGatherND);
  add(r, OpSchema("ScatterElements").inputs(3, 3).attr("axis", K::Int).attr("reduction", K::String), inferScatter);
  add(r, OpSchema("ScatterND").inputs(3, 3).attr("reduction", K::String), inferScatter);
  add(r, OpSchema("Expand").trait(OpTrait::SelectsElements).inputs(2, 2), inferExpand);
  add(r, OpSchema("Tile").trait(OpTrait::SelectsElements).inputs(2, 2), inferTile);
  add(r, OpSchema("Pad").trait(OpTrait::SelectsElements).inputs(2, 4).attr("mode", K::String), inferPad);
  add(r, OpSchema("Shape").attr("start", K::Int).attr("end", K::Int), inferShape);
  add(r, OpSchema("Size"), inferSize);
  add(r,
      OpSchema("Constant")
          .inputs(0, 0)
          .attr("value", K::Tensor)
          .attr("value_float", K::Float)
          .attr("value_floats", K::Floats)
          .attr("value_int", K::Int)
          .attr("value_ints", K::Ints)
          .attr("value_string", K::String)
          .attr("value_strings", K::Strings)
          .attr("sparse_value", K::Tensor),
      inferConstant);
  add(r, OpSchema("ConstantOfShape").attr("value", K::Tensor), inferConstantOfShape);
  add(r, OpSchema("Range").inputs(3, 3), inferRange);
  add(r,
      OpSchema("Resize")
          .inputs(1, 4)
          .attr("mode", K::String)
          .attr("coordinate_transformation_mode", K::String)
          .attr("nearest_mode", K::String)
          .attr("cubic_coeff_a", K::Float)
          .attr("exclude_outside", K::Int)
          .attr("extrapolation_value", K::Float)
          .attr("antialias", K::Int)
          .flopsWith(resizeFlops),
      inferResize);
  add(r, OpSchema("DepthToSpace").trait(OpTrait::SelectsElements).attr("blocksize", K::Int, true).attr("mode", K::String),
      [](InferContext& ctx) { inferDepthToSpace(ctx, true); });
  add(r, OpSchema("SpaceToDepth").trait(OpTrait::SelectsElements).attr("blocksize", K::Int, true),
      [](InferContext& ctx) { inferDepthToSpace(ctx, false); });
  add(r, OpSchema("GridSample").inputs(2, 2).attr("align_corners", K::Int).attr("mode", K::String)
             .attr("padding_mode", K::String).flopsWith(gridSampleFlops),
      inferGridSample);
  add(r, OpSchema("Trilu").trait(OpTrait::SelectsElements).inputs(1, 2).attr("upper", K::Int), inferSameAsInput);
  add(r, OpSchema("CumSum").inputs(2, 2).attr("exclusive", K::Int).attr("reverse", K::Int), inferSameAsInput);
  add(r, OpSchema("OneHot").inputs(3, 3).attr("axis", K::Int), inferOneHot);
  add(r, OpSchema("EyeLike").attr("dtype", K::Int).attr("k", K::Int), inferEyeLike);
  add(r, OpSchema("NonZero"), inferNonZero);
  add(r, OpSchema("TopK").trait(OpTrait::SelectsElements).inputs(2, 2).outputs(2, 2).attr("axis", K::Int).attr("largest", K::Int).attr("sorted", K::Int),
      inferTopK);
  add(r, OpSchema("Compress").trait(OpTrait::SelectsElements).inputs(2, 2).attr("axis", K::Int), inferCompress);
}

}  // namespace friction
