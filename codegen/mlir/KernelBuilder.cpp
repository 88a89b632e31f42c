// Builds kernels with MLIR's C++ builders: one func.func over tensors per
// kernel view (codegen/KernelAnalysis.h), destination-passing style, with
// `llvm.emit_c_interface` so it can be called through descriptors
// (codegen/KernelAbi.h). Elementwise work is ONE linalg.generic whose
// payload (class Payload) computes every node of the view per element;
// contractions are named linalg ops (or a contraction generic) followed by
// one generic applying the epilogue in place.
#include <unordered_map>

#include "codegen/KernelAnalysis.h"
#include "codegen/mlir/Context.h"
#include "ir/Error.h"
#include "ir/ops/NnShapes.h"
#include "runtime/ukernels/Conv.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace friction::codegen {
namespace {

mlir::RankedTensorType tensorType(mlir::OpBuilder& b, const std::vector<int64_t>& shape) {
  return mlir::RankedTensorType::get(shape, b.getF32Type());
}

// The broadcasting indexing map of a value of shape `s` in `domain`.
mlir::AffineMap broadcastMap(mlir::OpBuilder& b, const std::vector<int64_t>& s, const std::vector<int64_t>& domain) {
  std::vector<mlir::AffineExpr> exprs;
  size_t off = domain.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i)
    exprs.push_back(s[i] == domain[i + off] ? b.getAffineDimExpr(unsigned(i + off)) : b.getAffineConstantExpr(0));
  return mlir::AffineMap::get(unsigned(domain.size()), 0, exprs, b.getContext());
}

// Scalar code of the elementwise ops (f32) inside a linalg.generic body,
// matching the interpreter's formulas: one emit function per op of
// codegen/ScalarOps.def.
class Payload {
 public:
  Payload(mlir::OpBuilder& b, mlir::Location l) : b(b), l(l) {}
  std::unordered_map<const Value*, mlir::Value> scalars;

  mlir::Value f32(double v) { return b.create<mlir::arith::ConstantOp>(l, b.getF32FloatAttr(float(v))); }
  mlir::Value add(mlir::Value x, mlir::Value y) { return b.create<mlir::arith::AddFOp>(l, x, y); }
  mlir::Value mul(mlir::Value x, mlir::Value y) { return b.create<mlir::arith::MulFOp>(l, x, y); }
  mlir::Value div(mlir::Value x, mlir::Value y) { return b.create<mlir::arith::DivFOp>(l, x, y); }

  // Computes node `n` from the scalars of its inputs.
  void emit(const Node& n) {
    using EmitFn = mlir::Value (Payload::*)(const Node&);
    static const std::unordered_map<std::string, EmitFn> table = {
#define FRICTION_SCALAR_OP(op, minInputs, maxInputs) {#op, &Payload::emit##op},
#include "codegen/ScalarOps.def"
#undef FRICTION_SCALAR_OP
    };
    auto it = table.find(n.op());
    FRICTION_CHECK(it != table.end(), "codegen: no scalar lowering for " + n.op());
    scalars[n.output(0)] = (this->*it->second)(n);
  }

 private:
  mlir::Value in(const Node& n, size_t i) { return scalars.at(n.input(i)); }
  mlir::Value cmp(mlir::arith::CmpFPredicate p, mlir::Value x, mlir::Value y) {
    return b.create<mlir::arith::CmpFOp>(l, p, x, y);
  }
  mlir::Value select(mlir::Value c, mlir::Value x, mlir::Value y) { return b.create<mlir::arith::SelectOp>(l, c, x, y); }
  // max/min as compare + select, NaN in x propagating like the interpreter's
  // std::max(x, y): arith.maximumf lowers to llvm.maximum, which x86 expands
  // into a long sequence that LLVM 19 does not vectorize well.
  mlir::Value maximum(mlir::Value x, mlir::Value y) { return select(cmp(mlir::arith::CmpFPredicate::OLT, x, y), y, x); }
  mlir::Value minimum(mlir::Value x, mlir::Value y) { return select(cmp(mlir::arith::CmpFPredicate::OLT, y, x), y, x); }
  // y when y is NaN, else r (Max/Min propagate NaN from either side, like numpy).
  mlir::Value nanFrom(mlir::Value y, mlir::Value r) { return select(cmp(mlir::arith::CmpFPredicate::UNO, y, y), y, r); }
  mlir::Value clamp01(mlir::Value x) { return minimum(maximum(x, f32(0)), f32(1)); }
  mlir::Value expm1(mlir::Value x) { return b.create<mlir::math::ExpM1Op>(l, x); }
  float attr(const Node& n, const char* name, float def) { return n.attrFloat(name, def); }
  // The variadic ops: inputs combined left to right.
  template <typename F>
  mlir::Value fold(const Node& n, F combine) {
    mlir::Value r = in(n, 0);
    for (size_t i = 1; i < n.numInputs(); ++i) r = combine(r, in(n, i));
    return r;
  }

#define FRICTION_SCALAR_OP(op, minInputs, maxInputs) mlir::Value emit##op(const Node& n);
#include "codegen/ScalarOps.def"
#undef FRICTION_SCALAR_OP

  mlir::OpBuilder& b;
  mlir::Location l;
};

mlir::Value Payload::emitAdd(const Node& n) { return add(in(n, 0), in(n, 1)); }
mlir::Value Payload::emitSub(const Node& n) { return b.create<mlir::arith::SubFOp>(l, in(n, 0), in(n, 1)); }
mlir::Value Payload::emitMul(const Node& n) { return mul(in(n, 0), in(n, 1)); }
mlir::Value Payload::emitDiv(const Node& n) { return div(in(n, 0), in(n, 1)); }
mlir::Value Payload::emitPow(const Node& n) { return b.create<mlir::math::PowFOp>(l, in(n, 0), in(n, 1)); }
mlir::Value Payload::emitMax(const Node& n) {
  return fold(n, [&](mlir::Value r, mlir::Value x) { return nanFrom(x, maximum(r, x)); });
}
mlir::Value Payload::emitMin(const Node& n) {
  return fold(n, [&](mlir::Value r, mlir::Value x) { return nanFrom(x, minimum(r, x)); });
}
mlir::Value Payload::emitSum(const Node& n) { return fold(n, [&](mlir::Value r, mlir::Value x) { return add(r, x); }); }
mlir::Value Payload::emitMean(const Node& n) {
  mlir::Value sum = emitSum(n);
  return n.numInputs() > 1 ? div(sum, f32(double(n.numInputs()))) : sum;
}
mlir::Value Payload::emitNeg(const Node& n) { return b.create<mlir::arith::NegFOp>(l, in(n, 0)); }
mlir::Value Payload::emitExp(const Node& n) { return b.create<mlir::math::ExpOp>(l, in(n, 0)); }
mlir::Value Payload::emitLog(const Node& n) { return b.create<mlir::math::LogOp>(l, in(n, 0)); }
mlir::Value Payload::emitSqrt(const Node& n) { return b.create<mlir::math::SqrtOp>(l, in(n, 0)); }
mlir::Value Payload::emitAbs(const Node& n) { return b.create<mlir::math::AbsFOp>(l, in(n, 0)); }
mlir::Value Payload::emitFloor(const Node& n) { return b.create<mlir::math::FloorOp>(l, in(n, 0)); }
mlir::Value Payload::emitCeil(const Node& n) { return b.create<mlir::math::CeilOp>(l, in(n, 0)); }
mlir::Value Payload::emitReciprocal(const Node& n) { return div(f32(1), in(n, 0)); }
mlir::Value Payload::emitErf(const Node& n) { return b.create<mlir::math::ErfOp>(l, in(n, 0)); }
mlir::Value Payload::emitRound(const Node& n) { return b.create<mlir::math::RoundEvenOp>(l, in(n, 0)); }
// To f16 and back with arith.truncf/extf (F16C's conversions on x86, cvt on NVIDIA); to bf16 by the bits,
// nearest even with NaN kept, as the interpreter's floatToBf16 (LLVM's x86 backend would call a runtime function).
mlir::Value Payload::emitReducePrecision(const Node& n) {
  mlir::Value x = in(n, 0);
  if (dtypeFromOnnxCode(n.attrInt("to", 0), n.describe()) == DType::F16) {
    mlir::Value half = b.create<mlir::arith::TruncFOp>(l, b.getF16Type(), x);
    return b.create<mlir::arith::ExtFOp>(l, b.getF32Type(), half);
  }
  auto i32 = [&](uint32_t v) { return b.create<mlir::arith::ConstantOp>(l, b.getI32IntegerAttr(int32_t(v))); };
  mlir::Value bits = b.create<mlir::arith::BitcastOp>(l, b.getI32Type(), x);
  mlir::Value lsb = b.create<mlir::arith::AndIOp>(l, b.create<mlir::arith::ShRUIOp>(l, bits, i32(16)), i32(1));
  mlir::Value up = b.create<mlir::arith::AddIOp>(l, bits, b.create<mlir::arith::AddIOp>(l, lsb, i32(0x7fff)));
  mlir::Value rounded = b.create<mlir::arith::AndIOp>(l, up, i32(0xffff0000u));
  return nanFrom(x, b.create<mlir::arith::BitcastOp>(l, b.getF32Type(), rounded));
}
mlir::Value Payload::emitSign(const Node& n) {  // 0 and NaN map to themselves
  mlir::Value x = in(n, 0);
  return select(cmp(mlir::arith::CmpFPredicate::OGT, x, f32(0)), f32(1),
                select(cmp(mlir::arith::CmpFPredicate::OLT, x, f32(0)), f32(-1), x));
}
mlir::Value Payload::emitSin(const Node& n) { return b.create<mlir::math::SinOp>(l, in(n, 0)); }
mlir::Value Payload::emitCos(const Node& n) { return b.create<mlir::math::CosOp>(l, in(n, 0)); }
mlir::Value Payload::emitTan(const Node& n) { return b.create<mlir::math::TanOp>(l, in(n, 0)); }
mlir::Value Payload::emitAsin(const Node& n) { return b.create<mlir::math::AsinOp>(l, in(n, 0)); }
mlir::Value Payload::emitAcos(const Node& n) { return b.create<mlir::math::AcosOp>(l, in(n, 0)); }
mlir::Value Payload::emitAtan(const Node& n) { return b.create<mlir::math::AtanOp>(l, in(n, 0)); }
mlir::Value Payload::emitSinh(const Node& n) { return b.create<mlir::math::SinhOp>(l, in(n, 0)); }
mlir::Value Payload::emitCosh(const Node& n) { return b.create<mlir::math::CoshOp>(l, in(n, 0)); }
mlir::Value Payload::emitAsinh(const Node& n) { return b.create<mlir::math::AsinhOp>(l, in(n, 0)); }
mlir::Value Payload::emitAcosh(const Node& n) { return b.create<mlir::math::AcoshOp>(l, in(n, 0)); }
mlir::Value Payload::emitAtanh(const Node& n) { return b.create<mlir::math::AtanhOp>(l, in(n, 0)); }
mlir::Value Payload::emitIdentity(const Node& n) { return in(n, 0); }
mlir::Value Payload::emitRelu(const Node& n) { return maximum(in(n, 0), f32(0)); }
mlir::Value Payload::emitTanh(const Node& n) { return b.create<mlir::math::TanhOp>(l, in(n, 0)); }

mlir::Value Payload::emitLeakyRelu(const Node& n) {
  mlir::Value x = in(n, 0);
  return select(cmp(mlir::arith::CmpFPredicate::OLT, x, f32(0)), mul(f32(attr(n, "alpha", 0.01f)), x), x);
}

mlir::Value Payload::emitPRelu(const Node& n) {  // LeakyRelu with a slope operand (per channel, broadcast)
  mlir::Value x = in(n, 0);
  return select(cmp(mlir::arith::CmpFPredicate::OLT, x, f32(0)), mul(in(n, 1), x), x);
}

mlir::Value Payload::emitSigmoid(const Node& n) {
  // x >= 0 ? 1/(1+e^-x) : e^x/(1+e^x), as e = e^-|x|: no overflow.
  mlir::Value x = in(n, 0);
  mlir::Value e = b.create<mlir::math::ExpOp>(l, b.create<mlir::arith::NegFOp>(l, b.create<mlir::math::AbsFOp>(l, x)));
  return div(select(cmp(mlir::arith::CmpFPredicate::OGE, x, f32(0)), f32(1), e), add(f32(1), e));
}

mlir::Value Payload::emitHardSigmoid(const Node& n) {
  return clamp01(add(mul(f32(attr(n, "alpha", 0.2f)), in(n, 0)), f32(attr(n, "beta", 0.5f))));
}

mlir::Value Payload::emitHardSwish(const Node& n) {
  mlir::Value x = in(n, 0);
  return mul(x, clamp01(add(div(x, f32(6)), f32(0.5))));
}

mlir::Value Payload::emitElu(const Node& n) {
  mlir::Value x = in(n, 0);
  return select(cmp(mlir::arith::CmpFPredicate::OLT, x, f32(0)), mul(f32(attr(n, "alpha", 1.0f)), expm1(x)), x);
}

mlir::Value Payload::emitSelu(const Node& n) {
  mlir::Value x = in(n, 0);
  mlir::Value negative = mul(f32(attr(n, "alpha", 1.67326319217681884765625f)), expm1(x));
  return mul(f32(attr(n, "gamma", 1.05070102214813232421875f)),
             select(cmp(mlir::arith::CmpFPredicate::OGT, x, f32(0)), x, negative));
}

mlir::Value Payload::emitCelu(const Node& n) {
  mlir::Value x = in(n, 0);
  float alpha = attr(n, "alpha", 1.0f);
  return select(cmp(mlir::arith::CmpFPredicate::OGT, x, f32(0)), x, mul(f32(alpha), expm1(div(x, f32(alpha)))));
}

mlir::Value Payload::emitSoftplus(const Node& n) {
  // x + log1p(e^-x) for x > 0, log1p(e^x) otherwise: no overflow.
  mlir::Value x = in(n, 0);
  auto log1pExp = [&](mlir::Value v) {
    return b.create<mlir::math::Log1pOp>(l, b.create<mlir::math::ExpOp>(l, v)).getResult();
  };
  mlir::Value positive = add(x, log1pExp(b.create<mlir::arith::NegFOp>(l, x)));
  return select(cmp(mlir::arith::CmpFPredicate::OGT, x, f32(0)), positive, log1pExp(x));
}

mlir::Value Payload::emitSoftsign(const Node& n) {
  mlir::Value x = in(n, 0);
  return div(x, add(f32(1), b.create<mlir::math::AbsFOp>(l, x)));
}

mlir::Value Payload::emitThresholdedRelu(const Node& n) {
  mlir::Value x = in(n, 0);
  return select(cmp(mlir::arith::CmpFPredicate::OGT, x, f32(attr(n, "alpha", 1.0f))), x, f32(0));
}

mlir::Value Payload::emitShrink(const Node& n) {
  mlir::Value x = in(n, 0);
  float bias = attr(n, "bias", 0.0f), lambd = attr(n, "lambd", 0.5f);
  return select(cmp(mlir::arith::CmpFPredicate::OLT, x, f32(-lambd)), add(x, f32(bias)),
                select(cmp(mlir::arith::CmpFPredicate::OGT, x, f32(lambd)), b.create<mlir::arith::SubFOp>(l, x, f32(bias)),
                       f32(0)));
}

mlir::Value Payload::emitClip(const Node& n) {
  mlir::Value r = in(n, 0);
  if (n.input(1)) r = maximum(r, in(n, 1));
  if (n.input(2)) r = minimum(r, in(n, 2));
  return r;
}

// Builds one kernel function.
class KernelBuilder {
 public:
  // `wholeWindowGeneric`: an unpadded convolution is one contraction over its
  // whole window (the GPU targets) rather than one per window cell.
  KernelBuilder(mlir::OpBuilder& b, const KernelView& view, bool wholeWindowGeneric)
      : b_(b), view_(view), loc_(b.getUnknownLoc()), wholeWindowGeneric_(wholeWindowGeneric) {}

  void build(const std::string& name) {
    // Split kernels (KernelView::splitDim) take the split dim as a dynamic size where it spans the domain.
    auto argType = [&](const Value* v, int dynamicDim) {
      std::vector<int64_t> shape = v->shape().staticDims();
      if (dynamicDim >= 0) shape[size_t(dynamicDim)] = mlir::ShapedType::kDynamic;
      if (v->dtype() == DType::I64 || v->dtype() == DType::I32)  // a Structured Gather's indices
        return mlir::RankedTensorType::get(shape, b_.getIntegerType(v->dtype() == DType::I64 ? 64 : 32));
      return tensorType(b_, shape);
    };
    llvm::SmallVector<mlir::Type> argTypes, resultTypes;
    for (size_t i = 0; i < view_.inputs.size(); ++i)
      argTypes.push_back(argType(view_.inputs[i], view_.splitDim >= 0 ? view_.inputSplitDims[i] : -1));
    for (const Value* v : view_.outputs) {
      argTypes.push_back(argType(v, view_.splitDim));
      resultTypes.push_back(argType(v, view_.splitDim));
    }
    for (const auto& shape : view_.scratch) {  // written in place like the outputs
      argTypes.push_back(tensorType(b_, shape));
      resultTypes.push_back(tensorType(b_, shape));
    }
    auto fn = b_.create<mlir::func::FuncOp>(loc_, name, b_.getFunctionType(argTypes, resultTypes));
    fn->setAttr("llvm.emit_c_interface", b_.getUnitAttr());
    mlir::Block* entry = fn.addEntryBlock();
    mlir::OpBuilder::InsertionGuard guard(b_);
    b_.setInsertionPointToStart(entry);
    for (size_t i = 0; i < view_.inputs.size(); ++i) args_[view_.inputs[i]] = entry->getArgument(unsigned(i));
    llvm::SmallVector<mlir::Value> inits;
    for (size_t i = 0; i < view_.outputs.size(); ++i)
      inits.push_back(entry->getArgument(unsigned(view_.inputs.size() + i)));

    std::vector<const Node*> elementwise(view_.nodes.begin(), view_.nodes.end());
    llvm::SmallVector<mlir::Value> results;
    if (view_.kind == KernelKind::Contraction) {
      const Node& anchor = *view_.nodes.front();
      elementwise.erase(elementwise.begin());
      mlir::Value acc = contraction(anchor, inits[0]);
      bool gemmPost = anchor.op() == "Gemm" && (anchor.input(2) || anchor.attrFloat("alpha", 1.0f) != 1.0f);
      if (elementwise.empty() && !gemmPost) {
        results.push_back(acc);
      } else {
        // The epilogue: one generic updating the accumulator in place.
        results = generic(elementwise, {acc}, &anchor);
      }
    } else if (view_.kind == KernelKind::Structured) {
      const Node& n = *view_.nodes.front();
      std::vector<mlir::Value> args(n.numInputs());  // aligned with n's inputs; constants stay null
      for (size_t i = 0; i < n.numInputs(); ++i)
        if (args_.count(n.input(i))) args[i] = args_.at(n.input(i));
      std::vector<mlir::Value> scratch;
      for (size_t i = 0; i < view_.scratch.size(); ++i)
        scratch.push_back(entry->getArgument(unsigned(view_.inputs.size() + view_.outputs.size() + i)));
      for (mlir::Value r : buildStructuredKernel(b_, n, args, inits[0], scratch)) results.push_back(r);
    } else if (view_.kind == KernelKind::NativeEpilogue) {
      // The anchor's result is already in the output buffer, a Gemm's alpha and C applied: update it in place.
      elementwise.erase(elementwise.begin());
      results = generic(elementwise, {inits[0]}, view_.nodes.front(), /*anchorFinished=*/true);
    } else {
      results = generic(elementwise, inits, nullptr);
    }
    b_.create<mlir::func::ReturnOp>(loc_, results);
  }

 private:
  mlir::Value f32(double v) { return b_.create<mlir::arith::ConstantOp>(loc_, b_.getF32FloatAttr(float(v))); }

  // The value with dims [0, r - keep) collapsed into one (identity when there is at most one).
  mlir::Value collapseLeading(mlir::Value v, const std::vector<int64_t>& shape, size_t keep) {
    if (shape.size() <= keep + 1) return v;
    mlir::ReassociationIndices lead;
    std::vector<int64_t> folded = {1};
    for (size_t i = 0; i + keep < shape.size(); ++i) lead.push_back(int64_t(i)), folded[0] *= shape[i];
    llvm::SmallVector<mlir::ReassociationIndices> re = {lead};
    for (size_t i = shape.size() - keep; i < shape.size(); ++i) re.push_back({int64_t(i)}), folded.push_back(shape[i]);
    return b_.create<mlir::tensor::CollapseShapeOp>(loc_, tensorType(b_, folded), v, re).getResult();
  }
  mlir::Value expandLeading(mlir::Value v, const std::vector<int64_t>& shape, size_t keep) {
    if (shape.size() <= keep + 1) return v;
    mlir::ReassociationIndices lead;
    for (size_t i = 0; i + keep < shape.size(); ++i) lead.push_back(int64_t(i));
    llvm::SmallVector<mlir::ReassociationIndices> re = {lead};
    for (size_t i = shape.size() - keep; i < shape.size(); ++i) re.push_back({int64_t(i)});
    return b_.create<mlir::tensor::ExpandShapeOp>(loc_, tensorType(b_, shape), v, re).getResult();
  }

  // C = A x B into `init` (zero-filled first), as a named linalg contraction
  // where one fits (the `ukernels` stage turns those into microkernel calls),
  // else as a contraction generic.
  mlir::Value contraction(const Node& n, mlir::Value init) {
    if (n.op() == "Conv") return convolution(n, init);
    mlir::Value a = args_.at(n.input(0)), bm = args_.at(n.input(1));
    std::vector<int64_t> as = n.input(0)->shape().staticDims(), bs = n.input(1)->shape().staticDims();
    std::vector<int64_t> ys = n.output(0)->shape().staticDims();
    auto zero = f32(0);
    auto fill = [&](mlir::Value t) {
      return b_.create<mlir::linalg::FillOp>(loc_, mlir::ValueRange{zero}, mlir::ValueRange{t}).getResult(0);
    };
    bool ta = n.op() == "Gemm" && n.attrInt("transA", 0) != 0;
    bool tb = n.op() == "Gemm" && n.attrInt("transB", 0) != 0;
    if (bs.size() == 2 && !(ta && tb)) {
      // 2-D: Gemm (one operand may be transposed), or MatMul with A's batch dims folded into M.
      llvm::SmallVector<mlir::Value> ins = {collapseLeading(a, as, 1), bm};
      llvm::SmallVector<mlir::Value> outs = {fill(collapseLeading(init, ys, 1))};
      mlir::Value mm =
          ta ? b_.create<mlir::linalg::MatmulTransposeAOp>(loc_, ins, outs).getResult(0)
          : tb ? b_.create<mlir::linalg::MatmulTransposeBOp>(loc_, ins, outs).getResult(0)
               : b_.create<mlir::linalg::MatmulOp>(loc_, ins, outs).getResult(0);
      return expandLeading(mm, ys, 1);
    }
    bool sameBatch = !ta && !tb && as.size() == bs.size() && as.size() >= 3 &&
                     std::equal(as.begin(), as.end() - 2, bs.begin());
    if (sameBatch) {
      // Equal batch dims on both sides (attention): folded into one, batch_matmul.
      llvm::SmallVector<mlir::Value> ins = {collapseLeading(a, as, 2), collapseLeading(bm, bs, 2)};
      llvm::SmallVector<mlir::Value> outs = {fill(collapseLeading(init, ys, 2))};
      return expandLeading(b_.create<mlir::linalg::BatchMatmulOp>(loc_, ins, outs).getResult(0), ys, 2);
    }
    auto filled = fill(init);
    // General case: a contraction generic over (batch..., m, n, k) with broadcast batch dims.
    size_t nb = ys.size() - 2;
    unsigned nd = unsigned(nb + 3), m = unsigned(nb), nn = unsigned(nb + 1), k = unsigned(nb + 2);
    auto operandMap = [&](const std::vector<int64_t>& s, bool transposed, bool isA) {
      std::vector<mlir::AffineExpr> e;
      size_t sb = s.size() - 2, off = nb - sb;
      for (size_t i = 0; i < sb; ++i)
        e.push_back(s[i] == ys[i + off] ? b_.getAffineDimExpr(unsigned(i + off)) : b_.getAffineConstantExpr(0));
      unsigned r = isA ? m : k, c = isA ? k : nn;
      if (transposed) std::swap(r, c);
      e.push_back(b_.getAffineDimExpr(r));
      e.push_back(b_.getAffineDimExpr(c));
      return mlir::AffineMap::get(nd, 0, e, b_.getContext());
    };
    std::vector<mlir::AffineExpr> ye;
    for (unsigned i = 0; i < nb + 2; ++i) ye.push_back(b_.getAffineDimExpr(i));
    llvm::SmallVector<mlir::AffineMap> maps = {operandMap(as, ta, true), operandMap(bs, tb, false),
                                               mlir::AffineMap::get(nd, 0, ye, b_.getContext())};
    llvm::SmallVector<mlir::utils::IteratorType> iters(nd, mlir::utils::IteratorType::parallel);
    iters[k] = mlir::utils::IteratorType::reduction;
    return b_
        .create<mlir::linalg::GenericOp>(
            loc_, mlir::TypeRange{init.getType()}, mlir::ValueRange{a, bm}, mlir::ValueRange{filled}, maps, iters,
            [&](mlir::OpBuilder& nb2, mlir::Location l, mlir::ValueRange x) {
              auto p = nb2.create<mlir::arith::MulFOp>(l, x[0], x[1]);
              auto s = nb2.create<mlir::arith::AddFOp>(l, x[2], p);
              nb2.create<mlir::linalg::YieldOp>(l, mlir::ValueRange{s});
            })
        .getResult(0);
  }

  // Conv (NC + spatial, any group count, 1-3 spatial dims) into `init`:
  // with the channels split as [G, K/G] (output, weights) and the input read
  // at channel g * C/G + c, the accumulator starts from the bias, then each
  // window cell adds one contraction generic over the output pixels whose
  // input lies inside x, dims (n, g, k, c, spatial...): the last spatial dim
  // innermost, contiguous in the output (and the input at stride 1), which
  // LLVM's loop vectorizer handles. No padded copy of x is made.
  mlir::Value convolution(const Node& n, mlir::Value init) {
    const std::vector<int64_t> xs = n.input(0)->shape().staticDims(), ws = n.input(1)->shape().staticDims();
    const std::vector<int64_t> ys = n.output(0)->shape().staticDims();
    const size_t d = xs.size() - 2;
    const Window win = resolveWindow(n, {xs.begin() + 2, xs.end()}, {ws.begin() + 2, ws.end()});
    const int64_t G = n.attrInt("group", 1), K = ys[1], C = xs[1], kg = K / G, cg = C / G;
    auto index = [&](int64_t v) { return mlir::OpFoldResult(b_.getIndexAttr(v)); };
    auto dim = [&](unsigned i) { return b_.getAffineDimExpr(i); };
    // acc5 = init as [N, G, K/G, spatial...].
    std::vector<int64_t> y5 = {ys[0], G, kg};
    y5.insert(y5.end(), ys.begin() + 2, ys.end());
    llvm::SmallVector<mlir::ReassociationIndices> splitChannels = {{0}, {1, 2}};
    for (size_t i = 0; i < d; ++i) splitChannels.push_back({int64_t(3 + i)});
    mlir::Value acc = b_.create<mlir::tensor::ExpandShapeOp>(loc_, tensorType(b_, y5), init, splitChannels);
    auto collapse = [&](mlir::Value v) {
      return b_.create<mlir::tensor::CollapseShapeOp>(loc_, init.getType(), v, splitChannels).getResult();
    };
    // The bias (or zero) in every output.
    const unsigned outDims = unsigned(y5.size());
    auto identity = b_.getMultiDimIdentityMap(outDims);
    llvm::SmallVector<mlir::utils::IteratorType> outIters(outDims, mlir::utils::IteratorType::parallel);
    if (n.input(2)) {
      mlir::Value bias = b_.create<mlir::tensor::ExpandShapeOp>(loc_, tensorType(b_, {G, kg}), args_.at(n.input(2)),
                                                                llvm::SmallVector<mlir::ReassociationIndices>{{0, 1}});
      auto biasMap = mlir::AffineMap::get(outDims, 0, {dim(1), dim(2)}, b_.getContext());
      acc = b_.create<mlir::linalg::GenericOp>(loc_, mlir::TypeRange{acc.getType()}, mlir::ValueRange{bias},
                                               mlir::ValueRange{acc}, llvm::ArrayRef<mlir::AffineMap>{biasMap, identity},
                                               outIters,
                                               [](mlir::OpBuilder& pb, mlir::Location l, mlir::ValueRange v) {
                                                 pb.create<mlir::linalg::YieldOp>(l, mlir::ValueRange{v[0]});
                                               })
                .getResult(0);
    } else {
      acc = b_.create<mlir::linalg::FillOp>(loc_, mlir::ValueRange{f32(0)}, mlir::ValueRange{acc}).getResult(0);
    }
    // Weights as [G, K/G, C/G, window...].
    std::vector<int64_t> w5 = {G, kg, cg};
    w5.insert(w5.end(), ws.begin() + 2, ws.end());
    llvm::SmallVector<mlir::ReassociationIndices> splitFilters = {{0, 1}};  // [K, C/G, ...]: K is dim 0
    for (size_t i = 0; i <= d; ++i) splitFilters.push_back({int64_t(2 + i)});
    mlir::Value w = b_.create<mlir::tensor::ExpandShapeOp>(loc_, tensorType(b_, w5), args_.at(n.input(1)), splitFilters);
    const mlir::Value x = args_.at(n.input(0));
    // Generic dims: n, g, k, c, then the spatial dims of the output slice.
    const unsigned nd = unsigned(4 + d);
    llvm::SmallVector<mlir::AffineExpr> xe = {dim(0), dim(1) * cg + dim(3)}, we = {dim(1), dim(2), dim(3)},
                                        ye = {dim(0), dim(1), dim(2)};
    for (unsigned i = 0; i < d; ++i) xe.push_back(dim(4 + i)), ye.push_back(dim(4 + i));
    llvm::SmallVector<mlir::AffineMap> maps = {mlir::AffineMap::get(nd, 0, xe, b_.getContext()),
                                               mlir::AffineMap::get(nd, 0, we, b_.getContext()),
                                               mlir::AffineMap::get(nd, 0, ye, b_.getContext())};
    llvm::SmallVector<mlir::utils::IteratorType> iters(nd, mlir::utils::IteratorType::parallel);
    iters[3] = mlir::utils::IteratorType::reduction;
    if (wholeWindowGeneric_ && windowInside(win, xs, ys)) return collapse(wholeWindow(win, x, w, acc, cg, d));
    // Every window cell (row-major over the window dims).
    for (int64_t cell = 0; cell < win.kernelSize(); ++cell) {
      std::optional<WindowCell> cellSlices = windowCell(win, xs, ys, cell);
      if (!cellSlices) continue;
      const WindowCell& c = *cellSlices;
      llvm::SmallVector<mlir::OpFoldResult> xOff = {index(0), index(0)}, xSize = {index(xs[0]), index(C)},
                                            xStride = {index(1), index(1)};
      llvm::SmallVector<mlir::OpFoldResult> yOff = {index(0), index(0), index(0)}, ySize = {index(ys[0]), index(G), index(kg)},
                                            ones(y5.size(), index(1));
      std::vector<int64_t> slice = {ys[0], G, kg};
      for (size_t i = 0; i < d; ++i) {
        xOff.push_back(index(c.xOffsets[i])), xSize.push_back(index(c.sizes[i])), xStride.push_back(index(c.xStrides[i]));
        yOff.push_back(index(c.yOffsets[i])), ySize.push_back(index(c.sizes[i])), slice.push_back(c.sizes[i]);
      }
      std::vector<int64_t> xSlice = {xs[0], C};
      xSlice.insert(xSlice.end(), slice.begin() + 3, slice.end());
      mlir::Value xc = b_.create<mlir::tensor::ExtractSliceOp>(loc_, tensorType(b_, xSlice), x, xOff, xSize, xStride);
      // The cell's weights [G, K/G, C/G] (the window dims dropped).
      llvm::SmallVector<mlir::OpFoldResult> wOff = {index(0), index(0), index(0)}, wSize = {index(G), index(kg), index(cg)};
      for (size_t i = 0; i < d; ++i) wOff.push_back(index(c.at[i])), wSize.push_back(index(1));
      llvm::SmallVector<mlir::OpFoldResult> wOnes(w5.size(), index(1));
      mlir::Value wc = b_.create<mlir::tensor::ExtractSliceOp>(loc_, tensorType(b_, {G, kg, cg}), w, wOff, wSize, wOnes);
      mlir::Value yc = b_.create<mlir::tensor::ExtractSliceOp>(loc_, tensorType(b_, slice), acc, yOff, ySize, ones);
      mlir::Value sum = multiplyAccumulate(xc, wc, yc, maps, iters);
      acc = b_.create<mlir::tensor::InsertSliceOp>(loc_, sum, acc, yOff, ySize, ones);
    }
    return collapse(acc);
  }

  // acc5 += x * w over c and the whole window: ONE generic with dims (n, g,
  // k, output spatial..., c, window...), the parallel dims first. On the GPU
  // one nest (one launch) instead of one per window cell: ViT-B/16's 16x16
  // patch convolution was 256 launches and 16 s of PTX compile.
  mlir::Value wholeWindow(const Window& win, mlir::Value x, mlir::Value w, mlir::Value acc, int64_t cg, size_t d) {
    auto dim = [&](size_t i) { return b_.getAffineDimExpr(unsigned(i)); };
    const size_t nd = 4 + 2 * d, c = 3 + d;
    llvm::SmallVector<mlir::AffineExpr> xe = {dim(0), dim(1) * cg + dim(c)}, we = {dim(1), dim(2), dim(c)},
                                        ye = {dim(0), dim(1), dim(2)};
    for (size_t i = 0; i < d; ++i) {
      xe.push_back(dim(3 + i) * win.strides[i] + dim(c + 1 + i) * win.dilations[i]);
      we.push_back(dim(c + 1 + i));
      ye.push_back(dim(3 + i));
    }
    llvm::SmallVector<mlir::AffineMap> maps = {mlir::AffineMap::get(unsigned(nd), 0, xe, b_.getContext()),
                                               mlir::AffineMap::get(unsigned(nd), 0, we, b_.getContext()),
                                               mlir::AffineMap::get(unsigned(nd), 0, ye, b_.getContext())};
    llvm::SmallVector<mlir::utils::IteratorType> iters(nd, mlir::utils::IteratorType::reduction);
    for (size_t i = 0; i < c; ++i) iters[i] = mlir::utils::IteratorType::parallel;
    return multiplyAccumulate(x, w, acc, maps, iters);
  }

  // acc += x * w: one contraction generic over `maps` and `iters`.
  mlir::Value multiplyAccumulate(mlir::Value x, mlir::Value w, mlir::Value acc, llvm::ArrayRef<mlir::AffineMap> maps,
                                 llvm::ArrayRef<mlir::utils::IteratorType> iters) {
    return b_.create<mlir::linalg::GenericOp>(loc_, mlir::TypeRange{acc.getType()}, mlir::ValueRange{x, w},
                                              mlir::ValueRange{acc}, maps, iters,
                                              [](mlir::OpBuilder& pb, mlir::Location l, mlir::ValueRange v) {
                                                auto p = pb.create<mlir::arith::MulFOp>(l, v[0], v[1]);
                                                auto s = pb.create<mlir::arith::AddFOp>(l, v[2], p);
                                                pb.create<mlir::linalg::YieldOp>(l, mlir::ValueRange{s});
                                              })
        .getResult(0);
  }

  // One linalg.generic over the domain computing `nodes` per element. With an
  // `anchor`, the single output is the anchor's accumulator, updated in place:
  // a Gemm's alpha and C are applied to it first unless `anchorFinished` (a
  // native anchor applied them itself).
  llvm::SmallVector<mlir::Value> generic(const std::vector<const Node*>& nodes, llvm::SmallVector<mlir::Value> outs,
                                         const Node* anchor, bool anchorFinished = false) {
    const bool gemmPost = anchor && anchor->op() == "Gemm" && !anchorFinished;
    // Generic inputs: kernel arguments read by the elementwise part.
    std::vector<const Value*> ins;
    auto use = [&](const Value* v) {
      if (v && args_.count(v) && std::find(ins.begin(), ins.end(), v) == ins.end()) ins.push_back(v);
    };
    for (const Node* n : nodes)
      for (const Value* v : n->inputs()) use(v);
    if (gemmPost && anchor->input(2)) use(anchor->input(2));
    const auto& domain = view_.domain;
    llvm::SmallVector<mlir::Value> inValues;
    llvm::SmallVector<mlir::AffineMap> maps;
    for (const Value* v : ins) {
      inValues.push_back(args_.at(v));
      maps.push_back(broadcastMap(b_, v->shape().staticDims(), domain));
    }
    for (size_t i = 0; i < outs.size(); ++i) maps.push_back(b_.getMultiDimIdentityMap(unsigned(domain.size())));
    llvm::SmallVector<mlir::utils::IteratorType> iters(domain.size(), mlir::utils::IteratorType::parallel);
    llvm::SmallVector<mlir::Type> types;
    for (auto o : outs) types.push_back(o.getType());
    auto op = b_.create<mlir::linalg::GenericOp>(
        loc_, types, inValues, outs, maps, iters, [&](mlir::OpBuilder& pb, mlir::Location l, mlir::ValueRange x) {
          Payload p(pb, l);
          for (size_t i = 0; i < ins.size(); ++i) p.scalars[ins[i]] = x[i];
          if (anchor) {
            mlir::Value acc = x[ins.size()];
            if (gemmPost) {
              float alpha = anchor->attrFloat("alpha", 1.0f), beta = anchor->attrFloat("beta", 1.0f);
              if (alpha != 1.0f) acc = p.mul(p.f32(alpha), acc);
              if (const Value* c = anchor->input(2)) {
                mlir::Value cv = p.scalars.at(c);
                if (beta != 1.0f) cv = p.mul(p.f32(beta), cv);
                acc = pb.create<mlir::arith::AddFOp>(l, acc, cv);
              }
            }
            p.scalars[anchor->output(0)] = acc;
          }
          for (const Node* n : nodes) p.emit(*n);
          llvm::SmallVector<mlir::Value> yields;
          if (anchor)
            yields.push_back(p.scalars.at(nodes.empty() ? anchor->output(0) : view_.outputs[0]));
          else
            for (const Value* v : view_.outputs) yields.push_back(p.scalars.at(v));
          pb.create<mlir::linalg::YieldOp>(l, yields);
        });
    return llvm::SmallVector<mlir::Value>(op.getResults().begin(), op.getResults().end());
  }

  mlir::OpBuilder& b_;
  const KernelView& view_;
  mlir::Location loc_;
  std::unordered_map<const Value*, mlir::Value> args_;
  bool wholeWindowGeneric_;
};

}  // namespace

bool windowInside(const Window& win, const std::vector<int64_t>& xs, const std::vector<int64_t>& ys) {
  for (size_t i = 0; i < win.rank(); ++i)
    if (win.pads[i] != 0 || (ys[2 + i] - 1) * win.strides[i] + (win.kernel[i] - 1) * win.dilations[i] >= xs[2 + i])
      return false;
  return true;
}

std::optional<WindowCell> windowCell(const Window& win, const std::vector<int64_t>& xs, const std::vector<int64_t>& ys,
                                     int64_t cell) {
  const size_t d = win.rank();
  WindowCell c;
  c.at.resize(d);
  for (size_t i = d, rest = size_t(cell); i-- > 0;) c.at[i] = int64_t(rest % size_t(win.kernel[i])), rest /= size_t(win.kernel[i]);
  for (size_t i = 0; i < d; ++i) {
    // Output positions o with 0 <= o * stride + at * dilation - pad < extent.
    const int64_t shift = c.at[i] * win.dilations[i] - win.pads[i], stride = win.strides[i];
    const auto [lo, hi] = ukernels::insideOutputs(shift, stride, xs[2 + i], ys[2 + i]);
    if (hi <= lo) return std::nullopt;
    c.xOffsets.push_back(lo * stride + shift), c.xStrides.push_back(stride);
    c.yOffsets.push_back(lo), c.sizes.push_back(hi - lo);
  }
  return c;
}

mlir::OwningOpRef<mlir::ModuleOp> buildModule(mlir::MLIRContext& ctx, const std::vector<const Node*>& nodes,
                                              const std::vector<std::string>& names, const CodegenOptions& options) {
  FRICTION_CHECK(nodes.size() == names.size(), "codegen: one name per kernel");
  mlir::OpBuilder b(&ctx);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(b.getUnknownLoc());
  b.setInsertionPointToEnd(module->getBody());
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::string why;
    auto view = analyzeKernel(*nodes[i], options, &why);
    FRICTION_CHECK(view, "codegen: " + nodes[i]->describe() + " is not a kernel: " + why);
    KernelBuilder(b, *view, options.target != Target::Cpu).build(names[i]);
  }
  return module;
}

}  // namespace friction::codegen
