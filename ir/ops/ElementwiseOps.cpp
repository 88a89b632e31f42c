// Schemas of the elementwise op family (ONNX opset 17): broadcasting binary
// and variadic ops, comparisons and logic, unary math and activations, Clip,
// Where, Cast/CastLike, Identity and Dropout.
#include <algorithm>

#include "ir/OpRegistry.h"
#include "ir/ops/ShapeHelpers.h"

namespace friction {
namespace {

// Sets of dtypes as bitmasks, for ONNX type constraints.
using TypeSet = uint32_t;
constexpr TypeSet bit(DType d) { return TypeSet(1) << unsigned(d); }
constexpr TypeSet kFloats = bit(DType::F32) | bit(DType::F64) | bit(DType::F16) | bit(DType::BF16);
constexpr TypeSet kSigned = bit(DType::I8) | bit(DType::I16) | bit(DType::I32) | bit(DType::I64);
constexpr TypeSet kUnsigned = bit(DType::U8) | bit(DType::U16) | bit(DType::U32) | bit(DType::U64);
constexpr TypeSet kNumbers = kFloats | kSigned | kUnsigned;
constexpr TypeSet kBool = bit(DType::Bool);
constexpr TypeSet kAll = kNumbers | kBool;

std::string name(DType d) { return std::string(dtypeName(d)); }

void requireTypes(const InferContext& ctx, size_t i, TypeSet allowed) {
  DType d = ctx.inputDType(i);
  if (allowed & bit(d)) return;
  std::string list;
  for (int k = 0; k <= int(DType::Bool); ++k)
    if (allowed & bit(DType(k))) list += (list.empty() ? "" : ", ") + name(DType(k));
  ctx.fail("input " + std::to_string(i) + " has dtype " + name(d) + ", expected one of " + list);
}

void requireSame(const InferContext& ctx, size_t i, size_t j) {
  DType a = ctx.inputDType(i), b = ctx.inputDType(j);
  ctx.check(a == b, "input dtypes " + name(a) + " and " + name(b) + " differ");
}

// Broadcast of all present inputs in [first, last).
Shape broadcastInputs(const InferContext& ctx, size_t first, size_t last) {
  Shape out = ctx.inputShape(first);
  for (size_t i = first + 1; i < last; ++i) {
    if (!ctx.hasInput(i)) continue;
    Shape next;
    if (!broadcastShapes(out, ctx.inputShape(i), next))
      ctx.fail("cannot broadcast " + out.str() + " with " + ctx.inputShape(i).str());
    out = std::move(next);
  }
  return out;
}

int64_t outputElements(const Node& n) { return n.output(0)->shape().numel().value_or(0); }

// --- Shape tracking through integer arithmetic on known contents ----------

// A known element: a static integer (possibly negative, e.g. Reshape's -1).
bool isConst(const Dim& d) { return d.symbol.empty(); }
bool isConst(const Dim& d, int64_t v) { return isConst(d) && d.value == v; }

Dim addDims(const Dim& a, const Dim& b) {
  if (isConst(a) && isConst(b)) return Dim(a.value + b.value);
  if (isConst(b, 0)) return a;
  if (isConst(a, 0)) return b;
  return Dim::unknown();
}
Dim subDims(const Dim& a, const Dim& b) {
  if (isConst(a) && isConst(b)) return Dim(a.value - b.value);
  if (isConst(b, 0)) return a;
  return Dim::unknown();
}
Dim mulContents(const Dim& a, const Dim& b) {
  if (isConst(a) && isConst(b)) return Dim(a.value * b.value);
  if (isConst(b, 1)) return a;
  if (isConst(a, 1)) return b;
  return Dim::unknown();
}
Dim divDims(const Dim& a, const Dim& b) {  // ONNX integer Div truncates, like C
  if (isConst(a) && isConst(b) && b.value != 0) return Dim(a.value / b.value);
  if (isConst(b, 1)) return a;
  return Dim::unknown();
}

// Integer Mod with fmod=0: the result takes the divisor's sign (Python-style).
Dim modDims(const Dim& a, const Dim& b) {
  if (!isConst(a) || !isConst(b) || b.value == 0) return Dim::unknown();
  int64_t r = a.value % b.value;
  if (r != 0 && ((r < 0) != (b.value < 0))) r += b.value;
  return Dim(r);
}
// Comparisons give 0/1. A symbolic dim is a size, so never negative: this
// resolves PyTorch's `Where(Equal(shape, -1), 1, shape)` in expand exports.
Dim equalDims(const Dim& a, const Dim& b) {
  if (isConst(a) && isConst(b)) return Dim(a.value == b.value ? 1 : 0);
  if (!a.isUnknown() && a == b) return Dim(1);
  if ((isConst(a) && a.value < 0) || (isConst(b) && b.value < 0)) return Dim(0);
  return Dim::unknown();
}
Dim lessDims(const Dim& a, const Dim& b) {
  return isConst(a) && isConst(b) ? Dim(a.value < b.value ? 1 : 0) : Dim::unknown();
}
Dim greaterDims(const Dim& a, const Dim& b) { return lessDims(b, a); }

using DimOp = Dim (*)(const Dim&, const Dim&);

// Sets the output contents of an integer binary op when both inputs' contents
// are known; a length-1 side broadcasts against the other.
void trackContents(InferContext& ctx, DimOp op) {
  if (!isInteger(ctx.inputDType(0)) && ctx.inputDType(0) != DType::Bool) return;
  auto a = ctx.inputContents(0), b = ctx.inputContents(1);
  if (!a || !b) return;
  size_t n = std::max(a->size(), b->size());
  if ((a->size() != n && a->size() != 1) || (b->size() != n && b->size() != 1)) return;
  std::vector<Dim> out;
  for (size_t i = 0; i < n; ++i) out.push_back(op((*a)[a->size() == 1 ? 0 : i], (*b)[b->size() == 1 ? 0 : i]));
  ctx.setOutputContents(0, std::move(out));
}

// Where on known contents: elements with a known 0/1 condition are selected.
void trackWhereContents(InferContext& ctx) {
  if (!isInteger(ctx.inputDType(1))) return;
  auto c = ctx.inputContents(0), x = ctx.inputContents(1), y = ctx.inputContents(2);
  if (!c || !x || !y) return;
  size_t n = std::max({c->size(), x->size(), y->size()});
  auto at = [n](const std::vector<Dim>& v, size_t i) -> const Dim* {
    return v.size() == n ? &v[i] : v.size() == 1 ? &v[0] : nullptr;
  };
  std::vector<Dim> out;
  for (size_t i = 0; i < n; ++i) {
    const Dim *ci = at(*c, i), *xi = at(*x, i), *yi = at(*y, i);
    if (!ci || !xi || !yi) return;
    out.push_back(isConst(*ci) ? (ci->value ? *xi : *yi) : Dim::unknown());
  }
  ctx.setOutputContents(0, std::move(out));
}

// --- Schemas ----------------------------------------------------------------

struct AttrDecl {
  const char* name;
  AttrKind kind;
  bool required = false;
};

// Ops whose inputs all share one dtype from `types` and broadcast together;
// the output has the broadcast shape and either the input dtype or bool.
struct EwSpec {
  const char* name;
  int minInputs, maxInputs;
  TypeSet types;
  bool boolOutput;
  std::vector<AttrDecl> attrs;
  OpTraits traits = {};  // beyond Elementwise, which every one of them has
  DimOp contents = nullptr;
  void (*extraCheck)(InferContext&) = nullptr;  // op-specific rules, after the common ones
};

OpSchema broadcastingOp(const EwSpec& s) {
  OpSchema schema(s.name);
  schema.inputs(s.minInputs, s.maxInputs);
  schema.traits = s.traits;
  schema.trait(OpTrait::Elementwise);
  for (const AttrDecl& a : s.attrs) schema.attr(a.name, a.kind, a.required);
  TypeSet types = s.types;
  bool boolOutput = s.boolOutput;
  DimOp contents = s.contents;
  auto extraCheck = s.extraCheck;
  schema
      .inferWith([=](InferContext& ctx) {
        for (size_t i = 0; i < ctx.numInputs(); ++i) {
          requireTypes(ctx, i, types);
          requireSame(ctx, 0, i);
        }
        ctx.setOutput(0, boolOutput ? DType::Bool : ctx.inputDType(0), broadcastInputs(ctx, 0, ctx.numInputs()));
        if (contents) trackContents(ctx, contents);
        if (extraCheck) extraCheck(ctx);
      })
      .flopsWith(outputElements);
  return schema;
}

void checkBitShift(InferContext& ctx) {
  std::string dir = ctx.node().attrString("direction", "");
  ctx.check(dir == "LEFT" || dir == "RIGHT", "direction must be LEFT or RIGHT, got '" + dir + "'");
}

void checkPRelu(InferContext& ctx) {
  // The slope broadcasts to X, never X to the slope.
  const Shape& x = ctx.inputShape(0);
  const Shape& out = ctx.node().output(0)->shape();
  bool ok = !x.hasRank() || !out.hasRank() || out.rank() == x.rank();
  for (size_t i = 0; ok && x.hasRank() && out.hasRank() && i < x.rank(); ++i)
    ok = !x[i].isStatic() || out[i] == x[i];
  ctx.check(ok, "slope " + ctx.inputShape(1).str() + " does not broadcast to X " + x.str());
  ctx.setOutput(0, ctx.inputType(0));
}

// Output = input 0's shape with `outType`; integer contents pass through.
void passThrough(InferContext& ctx, DType outType) {
  ctx.setOutput(0, outType, ctx.inputShape(0));
  auto c = ctx.inputContents(0);
  if (c && isInteger(ctx.inputDType(0)) && isInteger(outType)) ctx.setOutputContents(0, std::move(*c));
}

}  // namespace

void registerElementwiseOps(OpRegistry& r) {
  constexpr AttrKind F = AttrKind::Float, I = AttrKind::Int;
  using T = OpTrait;
  const std::vector<EwSpec> specs = {
      // Binary arithmetic.
      {"Add", 2, 2, kNumbers, false, {}, {T::Commutative}, addDims},
      {"Sub", 2, 2, kNumbers, false, {}, {}, subDims},
      {"Mul", 2, 2, kNumbers, false, {}, {T::Commutative}, mulContents},
      {"Div", 2, 2, kNumbers, false, {}, {}, divDims},
      {"Mod", 2, 2, kNumbers, false, {{"fmod", I}}, {}, modDims},
      {"BitShift", 2, 2, kSigned | kUnsigned, false, {{"direction", AttrKind::String, true}}, {}, nullptr, checkBitShift},
      // Logic and comparisons.
      {"And", 2, 2, kBool, true, {}, {T::Commutative}},
      {"Or", 2, 2, kBool, true, {}, {T::Commutative}},
      {"Xor", 2, 2, kBool, true, {}, {T::Commutative}},
      {"Equal", 2, 2, kAll, true, {}, {T::Commutative}, equalDims},
      {"Less", 2, 2, kNumbers, true, {}, {}, lessDims},
      {"Greater", 2, 2, kNumbers, true, {}, {}, greaterDims},
      {"LessOrEqual", 2, 2, kNumbers, true, {}},
      {"GreaterOrEqual", 2, 2, kNumbers, true, {}},
      // Variadic.
      {"Max", 1, -1, kNumbers, false, {}, {T::Commutative, T::SelectsElements}},
      {"Min", 1, -1, kNumbers, false, {}, {T::Commutative, T::SelectsElements}},
      {"Sum", 1, -1, kFloats, false, {}, {T::Commutative}},
      {"Mean", 1, -1, kFloats, false, {}, {T::Commutative}},
      {"PRelu", 2, 2, kNumbers, false, {}, {}, nullptr, checkPRelu},
      // Unary.
      {"Sqrt", 1, 1, kFloats, false, {}},
      {"Reciprocal", 1, 1, kFloats, false, {}},
      {"Exp", 1, 1, kFloats, false, {}},
      {"Log", 1, 1, kFloats, false, {}},
      {"Neg", 1, 1, kFloats | kSigned, false, {}, {T::SelectsElements}},
      {"Abs", 1, 1, kNumbers, false, {}, {T::SelectsElements}},
      {"Erf", 1, 1, kNumbers, false, {}},
      {"Tanh", 1, 1, kFloats, false, {}, {T::Activation}},
      {"Sigmoid", 1, 1, kFloats, false, {}, {T::Activation}},
      {"Relu", 1, 1, kFloats | kSigned, false, {}, {T::Activation, T::SelectsElements}},
      {"LeakyRelu", 1, 1, kFloats, false, {{"alpha", F}}, {T::Activation}},
      {"HardSigmoid", 1, 1, kFloats, false, {{"alpha", F}, {"beta", F}}, {T::Activation}},
      {"HardSwish", 1, 1, kFloats, false, {}, {T::Activation}},
      {"Elu", 1, 1, kFloats, false, {{"alpha", F}}, {T::Activation}},
      {"Selu", 1, 1, kFloats, false, {{"alpha", F}, {"gamma", F}}, {T::Activation}},
      {"Celu", 1, 1, kFloats, false, {{"alpha", F}}, {T::Activation}},
      {"Softplus", 1, 1, kFloats, false, {}, {T::Activation}},
      {"Softsign", 1, 1, kFloats, false, {}, {T::Activation}},
      {"ThresholdedRelu", 1, 1, kFloats, false, {{"alpha", F}}, {T::Activation}},
      {"Shrink", 1, 1, kNumbers, false, {{"bias", F}, {"lambd", F}}},
      {"Floor", 1, 1, kFloats, false, {}},
      {"Ceil", 1, 1, kFloats, false, {}},
      {"Round", 1, 1, kFloats, false, {}},
      {"Sign", 1, 1, kNumbers, false, {}},
      {"Sin", 1, 1, kFloats, false, {}},
      {"Cos", 1, 1, kFloats, false, {}},
      {"Tan", 1, 1, kFloats, false, {}},
      {"Asin", 1, 1, kFloats, false, {}},
      {"Acos", 1, 1, kFloats, false, {}},
      {"Atan", 1, 1, kFloats, false, {}},
      {"Sinh", 1, 1, kFloats, false, {}},
      {"Cosh", 1, 1, kFloats, false, {}},
      {"Asinh", 1, 1, kFloats, false, {}},
      {"Acosh", 1, 1, kFloats, false, {}},
      {"Atanh", 1, 1, kFloats, false, {}},
      {"Not", 1, 1, kBool, true, {}},
      {"IsNaN", 1, 1, kFloats, true, {}},
      {"IsInf", 1, 1, kFloats, true, {{"detect_negative", I}, {"detect_positive", I}}},
  };
  for (const EwSpec& s : specs) r.add(broadcastingOp(s));

  // Pow: base and exponent may differ in type; the output has the base's.
  r.add(OpSchema("Pow")
            .inputs(2, 2)
            .trait(OpTrait::Elementwise)
            .inferWith([](InferContext& ctx) {
              requireTypes(ctx, 0, kNumbers);
              requireTypes(ctx, 1, kNumbers);
              ctx.setOutput(0, ctx.inputDType(0), broadcastInputs(ctx, 0, 2));
            })
            .flopsWith(outputElements));

  // Clip(x, min?, max?): bounds are scalars of x's type.
  r.add(OpSchema("Clip")
            .inputs(1, 3)
            .trait(OpTrait::Elementwise)
            .trait(OpTrait::Activation)
            .trait(OpTrait::SelectsElements)
            .inferWith([](InferContext& ctx) {
              requireTypes(ctx, 0, kNumbers);
              for (size_t i = 1; i < ctx.numInputs(); ++i) {
                if (!ctx.hasInput(i)) continue;
                requireSame(ctx, 0, i);
                auto n = ctx.inputShape(i).numel();
                ctx.check(!n || *n == 1, "bound " + std::to_string(i) + " must be a scalar, got shape " +
                                             ctx.inputShape(i).str());
              }
              ctx.setOutput(0, ctx.inputType(0));
            })
            .flopsWith(outputElements));

  r.add(OpSchema("Where")
            .inputs(3, 3)
            .trait(OpTrait::Elementwise)
            .trait(OpTrait::SelectsElements)
            .inferWith([](InferContext& ctx) {
              requireTypes(ctx, 0, kBool);
              requireSame(ctx, 1, 2);
              ctx.setOutput(0, ctx.inputDType(1), broadcastInputs(ctx, 0, 3));
              trackWhereContents(ctx);
            })
            .flopsWith(outputElements));

  r.add(OpSchema("Identity").trait(OpTrait::Elementwise).trait(OpTrait::View).inferWith([](InferContext& ctx) { passThrough(ctx, ctx.inputDType(0)); }));

  r.add(OpSchema("Cast").trait(OpTrait::Elementwise).attr("to", AttrKind::Int, true).inferWith([](InferContext& ctx) {
    passThrough(ctx, dtypeFromOnnxCode(ctx.node().attrInt("to", 0), ctx.node().describe() + ": Cast 'to'"));
  }));

  r.add(OpSchema("CastLike").inputs(2, 2).trait(OpTrait::Elementwise).inferWith([](InferContext& ctx) {
    passThrough(ctx, ctx.inputDType(1));
  }));

  // ReducePrecision (friction's, after XLA's op of that name): each element rounded to the nearest value of the
  // narrower float type `to` (f16 or bf16, ties to even) and kept in its own type, i.e. Cast to `to` and back in
  // one op. widen-half ends each f16 op computed on f32 values with it, as the op's f16 result would round.
  r.add(OpSchema("ReducePrecision").trait(OpTrait::Elementwise).attr("to", AttrKind::Int, true).inferWith([](InferContext& ctx) {
    requireTypes(ctx, 0, kFloats);
    const DType to = dtypeFromOnnxCode(ctx.node().attrInt("to", 0), ctx.node().describe() + ": ReducePrecision 'to'");
    ctx.check(isHalf(to), "'to' must be float16 or bfloat16, got " + std::string(dtypeName(to)));
    passThrough(ctx, ctx.inputDType(0));
  }));

  // Dropout(data, ratio?, training_mode?) -> (output, mask?). Inference only:
  // the output is the input and the mask all true.
  r.add(OpSchema("Dropout")
            .inputs(1, 3)
            .outputs(1, 2)
            .attr("seed", AttrKind::Int)
            .inferWith([](InferContext& ctx) {
              requireTypes(ctx, 0, kFloats);
              if (ctx.hasInput(1)) requireTypes(ctx, 1, kFloats);
              if (ctx.hasInput(2)) {
                requireTypes(ctx, 2, kBool);
                // Training with a nonzero ratio is random; only reject it when it is known.
                const Tensor* training = ctx.inputConstant(2);
                const Tensor* ratio = ctx.inputConstant(1);
                bool train = training && training->numel() == 1 && training->elementAsInt(0) != 0;
                bool zeroRatio = ratio && ratio->numel() == 1 && ratio->elementAsDouble(0) == 0;
                ctx.check(!train || zeroRatio, "training_mode=true with a nonzero ratio is not supported");
              }
              ctx.setOutput(0, ctx.inputType(0));
              ctx.setOutput(1, DType::Bool, ctx.inputShape(0));
            }));
}

}  // namespace friction
