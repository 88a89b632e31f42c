// The scalar formulas of the halide backend's elementwise ops (HalideKernels.h's
// scalarFormula), matching the interpreter's and the MLIR builder's
// (codegen/mlir/KernelBuilder.cpp's Payload), NaN handling included.
#include <unordered_map>

#include "codegen/halide/HalideKernels.h"
#include "ir/Error.h"

namespace friction::codegen::halide {
namespace {

using Exprs = std::vector<HL::Expr>;

HL::Expr f32(double v) { return HL::Expr(float(v)); }

// Scalar formulas of the elementwise ops: one emit function per op of codegen/ScalarOps.def.
class Payload {
 public:
  static HL::Expr emit(const Node& n, const Exprs& in) {
    using EmitFn = HL::Expr (*)(const Node&, const Exprs&);
    static const std::unordered_map<std::string, EmitFn> table = {
#define FRICTION_SCALAR_OP(op, minInputs, maxInputs) {#op, &Payload::emit##op},
#include "codegen/ScalarOps.def"
#undef FRICTION_SCALAR_OP
    };
    auto it = table.find(n.op());
    FRICTION_CHECK(it != table.end(), "halide: no scalar formula for " + n.op());
    return it->second(n, in);
  }
  // max and min as the interpreter's std::max/std::min: a NaN in x propagates, one in y does not.
  static HL::Expr maximum(HL::Expr x, HL::Expr y) { return HL::select(x < y, y, x); }
  static HL::Expr minimum(HL::Expr x, HL::Expr y) { return HL::select(y < x, y, x); }

 private:
  static HL::Expr nanFrom(HL::Expr y, HL::Expr r) { return HL::select(HL::is_nan(y), y, r); }
  static HL::Expr clamp01(HL::Expr x) { return minimum(maximum(x, f32(0)), f32(1)); }
  // e^x - 1 without the cancellation near 0 (Elu, Selu and Celu match std::expm1 there).
  static HL::Expr expm1(HL::Expr x) {
    return HL::select(HL::abs(x) < f32(1e-2), x * (f32(1) + x * (f32(0.5) + x * (f32(1.0 / 6) + x * f32(1.0 / 24)))),
                      HL::exp(x) - f32(1));
  }
  static HL::Expr attr(const Node& n, const char* name, float def) { return f32(n.attrFloat(name, def)); }
  // The variadic ops: inputs combined left to right.
  template <typename F>
  static HL::Expr fold(const Exprs& in, F combine) {
    HL::Expr r = in[0];
    for (size_t i = 1; i < in.size(); ++i) r = combine(r, in[i]);
    return r;
  }

#define FRICTION_SCALAR_OP(op, minInputs, maxInputs) static HL::Expr emit##op(const Node& n, const Exprs& in);
#include "codegen/ScalarOps.def"
#undef FRICTION_SCALAR_OP
};

HL::Expr Payload::emitAdd(const Node&, const Exprs& in) { return in[0] + in[1]; }
HL::Expr Payload::emitSub(const Node&, const Exprs& in) { return in[0] - in[1]; }
HL::Expr Payload::emitMul(const Node&, const Exprs& in) { return in[0] * in[1]; }
HL::Expr Payload::emitDiv(const Node&, const Exprs& in) { return in[0] / in[1]; }
HL::Expr Payload::emitPow(const Node&, const Exprs& in) { return HL::pow(in[0], in[1]); }
HL::Expr Payload::emitMax(const Node&, const Exprs& in) {
  return fold(in, [](HL::Expr r, HL::Expr x) { return nanFrom(x, maximum(r, x)); });
}
HL::Expr Payload::emitMin(const Node&, const Exprs& in) {
  return fold(in, [](HL::Expr r, HL::Expr x) { return nanFrom(x, minimum(r, x)); });
}
HL::Expr Payload::emitSum(const Node&, const Exprs& in) {
  return fold(in, [](HL::Expr r, HL::Expr x) { return r + x; });
}
HL::Expr Payload::emitMean(const Node& n, const Exprs& in) {
  return in.size() > 1 ? emitSum(n, in) / f32(double(in.size())) : in[0];
}
HL::Expr Payload::emitNeg(const Node&, const Exprs& in) { return -in[0]; }
HL::Expr Payload::emitExp(const Node&, const Exprs& in) { return HL::exp(in[0]); }
HL::Expr Payload::emitLog(const Node&, const Exprs& in) { return HL::log(in[0]); }
HL::Expr Payload::emitSqrt(const Node&, const Exprs& in) { return HL::sqrt(in[0]); }
HL::Expr Payload::emitAbs(const Node&, const Exprs& in) { return HL::abs(in[0]); }
HL::Expr Payload::emitFloor(const Node&, const Exprs& in) { return HL::floor(in[0]); }
HL::Expr Payload::emitCeil(const Node&, const Exprs& in) { return HL::ceil(in[0]); }
HL::Expr Payload::emitReciprocal(const Node&, const Exprs& in) { return f32(1) / in[0]; }
HL::Expr Payload::emitErf(const Node&, const Exprs& in) { return HL::erf(in[0]); }
HL::Expr Payload::emitRound(const Node&, const Exprs& in) { return HL::round(in[0]); }  // ties to even
HL::Expr Payload::emitReducePrecision(const Node& n, const Exprs& in) {  // Halide's casts round to nearest even
  const bool f16 = dtypeFromOnnxCode(n.attrInt("to", 0), n.describe()) == DType::F16;
  return HL::cast(HL::Float(32), HL::cast(f16 ? HL::Float(16) : HL::BFloat(16), in[0]));
}
HL::Expr Payload::emitSign(const Node&, const Exprs& in) {  // 0 and NaN map to themselves
  return HL::select(in[0] > f32(0), f32(1), in[0] < f32(0), f32(-1), in[0]);
}
HL::Expr Payload::emitSin(const Node&, const Exprs& in) { return HL::sin(in[0]); }
HL::Expr Payload::emitCos(const Node&, const Exprs& in) { return HL::cos(in[0]); }
HL::Expr Payload::emitTan(const Node&, const Exprs& in) { return HL::tan(in[0]); }
HL::Expr Payload::emitAsin(const Node&, const Exprs& in) { return HL::asin(in[0]); }
HL::Expr Payload::emitAcos(const Node&, const Exprs& in) { return HL::acos(in[0]); }
HL::Expr Payload::emitAtan(const Node&, const Exprs& in) { return HL::atan(in[0]); }
HL::Expr Payload::emitSinh(const Node&, const Exprs& in) { return HL::sinh(in[0]); }
HL::Expr Payload::emitCosh(const Node&, const Exprs& in) { return HL::cosh(in[0]); }
HL::Expr Payload::emitAsinh(const Node&, const Exprs& in) { return HL::asinh(in[0]); }
HL::Expr Payload::emitAcosh(const Node&, const Exprs& in) { return HL::acosh(in[0]); }
HL::Expr Payload::emitAtanh(const Node&, const Exprs& in) { return HL::atanh(in[0]); }
HL::Expr Payload::emitIdentity(const Node&, const Exprs& in) { return in[0]; }
HL::Expr Payload::emitRelu(const Node&, const Exprs& in) { return maximum(in[0], f32(0)); }
HL::Expr Payload::emitTanh(const Node&, const Exprs& in) {
  // Halide's tanh is a scalar call of libm's tanhf per element (10% of an LSTM's run); from its exp, which
  // vectorizes and is exact to the last bit: (1 - e) / (1 + e) with e = e^-2|x|, within 1e-6 relative, and
  // near 0, where 1 - e cancels, the odd series to x^9 (its next term is below 1e-15 relative at 1/16).
  const HL::Expr& x = in[0];
  if (x.type() != HL::Float(32)) return HL::tanh(x);
  const HL::Expr a = HL::abs(x), e = HL::exp(f32(-2) * a), x2 = x * x;
  const HL::Expr series =
      x * (f32(1) + x2 * (f32(-1.0 / 3) + x2 * (f32(2.0 / 15) + x2 * (f32(-17.0 / 315) + x2 * f32(62.0 / 2835)))));
  const HL::Expr t = (f32(1) - e) / (f32(1) + e);
  return nanFrom(x, HL::select(a < f32(0.0625), series, HL::select(x < f32(0), -t, t)));  // Halide's exp loses NaN
}
HL::Expr Payload::emitLeakyRelu(const Node& n, const Exprs& in) {
  return HL::select(in[0] < f32(0), attr(n, "alpha", 0.01f) * in[0], in[0]);
}
HL::Expr Payload::emitPRelu(const Node&, const Exprs& in) { return HL::select(in[0] < f32(0), in[1] * in[0], in[0]); }
HL::Expr Payload::emitSigmoid(const Node&, const Exprs& in) {
  // x >= 0 ? 1/(1+e^-x) : e^x/(1+e^x), as e = e^-|x|: no overflow.
  HL::Expr e = HL::exp(-HL::abs(in[0]));
  return HL::select(in[0] >= f32(0), f32(1), e) / (f32(1) + e);
}
HL::Expr Payload::emitHardSigmoid(const Node& n, const Exprs& in) {
  return clamp01(attr(n, "alpha", 0.2f) * in[0] + attr(n, "beta", 0.5f));
}
HL::Expr Payload::emitHardSwish(const Node&, const Exprs& in) { return in[0] * clamp01(in[0] / f32(6) + f32(0.5)); }
HL::Expr Payload::emitElu(const Node& n, const Exprs& in) {
  return HL::select(in[0] < f32(0), attr(n, "alpha", 1.0f) * expm1(in[0]), in[0]);
}
HL::Expr Payload::emitSelu(const Node& n, const Exprs& in) {
  HL::Expr negative = attr(n, "alpha", 1.67326319217681884765625f) * expm1(in[0]);
  return attr(n, "gamma", 1.05070102214813232421875f) * HL::select(in[0] > f32(0), in[0], negative);
}
HL::Expr Payload::emitCelu(const Node& n, const Exprs& in) {
  HL::Expr alpha = attr(n, "alpha", 1.0f);
  return HL::select(in[0] > f32(0), in[0], alpha * expm1(in[0] / alpha));
}
HL::Expr Payload::emitSoftplus(const Node&, const Exprs& in) {
  // x + log1p(e^-x) for x > 0, log1p(e^x) otherwise: no overflow.
  HL::Expr x = in[0];
  return HL::select(x > f32(0), x + HL::log(f32(1) + HL::exp(-x)), HL::log(f32(1) + HL::exp(x)));
}
HL::Expr Payload::emitSoftsign(const Node&, const Exprs& in) { return in[0] / (f32(1) + HL::abs(in[0])); }
HL::Expr Payload::emitThresholdedRelu(const Node& n, const Exprs& in) {
  return HL::select(in[0] > attr(n, "alpha", 1.0f), in[0], f32(0));
}
HL::Expr Payload::emitShrink(const Node& n, const Exprs& in) {
  HL::Expr bias = attr(n, "bias", 0.0f), lambd = attr(n, "lambd", 0.5f);
  return HL::select(in[0] < -lambd, in[0] + bias, in[0] > lambd, in[0] - bias, f32(0));
}
HL::Expr Payload::emitClip(const Node&, const Exprs& in) {
  HL::Expr r = in[0];
  if (in.size() > 1 && in[1].defined()) r = maximum(r, in[1]);
  if (in.size() > 2 && in[2].defined()) r = minimum(r, in[2]);
  return r;
}

// The mask ops' formulas (codegen/MaskOps.def), on truth values where an operand is a bool.
struct MaskPayload {
#define FRICTION_MASK_OP(op, inputs) static HL::Expr emit##op(const Exprs& in);
#include "codegen/MaskOps.def"
#undef FRICTION_MASK_OP
};
HL::Expr MaskPayload::emitEqual(const Exprs& in) { return in[0] == in[1]; }
HL::Expr MaskPayload::emitLess(const Exprs& in) { return in[0] < in[1]; }
HL::Expr MaskPayload::emitLessOrEqual(const Exprs& in) { return in[0] <= in[1]; }
HL::Expr MaskPayload::emitGreater(const Exprs& in) { return in[0] > in[1]; }
HL::Expr MaskPayload::emitGreaterOrEqual(const Exprs& in) { return in[0] >= in[1]; }
HL::Expr MaskPayload::emitAnd(const Exprs& in) { return in[0] && in[1]; }
HL::Expr MaskPayload::emitOr(const Exprs& in) { return in[0] || in[1]; }
HL::Expr MaskPayload::emitXor(const Exprs& in) { return in[0] != in[1]; }
HL::Expr MaskPayload::emitNot(const Exprs& in) { return !in[0]; }
HL::Expr MaskPayload::emitWhere(const Exprs& in) { return HL::select(in[0], in[1], in[2]); }

}  // namespace

HL::Expr scalarFormula(const Node& n, const std::vector<HL::Expr>& in) { return Payload::emit(n, in); }

HL::Expr maskFormula(const std::string& op, const std::vector<HL::Expr>& in) {
  using EmitFn = HL::Expr (*)(const Exprs&);
  static const std::unordered_map<std::string, EmitFn> table = {
#define FRICTION_MASK_OP(op, inputs) {#op, &MaskPayload::emit##op},
#include "codegen/MaskOps.def"
#undef FRICTION_MASK_OP
  };
  auto it = table.find(op);
  FRICTION_CHECK(it != table.end(), "halide: no mask formula for " + op);
  return it->second(in);
}

}  // namespace friction::codegen::halide
