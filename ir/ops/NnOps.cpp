// Schemas of the NN ops: convolutions, matrix products, normalizations,
// softmax family, pools, reductions, arg-reductions, Einsum and LRN.
#include <algorithm>
#include <map>
#include <optional>

#include "ir/Error.h"
#include "ir/OpRegistry.h"
#include "ir/ops/NnShapes.h"
#include "ir/ops/ShapeHelpers.h"

namespace friction {
namespace {

using K = AttrKind;

int64_t numelOf(const Value* v) { return v->shape().numel().value_or(0); }
int64_t outNumel(const Node& n) { return numelOf(n.output(0)); }
int64_t inNumel(const Node& n) { return numelOf(n.input(0)); }
// FLOPs proportional to the input size (reductions, norms, softmax).
FlopsFn perInputElement(int64_t k) {
  return [k](const Node& n) { return k * inNumel(n); };
}

void requireFloat(InferContext& ctx, size_t i) {
  ctx.check(isFloat(ctx.inputDType(i)), "input " + std::to_string(i) + " must be floating point, got " +
                                            std::string(dtypeName(ctx.inputDType(i))));
}

void requireSameDType(InferContext& ctx, size_t i, size_t j) {
  if (ctx.hasInput(i) && ctx.hasInput(j))
    ctx.check(ctx.inputDType(i) == ctx.inputDType(j),
              "inputs " + std::to_string(i) + " and " + std::to_string(j) + " have different dtypes (" +
                  std::string(dtypeName(ctx.inputDType(i))) + " vs " + std::string(dtypeName(ctx.inputDType(j))) + ")");
}

// Checks that an optional 1-D per-channel input has `channels` elements.
void checkChannelVector(InferContext& ctx, size_t i, const Dim& channels, const char* what) {
  if (!ctx.hasInput(i)) return;
  const Shape& s = ctx.inputShape(i);
  if (!s.hasRank()) return;
  ctx.check(s.rank() == 1, std::string(what) + " must be 1-D, got " + s.str());
  if (s[0].isStatic() && channels.isStatic())
    ctx.check(s[0].value == channels.value, std::string(what) + " has " + s[0].str() + " elements, expected " +
                                                channels.str());
}

// Input shape with a known rank of at least `minRank`, or nullptr (output of unknown rank set).
const Shape* rankedInput(InferContext& ctx, size_t i, size_t minRank, DType outType) {
  const Shape& s = ctx.inputShape(i);
  if (!s.hasRank()) {
    ctx.setOutput(0, outType, Shape::unknownRank());
    return nullptr;
  }
  ctx.check(s.rank() >= minRank, "input " + std::to_string(i) + " has rank " + std::to_string(s.rank()) +
                                     ", expected at least " + std::to_string(minRank));
  return &s;
}

// Spatial output dims of a sliding window over x's dims 2.., kernel from the
// weight (may be empty: kernel_shape attribute). Dims that are not static
// stay unknown; a placeholder extent resolves the others' pads independently.
std::vector<Dim> windowDims(InferContext& ctx, const Shape& x, const std::vector<int64_t>& kernel) {
  size_t n = x.rank() - 2;
  std::vector<int64_t> in(n);
  for (size_t i = 0; i < n; ++i) in[i] = x[i + 2].isStatic() ? x[i + 2].value : (int64_t(1) << 20);
  Window w = resolveWindow(ctx.node(), in, kernel);
  std::vector<int64_t> out = w.outputSpatial(in);
  std::vector<Dim> dims;
  for (size_t i = 0; i < n; ++i) dims.push_back(x[i + 2].isStatic() ? Dim(out[i]) : Dim::unknown());
  return dims;
}

// Spatial dims of a weight when all static, else nullopt.
std::optional<std::vector<int64_t>> weightKernel(const Shape& w) {
  std::vector<int64_t> k;
  for (size_t i = 2; i < w.rank(); ++i) {
    if (!w[i].isStatic()) return std::nullopt;
    k.push_back(w[i].value);
  }
  return k;
}

int64_t prodFrom(const Shape& s, size_t from) {
  int64_t p = 1;
  for (size_t i = from; i < s.rank(); ++i) p *= s[i].value;
  return p;
}

// ---- Conv / ConvTranspose ----

// Checks shared by Conv and ConvTranspose: float input and weight of one dtype,
// input rank >= 3, weight of the same rank, group >= 1. Null when the input's
// rank is unknown (the output is then typed by rankedInput).
struct ConvOperands {
  const Shape& x;
  const Shape& w;
  DType dtype;
  int64_t group;
};

std::optional<ConvOperands> convOperands(InferContext& ctx) {
  requireFloat(ctx, 0);
  requireSameDType(ctx, 0, 1);
  DType dt = ctx.inputDType(0);
  const Shape* xp = rankedInput(ctx, 0, 3, dt);
  if (!xp) return std::nullopt;
  const Shape& w = ctx.inputShape(1);
  ctx.check(w.hasRank() && w.rank() == xp->rank(),
            "weight " + w.str() + " must have the same rank as the input " + xp->str());
  int64_t group = ctx.node().attrInt("group", 1);
  ctx.check(group >= 1, "group must be >= 1");
  return ConvOperands{*xp, w, dt, group};
}

void inferConv(InferContext& ctx) {
  auto ops = convOperands(ctx);
  if (!ops) return;
  const Shape &x = ops->x, &w = ops->w;
  DType dt = ops->dtype;
  int64_t group = ops->group;
  if (x[1].isStatic() && w[1].isStatic())
    ctx.check(x[1].value == w[1].value * group, "input has " + x[1].str() + " channels but weight " + w.str() +
                                                    " with group " + std::to_string(group) + " expects " +
                                                    std::to_string(w[1].value * group));
  if (w[0].isStatic())
    ctx.check(w[0].value % group == 0, "output channels " + w[0].str() + " not divisible by group");
  checkChannelVector(ctx, 2, w[0], "bias");
  std::vector<Dim> dims = {x[0], w[0]};
  auto k = weightKernel(w);
  if (k || ctx.node().hasAttr("kernel_shape")) {
    auto sp = windowDims(ctx, x, k.value_or(std::vector<int64_t>{}));
    dims.insert(dims.end(), sp.begin(), sp.end());
  } else {
    dims.resize(x.rank(), Dim::unknown());
  }
  ctx.setOutput(0, dt, Shape(dims));
}

int64_t convFlops(const Node& n) {
  const Shape& w = n.input(1)->shape();
  int64_t y = outNumel(n);
  return 2 * y * w[1].value * prodFrom(w, 2) + (n.input(2) ? y : 0);
}

void inferConvTranspose(InferContext& ctx) {
  auto ops = convOperands(ctx);
  if (!ops) return;
  const Shape &x = ops->x, &w = ops->w;
  DType dt = ops->dtype;
  int64_t group = ops->group;
  if (x[1].isStatic() && w[0].isStatic())
    ctx.check(x[1].value == w[0].value, "input has " + x[1].str() + " channels but weight " + w.str() +
                                            " expects " + w[0].str());
  Dim cout = mulDims(w[1], Dim(group));
  checkChannelVector(ctx, 2, cout, "bias");
  std::vector<Dim> dims = {x[0], cout};
  auto k = weightKernel(w);
  size_t n = x.rank() - 2;
  if (k) {
    std::vector<int64_t> in(n);
    for (size_t i = 0; i < n; ++i) in[i] = x[i + 2].isStatic() ? x[i + 2].value : 1;
    TransposeGeometry g = resolveConvTranspose(ctx.node(), in, *k);
    bool explicitShape = ctx.node().hasAttr("output_shape");
    for (size_t i = 0; i < n; ++i)
      dims.push_back(x[i + 2].isStatic() || explicitShape ? Dim(g.outSpatial[i]) : Dim::unknown());
  } else {
    dims.resize(x.rank(), Dim::unknown());
  }
  ctx.setOutput(0, dt, Shape(dims));
}

int64_t convTransposeFlops(const Node& n) {
  const Shape& w = n.input(1)->shape();
  return 2 * inNumel(n) * w[1].value * prodFrom(w, 2) + (n.input(2) ? outNumel(n) : 0);
}

// ---- MatMul / Gemm ----

void inferMatMul(InferContext& ctx) {
  requireSameDType(ctx, 0, 1);
  DType dt = ctx.inputDType(0);
  Shape a = ctx.inputShape(0), b = ctx.inputShape(1);
  if (!a.hasRank() || !b.hasRank()) return ctx.setOutput(0, dt, Shape::unknownRank());
  ctx.check(a.rank() >= 1 && b.rank() >= 1, "operands must have rank >= 1");
  bool vecA = a.rank() == 1, vecB = b.rank() == 1;
  if (vecA) a = Shape({Dim(1), a[0]});
  if (vecB) b = Shape({b[0], Dim(1)});
  const Dim& ka = a[a.rank() - 1];
  const Dim& kb = b[b.rank() - 2];
  if (ka.isStatic() && kb.isStatic())
    ctx.check(ka.value == kb.value, "inner dimensions differ: " + ctx.inputShape(0).str() + " x " +
                                        ctx.inputShape(1).str());
  Shape batch;
  std::vector<Dim> ba(a.dims().begin(), a.dims().end() - 2), bb(b.dims().begin(), b.dims().end() - 2);
  ctx.check(broadcastShapes(Shape(ba), Shape(bb), batch),
            "batch dimensions do not broadcast: " + ctx.inputShape(0).str() + " x " + ctx.inputShape(1).str());
  std::vector<Dim> dims = batch.dims();
  if (!vecA) dims.push_back(a[a.rank() - 2]);
  if (!vecB) dims.push_back(b[b.rank() - 1]);
  ctx.setOutput(0, dt, Shape(dims));
}

int64_t matMulFlops(const Node& n) {
  const Shape& a = n.input(0)->shape();
  return 2 * outNumel(n) * a[a.rank() - 1].value;
}

void inferGemm(InferContext& ctx) {
  requireSameDType(ctx, 0, 1);
  requireSameDType(ctx, 0, 2);
  DType dt = ctx.inputDType(0);
  const Shape& a = ctx.inputShape(0);
  const Shape& b = ctx.inputShape(1);
  if (!a.hasRank() || !b.hasRank()) return ctx.setOutput(0, dt, Shape({Dim::unknown(), Dim::unknown()}));
  ctx.check(a.rank() == 2 && b.rank() == 2, "A and B must be 2-D, got " + a.str() + " and " + b.str());
  bool ta = ctx.node().attrInt("transA", 0) != 0, tb = ctx.node().attrInt("transB", 0) != 0;
  Dim m = a[ta ? 1 : 0], ka = a[ta ? 0 : 1], kb = b[tb ? 1 : 0], n = b[tb ? 0 : 1];
  if (ka.isStatic() && kb.isStatic())
    ctx.check(ka.value == kb.value, "K mismatch: A " + a.str() + (ta ? " (transposed)" : "") + ", B " + b.str() +
                                        (tb ? " (transposed)" : ""));
  Shape y({m, n});
  if (ctx.hasInput(2)) {
    Shape bc;
    ctx.check(broadcastShapes(ctx.inputShape(2), y, bc) && (!bc.hasRank() || bc.rank() == 2),
              "C " + ctx.inputShape(2).str() + " does not broadcast to " + y.str());
  }
  ctx.setOutput(0, dt, y);
}

int64_t gemmFlops(const Node& n) {
  const Shape& a = n.input(0)->shape();
  int64_t k = a[n.attrInt("transA", 0) ? 0 : 1].value;
  return 2 * outNumel(n) * k + (n.input(2) ? outNumel(n) : 0);
}

// ---- Normalizations ----


void inferBatchNorm(InferContext& ctx) {
  requireFloat(ctx, 0);
  bool training = ctx.node().attrInt("training_mode", 0) != 0;
  ctx.check(training || ctx.numOutputs() == 1, "running mean/var outputs exist only with training_mode=1");
  const Shape* x = rankedInput(ctx, 0, 2, ctx.inputDType(0));
  if (!x) return;
  for (size_t i = 1; i < 5; ++i) checkChannelVector(ctx, i, (*x)[1], "scale/B/mean/var");
  ctx.setOutput(0, ctx.inputType(0));
  for (size_t i = 1; i < 3; ++i) ctx.setOutput(i, ctx.inputDType(3), Shape({(*x)[1]}));
}

void inferLayerNorm(InferContext& ctx) {
  requireFloat(ctx, 0);
  ctx.setOutput(0, ctx.inputType(0));
  const Shape& x = ctx.inputShape(0);
  if (!x.hasRank()) {
    for (size_t i = 1; i < 3; ++i) ctx.setOutput(i, ctx.inputDType(0), Shape::unknownRank());
    return;
  }
  int64_t axis = ctx.normalizeAxis(ctx.node().attrInt("axis", -1), int64_t(x.rank()));
  std::vector<Dim> stats = x.dims();
  for (size_t i = size_t(axis); i < stats.size(); ++i) stats[i] = Dim(1);
  for (size_t i = 1; i < 3; ++i) ctx.setOutput(i, ctx.inputDType(0), Shape(stats));
}

void inferInstanceNorm(InferContext& ctx) {
  requireFloat(ctx, 0);
  const Shape* x = rankedInput(ctx, 0, 3, ctx.inputDType(0));
  if (!x) return;
  checkChannelVector(ctx, 1, (*x)[1], "scale");
  checkChannelVector(ctx, 2, (*x)[1], "B");
  ctx.setOutput(0, ctx.inputType(0));
}

// Ops normalizing/selecting along one `axis` (default `def`): same type as the input.
InferFn alongAxis(int64_t def) {
  return [def](InferContext& ctx) {
    requireFloat(ctx, 0);
    const Shape& x = ctx.inputShape(0);
    if (x.hasRank()) ctx.normalizeAxis(ctx.node().attrInt("axis", def), int64_t(x.rank()));
    ctx.setOutput(0, ctx.inputType(0));
  };
}

// ---- Pools ----

void inferPool(InferContext& ctx) {
  const Shape* x = rankedInput(ctx, 0, 3, ctx.inputDType(0));
  if (!x) {
    ctx.setOutput(1, DType::I64, Shape::unknownRank());
    return;
  }
  ctx.check(ctx.node().hasAttr("kernel_shape"), "kernel_shape is required");
  std::vector<Dim> dims = {(*x)[0], (*x)[1]};
  auto sp = windowDims(ctx, *x, {});
  dims.insert(dims.end(), sp.begin(), sp.end());
  ctx.setOutput(0, ctx.inputDType(0), Shape(dims));
  ctx.setOutput(1, DType::I64, Shape(dims));  // MaxPool's optional Indices
}

int64_t poolFlops(const Node& n) {
  int64_t k = 1;
  for (int64_t d : n.attrInts("kernel_shape")) k *= d;
  return outNumel(n) * k;
}

void inferGlobalPool(InferContext& ctx) {
  const Shape* x = rankedInput(ctx, 0, 3, ctx.inputDType(0));
  if (!x) return;
  std::vector<Dim> dims(x->rank(), Dim(1));
  dims[0] = (*x)[0];
  dims[1] = (*x)[1];
  ctx.setOutput(0, ctx.inputDType(0), Shape(dims));
}

// ---- Reductions ----

// Axes of a Reduce* node: its 2nd input (ReduceSum since opset 13, the others since 18), else the `axes`
// attribute (the import writes constant axes as the attribute). nullopt when given as a non-constant input.
std::optional<std::vector<int64_t>> reduceAxes(InferContext& ctx) {
  if (!ctx.hasInput(1)) return ctx.node().attrInts("axes");
  return ctx.inputStaticInts(1);
}

void inferReduce(InferContext& ctx) {
  DType dt = ctx.inputDType(0);
  const Shape& x = ctx.inputShape(0);
  bool keep = ctx.node().attrInt("keepdims", 1) != 0;
  auto axes = reduceAxes(ctx);
  if (!x.hasRank() || !axes) {
    ctx.setOutput(0, dt, x.hasRank() && keep ? Shape(std::vector<Dim>(x.rank(), Dim::unknown())) : Shape::unknownRank());
    return;
  }
  int64_t rank = int64_t(x.rank());
  std::vector<bool> reduced(x.rank(), false);
  if (axes->empty()) {
    if (ctx.node().attrInt("noop_with_empty_axes", 0)) return ctx.setOutput(0, ctx.inputType(0));
    reduced.assign(x.rank(), true);
  }
  for (int64_t a : *axes) {
    size_t i = size_t(ctx.normalizeAxis(a, rank));
    ctx.check(!reduced[i] || axes->empty(), "axis " + std::to_string(a) + " repeated");
    reduced[i] = true;
  }
  std::vector<Dim> dims;
  for (size_t i = 0; i < x.rank(); ++i)
    if (!reduced[i]) dims.push_back(x[i]);
    else if (keep) dims.push_back(Dim(1));
  ctx.setOutput(0, dt, Shape(dims));
}

void inferArgReduce(InferContext& ctx) {
  const Shape& x = ctx.inputShape(0);
  if (!x.hasRank()) return ctx.setOutput(0, DType::I64, Shape::unknownRank());
  size_t axis = size_t(ctx.normalizeAxis(ctx.node().attrInt("axis", 0), int64_t(x.rank())));
  std::vector<Dim> dims = x.dims();
  if (ctx.node().attrInt("keepdims", 1)) dims[axis] = Dim(1);
  else dims.erase(dims.begin() + long(axis));
  ctx.setOutput(0, DType::I64, Shape(dims));
}

// ---- Einsum ----

void inferEinsum(InferContext& ctx) {
  std::vector<size_t> ranks;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    requireSameDType(ctx, 0, i);
    if (!ctx.inputShape(i).hasRank()) return ctx.setOutput(0, ctx.inputDType(0), Shape::unknownRank());
    ranks.push_back(ctx.inputShape(i).rank());
  }
  EinsumSpec spec;
  try {
    spec = parseEinsum(ctx.node().attrString("equation", ""), ranks);
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  // Unify each label's extent across inputs; 1 broadcasts for ellipsis dims.
  std::map<int, Dim> extent;
  for (size_t i = 0; i < ranks.size(); ++i) {
    for (size_t d = 0; d < ranks[i]; ++d) {
      int l = spec.inputs[i][d];
      const Dim& dim = ctx.inputShape(i)[d];
      auto [it, fresh] = extent.emplace(l, dim);
      if (fresh || it->second == dim || (dim.isStatic() && dim.value == 1 && l >= 52)) continue;
      if (it->second.isStatic() && it->second.value == 1 && l >= 52) it->second = dim;
      else if (it->second.isStatic() && dim.isStatic())
        ctx.fail("label extents differ: " + it->second.str() + " vs " + dim.str() + " in input " + std::to_string(i));
      else if (!it->second.isStatic()) it->second = dim;
    }
  }
  std::vector<Dim> dims;
  for (int l : spec.output) dims.push_back(extent.count(l) ? extent[l] : Dim(1));
  ctx.setOutput(0, ctx.inputDType(0), Shape(dims));
}

// Every combination of label values is one multiply-add per extra operand.
int64_t einsumFlops(const Node& n) {
  std::vector<size_t> ranks;
  for (Value* v : n.inputs()) ranks.push_back(v->shape().rank());
  EinsumSpec spec = parseEinsum(n.attrString("equation", ""), ranks);
  std::map<int, int64_t> extent;
  for (size_t i = 0; i < ranks.size(); ++i)
    for (size_t d = 0; d < ranks[i]; ++d)
      extent[spec.inputs[i][d]] = std::max(extent[spec.inputs[i][d]], n.input(i)->shape()[d].value);
  int64_t p = 1;
  for (auto& [l, e] : extent) p *= e;
  return 2 * p * int64_t(std::max<size_t>(1, ranks.size() - 1));
}

}  // namespace

void registerNnOps(OpRegistry& r) {
  auto windowAttrs = [](OpSchema s) {
    return s.attr("auto_pad", K::String).attr("kernel_shape", K::Ints).attr("pads", K::Ints).attr("strides", K::Ints)
        .attr("dilations", K::Ints);
  };
  r.add(windowAttrs(OpSchema("Conv")).trait(OpTrait::LayoutSensitive).inputs(2, 3).attr("group", K::Int).inferWith(inferConv).flopsWith(convFlops));
  r.add(windowAttrs(OpSchema("ConvTranspose"))
            .inputs(2, 3)
            .attr("group", K::Int)
            .attr("output_padding", K::Ints)
            .attr("output_shape", K::Ints)
            .inferWith(inferConvTranspose)
            .flopsWith(convTransposeFlops));
  r.add(OpSchema("MatMul").inputs(2, 2).inferWith(inferMatMul).flopsWith(matMulFlops));
  r.add(OpSchema("Gemm")
            .inputs(2, 3)
            .attr("alpha", K::Float)
            .attr("beta", K::Float)
            .attr("transA", K::Int)
            .attr("transB", K::Int)
            .inferWith(inferGemm)
            .flopsWith(gemmFlops));

  // Normalizations: BatchNorm is a per-channel scale+shift (2 FLOPs/element);
  // Layer/Instance norm compute mean, variance, normalize, scale, shift (~8).
  r.add(OpSchema("BatchNormalization")
            .trait(OpTrait::LayoutSensitive)
            .inputs(5, 5)
            .outputs(1, 3)
            .attr("epsilon", K::Float)
            .attr("momentum", K::Float)
            .attr("training_mode", K::Int)
            .inferWith(inferBatchNorm)
            .flopsWith(perInputElement(2)));
  r.add(OpSchema("LayerNormalization")
            .trait(OpTrait::Normalization)
            .inputs(2, 3)
            .outputs(1, 3)
            .attr("axis", K::Int)
            .attr("epsilon", K::Float)
            .attr("stash_type", K::Int)
            .inferWith(inferLayerNorm)
            .flopsWith(perInputElement(8)));
  r.add(OpSchema("InstanceNormalization")
            .inputs(3, 3)
            .attr("epsilon", K::Float)
            .inferWith(inferInstanceNorm)
            .flopsWith(perInputElement(8)));
  // |x|^p, sum, divide: 3 FLOPs/element.
  r.add(OpSchema("LpNormalization").attr("axis", K::Int).attr("p", K::Int).inferWith(alongAxis(-1)).flopsWith(perInputElement(3)));
  // Softmax: max, subtract, exp, sum, divide: 5 FLOPs/element; Hardmax: 1 compare.
  r.add(OpSchema("Softmax").trait(OpTrait::Normalization).attr("axis", K::Int).inferWith(alongAxis(-1)).flopsWith(perInputElement(5)));
  r.add(OpSchema("LogSoftmax").trait(OpTrait::Normalization).attr("axis", K::Int).inferWith(alongAxis(-1)).flopsWith(perInputElement(5)));
  r.add(OpSchema("Hardmax").attr("axis", K::Int).inferWith(alongAxis(-1)).flopsWith(perInputElement(1)));
  // LRN: a window of `size` squares summed, then pow and divide (~2*size+3 FLOPs/element).
  r.add(OpSchema("LRN")
            .attr("alpha", K::Float)
            .attr("beta", K::Float)
            .attr("bias", K::Float)
            .attr("size", K::Int, true)
            .inferWith([](InferContext& ctx) {
              requireFloat(ctx, 0);
              rankedInput(ctx, 0, 2, ctx.inputDType(0));
              ctx.check(ctx.node().attrInt("size", 1) >= 1, "size must be >= 1");
              ctx.setOutput(0, ctx.inputType(0));
            })
            .flopsWith([](const Node& n) { return (2 * n.attrInt("size", 1) + 3) * inNumel(n); }));

  // Pools: one FLOP per window element. Dilations are accepted on all pools
  // (the shared window driver supports them; newer opsets added them).
  r.add(windowAttrs(OpSchema("MaxPool"))
            .trait(OpTrait::LayoutSensitive)
            .trait(OpTrait::SelectsElements)
            .outputs(1, 2)
            .attr("ceil_mode", K::Int)
            .attr("storage_order", K::Int)
            .inferWith(inferPool)
            .flopsWith(poolFlops));
  r.add(windowAttrs(OpSchema("AveragePool"))
            .trait(OpTrait::LayoutSensitive)
            .attr("ceil_mode", K::Int)
            .attr("count_include_pad", K::Int)
            .inferWith([](InferContext& ctx) {
              requireFloat(ctx, 0);
              inferPool(ctx);
            })
            .flopsWith(poolFlops));
  r.add(windowAttrs(OpSchema("LpPool"))
            .attr("ceil_mode", K::Int)
            .attr("p", K::Int)
            .inferWith([](InferContext& ctx) {
              requireFloat(ctx, 0);
              inferPool(ctx);
            })
            .flopsWith(poolFlops));
  r.add(OpSchema("GlobalAveragePool").trait(OpTrait::LayoutSensitive).inferWith(inferGlobalPool).flopsWith(perInputElement(1)));
  r.add(OpSchema("GlobalMaxPool").trait(OpTrait::SelectsElements).inferWith(inferGlobalPool).flopsWith(perInputElement(1)));
  r.add(OpSchema("GlobalLpPool").attr("p", K::Int).inferWith(inferGlobalPool).flopsWith(perInputElement(2)));

  // Reductions: ~1 FLOP per input element (2 for the squaring/exp/abs variants).
  r.add(OpSchema("ReduceSum")
            .trait(OpTrait::Reduction)
            .inputs(1, 2)
            .attr("keepdims", K::Int)
            .attr("noop_with_empty_axes", K::Int)
            .inferWith(inferReduce)
            .flopsWith(perInputElement(1)));
  // The others: `axes` as an attribute (opset 17), or as input 1 when not a constant (opset 18).
  auto reduction = [](const char* op) {
    return OpSchema(op).trait(OpTrait::Reduction).inputs(1, 2).attr("axes", K::Ints).attr("keepdims", K::Int)
        .attr("noop_with_empty_axes", K::Int).inferWith(inferReduce);
  };
  for (const char* op : {"ReduceMean", "ReduceProd"}) r.add(reduction(op).flopsWith(perInputElement(1)));
  for (const char* op : {"ReduceMax", "ReduceMin"})
    r.add(reduction(op).trait(OpTrait::SelectsElements).flopsWith(perInputElement(1)));
  for (const char* op : {"ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"})
    r.add(reduction(op).flopsWith(perInputElement(2)));
  for (const char* op : {"ArgMax", "ArgMin"})
    r.add(OpSchema(op)
              .attr("axis", K::Int)
              .attr("keepdims", K::Int)
              .attr("select_last_index", K::Int)
              .inferWith(inferArgReduce)
              .flopsWith(perInputElement(1)));

  r.add(OpSchema("Einsum").inputs(1, -1).attr("equation", K::String, true).inferWith(inferEinsum).flopsWith(einsumFlops));
}

}  // namespace friction
