// The one MLIR-heavy translation unit: builds kernels with MLIR's C++
// builders, lowers them (one-shot bufferization, linalg to loops, LLVM
// dialect) and JIT-compiles them with mlir::ExecutionEngine.
//
// Stages of one kernel (see docs/codegen.md):
//   built       func.func over tensors: linalg.generic / linalg.fill + linalg.matmul
//   bufferized  one-shot-bufferize with function boundaries (identity layouts),
//               then drop-equivalent-buffer-results: outputs are written in
//               place into the caller's buffers, the function returns nothing
//   loops       convert-linalg-to-loops (scf.for over memref.load/store)
//   llvm        scf->cf, expand-strided-metadata, lower-affine, math->llvm
//               intrinsics and libm calls (erff, tanhf), memref/arith/func/cf->llvm
//   JIT         LLVM IR, O3 for the host CPU (loop vectorizer), ORC machine code
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <unordered_map>

#include "codegen/Kernels.h"
#include "codegen/Microkernels.h"
#include "ir/Error.h"

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/AllInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

namespace friction::codegen {
namespace {

using Clock = std::chrono::steady_clock;

// LLVM O2, not O3, for JIT and AOT alike: on ResNet-50's 25 distinct kernels
// O3's unrolling made basic blocks that cost 4.8 s in the machine scheduler
// against 0.95 s, for no measurable run time (generated code is ~1% of it;
// the microkernels do the rest).
constexpr unsigned kLlvmOptLevel = 2;
double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// One context for the process: dialect loading is the slow part of setup.
struct Jit {
  mlir::MLIRContext ctx;
  std::mutex mu;
  Jit() : ctx(registry(), mlir::MLIRContext::Threading::DISABLED) {
    ctx.loadDialect<mlir::func::FuncDialect, mlir::arith::ArithDialect, mlir::math::MathDialect,
                    mlir::linalg::LinalgDialect, mlir::tensor::TensorDialect, mlir::memref::MemRefDialect,
                    mlir::scf::SCFDialect, mlir::cf::ControlFlowDialect, mlir::affine::AffineDialect,
                    mlir::bufferization::BufferizationDialect, mlir::LLVM::LLVMDialect>();
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  }
  static mlir::DialectRegistry registry() {
    mlir::DialectRegistry r;
    r.insert<mlir::func::FuncDialect, mlir::arith::ArithDialect, mlir::math::MathDialect, mlir::linalg::LinalgDialect,
             mlir::tensor::TensorDialect, mlir::memref::MemRefDialect, mlir::scf::SCFDialect,
             mlir::cf::ControlFlowDialect, mlir::affine::AffineDialect, mlir::bufferization::BufferizationDialect,
             mlir::LLVM::LLVMDialect>();
    mlir::linalg::registerAllDialectInterfaceImplementations(r);
    mlir::arith::registerBufferizableOpInterfaceExternalModels(r);
    mlir::arith::registerValueBoundsOpInterfaceExternalModels(r);
    mlir::tensor::registerBufferizableOpInterfaceExternalModels(r);
    mlir::tensor::registerValueBoundsOpInterfaceExternalModels(r);
    mlir::tensor::registerSubsetOpInterfaceExternalModels(r);
    mlir::memref::registerValueBoundsOpInterfaceExternalModels(r);
    mlir::memref::registerAllocationOpInterfaceExternalModels(r);
    mlir::bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(r);
    mlir::registerBuiltinDialectTranslation(r);
    mlir::registerLLVMDialectTranslation(r);
    return r;
  }
  static Jit& get() {
    static Jit* jit = new Jit();  // never destroyed: engines may outlive static destruction order
    return *jit;
  }
};

// Collects MLIR diagnostics for error messages.
struct Diagnostics {
  std::string text;
  mlir::ScopedDiagnosticHandler handler;
  explicit Diagnostics(mlir::MLIRContext& ctx)
      : handler(&ctx, [this](mlir::Diagnostic& d) {
          text += d.str() + "\n";
          return mlir::success();
        }) {}
};

std::string print(mlir::Operation* op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->print(os);
  return s;
}

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
mlir::Value Payload::emitMax(const Node& n) { return nanFrom(in(n, 1), maximum(in(n, 0), in(n, 1))); }
mlir::Value Payload::emitMin(const Node& n) { return nanFrom(in(n, 1), minimum(in(n, 0), in(n, 1))); }
mlir::Value Payload::emitNeg(const Node& n) { return b.create<mlir::arith::NegFOp>(l, in(n, 0)); }
mlir::Value Payload::emitExp(const Node& n) { return b.create<mlir::math::ExpOp>(l, in(n, 0)); }
mlir::Value Payload::emitLog(const Node& n) { return b.create<mlir::math::LogOp>(l, in(n, 0)); }
mlir::Value Payload::emitSqrt(const Node& n) { return b.create<mlir::math::SqrtOp>(l, in(n, 0)); }
mlir::Value Payload::emitAbs(const Node& n) { return b.create<mlir::math::AbsFOp>(l, in(n, 0)); }
mlir::Value Payload::emitFloor(const Node& n) { return b.create<mlir::math::FloorOp>(l, in(n, 0)); }
mlir::Value Payload::emitCeil(const Node& n) { return b.create<mlir::math::CeilOp>(l, in(n, 0)); }
mlir::Value Payload::emitReciprocal(const Node& n) { return div(f32(1), in(n, 0)); }
mlir::Value Payload::emitErf(const Node& n) { return b.create<mlir::math::ErfOp>(l, in(n, 0)); }
mlir::Value Payload::emitIdentity(const Node& n) { return in(n, 0); }
mlir::Value Payload::emitRelu(const Node& n) { return maximum(in(n, 0), f32(0)); }
mlir::Value Payload::emitTanh(const Node& n) { return b.create<mlir::math::TanhOp>(l, in(n, 0)); }

mlir::Value Payload::emitLeakyRelu(const Node& n) {
  mlir::Value x = in(n, 0);
  return select(cmp(mlir::arith::CmpFPredicate::OLT, x, f32(0)), mul(f32(attr(n, "alpha", 0.01f)), x), x);
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

mlir::Value Payload::emitClip(const Node& n) {
  mlir::Value r = in(n, 0);
  if (n.input(1)) r = maximum(r, in(n, 1));
  if (n.input(2)) r = minimum(r, in(n, 2));
  return r;
}

// Builds one kernel function.
class KernelBuilder {
 public:
  KernelBuilder(mlir::OpBuilder& b, const KernelView& view) : b_(b), view_(view), loc_(b.getUnknownLoc()) {}

  void build(const std::string& name) {
    // Row-split kernels (KernelView::rowSplit) take dim 0 as a dynamic size where it spans the domain.
    auto argType = [&](const Value* v, bool rows) {
      std::vector<int64_t> shape = v->shape().staticDims();
      if (rows) shape[0] = mlir::ShapedType::kDynamic;
      return tensorType(b_, shape);
    };
    llvm::SmallVector<mlir::Type> argTypes, resultTypes;
    for (size_t i = 0; i < view_.inputs.size(); ++i)
      argTypes.push_back(argType(view_.inputs[i], view_.rowSplit && view_.rowInputs[i]));
    for (const Value* v : view_.outputs) {
      argTypes.push_back(argType(v, view_.rowSplit));
      resultTypes.push_back(argType(v, view_.rowSplit));
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
    } else if (view_.kind == KernelKind::NativeEpilogue) {
      // The anchor's result is already in the output buffer: update it in place.
      elementwise.erase(elementwise.begin());
      results = generic(elementwise, {inits[0]}, view_.nodes.front());
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

  // One linalg.generic over the domain computing `nodes` per element. With an
  // `anchor`, the single output is the anchor's accumulator, updated in place.
  llvm::SmallVector<mlir::Value> generic(const std::vector<const Node*>& nodes, llvm::SmallVector<mlir::Value> outs,
                                         const Node* anchor) {
    // Generic inputs: kernel arguments read by the elementwise part.
    std::vector<const Value*> ins;
    auto use = [&](const Value* v) {
      if (v && args_.count(v) && std::find(ins.begin(), ins.end(), v) == ins.end()) ins.push_back(v);
    };
    for (const Node* n : nodes)
      for (const Value* v : n->inputs()) use(v);
    if (anchor && anchor->op() == "Gemm" && anchor->input(2)) use(anchor->input(2));
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
            if (anchor->op() == "Gemm") {
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
};

mlir::OwningOpRef<mlir::ModuleOp> buildModule(Jit& jit, const std::vector<const Node*>& nodes) {
  mlir::OpBuilder b(&jit.ctx);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(b.getUnknownLoc());
  b.setInsertionPointToEnd(module->getBody());
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::string why;
    auto view = analyzeKernel(*nodes[i], &why);
    FRICTION_CHECK(view, "codegen: " + nodes[i]->describe() + " is not a kernel: " + why);
    KernelBuilder(b, *view).build("k" + std::to_string(i));
  }
  return module;
}

// The pipeline in named stages, so each can be dumped.
using Stage = std::pair<const char*, std::function<void(mlir::PassManager&)>>;
std::vector<Stage> stages() {
  return {
      {"bufferized",
       [](mlir::PassManager& pm) {
         mlir::bufferization::OneShotBufferizationOptions o;
         o.bufferizeFunctionBoundaries = true;
         o.setFunctionBoundaryTypeConversion(mlir::bufferization::LayoutMapOption::IdentityLayoutMap);
         pm.addPass(mlir::bufferization::createOneShotBufferizePass(o));
         // Folds expand_shape(collapse_shape(arg)) back to arg, so results become recognizably equivalent.
         pm.addPass(mlir::createCanonicalizerPass());
         pm.addPass(mlir::bufferization::createDropEquivalentBufferResultsPass());
       }},
      {"loops", [](mlir::PassManager& pm) { pm.addNestedPass<mlir::func::FuncOp>(mlir::createConvertLinalgToLoopsPass()); }},
      {"llvm",
       [](mlir::PassManager& pm) {
         pm.addPass(mlir::createConvertSCFToCFPass());
         pm.addPass(mlir::memref::createExpandStridedMetadataPass());
         pm.addPass(mlir::createLowerAffinePass());
         pm.addPass(mlir::createConvertMathToLLVMPass());
         pm.addPass(mlir::createConvertMathToLibmPass());
         pm.addPass(mlir::createFinalizeMemRefToLLVMConversionPass());
         pm.addPass(mlir::createArithToLLVMConversionPass());
         pm.addPass(mlir::createConvertFuncToLLVMPass());
         pm.addPass(mlir::createConvertControlFlowToLLVMPass());
         pm.addPass(mlir::createReconcileUnrealizedCastsPass());
       }},
  };
}

// Loop order for the naive-loops path: convert-linalg-to-loops nests loops in
// iteration-dim order, and a matmul's (m, n, k) puts the reduction innermost
// with a strided walk down B's column. Generalizing the named contractions and
// interchanging to (m, k, n) makes the innermost loop a contiguous
// c[m, :] += a[m, k] * b[k, :] that LLVM's loop vectorizer handles.
// (Generalizing happens even when the interchange is skipped: loops from a
// generic and from the named op are the same.)
// With microkernels on, the named ops are left for the `ukernels` stage.
void interchangeContractions(mlir::ModuleOp module, bool namedToo) {
  llvm::SmallVector<mlir::linalg::LinalgOp> contractions;
  module.walk([&](mlir::linalg::LinalgOp op) {
    if ((namedToo && mlir::isa<mlir::linalg::MatmulOp, mlir::linalg::BatchMatmulOp>(op.getOperation())) ||
        (mlir::isa<mlir::linalg::GenericOp>(op.getOperation()) && op.getNumReductionLoops() == 1 &&
         op.getNumLoops() >= 3 && op.getIteratorTypesArray().back() == mlir::utils::IteratorType::reduction))
      contractions.push_back(op);
  });
  mlir::IRRewriter rewriter(module.getContext());
  for (mlir::linalg::LinalgOp op : contractions) {
    rewriter.setInsertionPoint(op);
    mlir::linalg::GenericOp generic;
    if (auto g = mlir::dyn_cast<mlir::linalg::GenericOp>(op.getOperation())) {
      generic = g;
    } else {
      auto gen = mlir::linalg::generalizeNamedOp(rewriter, op);
      if (mlir::failed(gen)) continue;
      generic = *gen;
    }
    unsigned n = generic.getNumLoops();
    // Only when B is read along n (row-major [k, n]); a transposed B ([n, k],
    // Gemm transB) is already contiguous along k with the reduction innermost.
    mlir::AffineMap bMap = generic.getIndexingMapsArray()[1];
    if (bMap.getNumResults() == 0 || bMap.getResults().back() != rewriter.getAffineDimExpr(n - 2)) continue;
    llvm::SmallVector<unsigned> perm;
    for (unsigned i = 0; i + 2 < n; ++i) perm.push_back(i);
    perm.push_back(n - 1);  // k
    perm.push_back(n - 2);  // n
    (void)mlir::linalg::interchangeGenericOp(rewriter, generic, perm);
  }
}

// The `ukernels` stage: on buffers, each named matmul (plain, transposed A or
// B, batched) becomes a call of friction's SGEMM microkernel (Microkernels.h);
// a zero fill of the same buffer just before it is dropped (the call then
// overwrites, beta = 0). Operands the callee type cannot take (a non-unit
// inner stride) stay linalg and go down the loops path.
void callMicrokernels(mlir::ModuleOp module) {
  mlir::MLIRContext* ctx = module.getContext();
  mlir::OpBuilder b(ctx);
  const int64_t dyn = mlir::ShapedType::kDynamic;
  auto f32 = b.getF32Type();
  auto mat = mlir::MemRefType::get({dyn, dyn}, f32, mlir::StridedLayoutAttr::get(ctx, dyn, {dyn, 1}));
  auto bat = mlir::MemRefType::get({dyn, dyn, dyn}, f32, mlir::StridedLayoutAttr::get(ctx, dyn, {dyn, dyn, 1}));
  auto declare = [&](const char* name, mlir::MemRefType t) {
    if (module.lookupSymbol(name)) return;
    b.setInsertionPointToStart(module.getBody());
    auto fn = b.create<mlir::func::FuncOp>(b.getUnknownLoc(), name,
                                           b.getFunctionType({t, t, t, b.getI32Type(), b.getI32Type(), f32}, {}));
    fn.setPrivate();
    fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  };
  llvm::SmallVector<mlir::linalg::LinalgOp> matmuls;
  module.walk([&](mlir::linalg::LinalgOp op) {
    if (op.hasPureBufferSemantics() &&
        mlir::isa<mlir::linalg::MatmulOp, mlir::linalg::MatmulTransposeAOp, mlir::linalg::MatmulTransposeBOp,
                  mlir::linalg::BatchMatmulOp>(op.getOperation()))
      matmuls.push_back(op);
  });
  for (mlir::linalg::LinalgOp op : matmuls) {
    bool batched = mlir::isa<mlir::linalg::BatchMatmulOp>(op.getOperation());
    mlir::MemRefType calleeType = batched ? bat : mat;
    llvm::SmallVector<mlir::Value> operands = {op.getDpsInputs()[0], op.getDpsInputs()[1], op.getDpsInits()[0]};
    bool castable = llvm::all_of(operands, [&](mlir::Value v) {
      return mlir::memref::CastOp::areCastCompatible(mlir::TypeRange{v.getType()}, mlir::TypeRange{calleeType});
    });
    if (!castable) continue;
    const char* callee = batched ? kSgemmBatchedCallee : kSgemmCallee;
    declare(callee, calleeType);
    b.setInsertionPoint(op);
    mlir::Location l = op.getLoc();
    float beta = 1.f;
    if (auto fill = mlir::dyn_cast_or_null<mlir::linalg::FillOp>(op->getPrevNode())) {
      auto c = fill.getInputs()[0].getDefiningOp<mlir::arith::ConstantOp>();
      auto fa = c ? mlir::dyn_cast<mlir::FloatAttr>(c.getValue()) : nullptr;
      if (fill.getOutputs()[0] == operands[2] && fa && fa.getValueAsDouble() == 0.0) {
        fill.erase();
        beta = 0.f;
      }
    }
    llvm::SmallVector<mlir::Value> args;
    for (mlir::Value v : operands) args.push_back(b.create<mlir::memref::CastOp>(l, calleeType, v));
    auto i32 = [&](bool v) { return b.create<mlir::arith::ConstantOp>(l, b.getI32IntegerAttr(v ? 1 : 0)); };
    args.push_back(i32(mlir::isa<mlir::linalg::MatmulTransposeAOp>(op.getOperation())));
    args.push_back(i32(mlir::isa<mlir::linalg::MatmulTransposeBOp>(op.getOperation())));
    args.push_back(b.create<mlir::arith::ConstantOp>(l, b.getF32FloatAttr(beta)));
    b.create<mlir::func::CallOp>(l, callee, mlir::TypeRange{}, args);
    op->erase();
  }
}

// The `approximated` stage: erf, tanh, exp, log & co. become MLIR's
// polynomial approximations (arith only, about 1 ulp in f32) instead of libm
// calls, so LLVM's loop vectorizer handles GELU and sigmoid epilogues too (a
// scalar erff per element was ~15 ns: 100 ms of ViT-B's run at batch 1).
void approximateMath(mlir::ModuleOp module) {
  mlir::RewritePatternSet patterns(module.getContext());
  mlir::populateMathPolynomialApproximationPatterns(patterns);
  FRICTION_CHECK(mlir::succeeded(mlir::applyPatternsAndFoldGreedily(module, std::move(patterns))),
                 "codegen: math approximation did not converge");
}

void lower(Jit& jit, mlir::ModuleOp module, const CodegenOptions& options,
           std::vector<std::pair<std::string, std::string>>* dump) {
  bool dumpStderr = std::getenv("FRICTION_CG_DUMP") != nullptr;
  auto record = [&](const char* name) {
    if (dump) dump->emplace_back(name, print(module));
    if (dumpStderr) std::cerr << "// ----- codegen stage: " << name << " -----\n" << print(module) << "\n";
  };
  record("built");
  Diagnostics diags(jit.ctx);
  FRICTION_CHECK(mlir::succeeded(mlir::verify(module)), "codegen: the built module does not verify:\n" + diags.text);
  if (!std::getenv("FRICTION_CG_NO_INTERCHANGE")) {
    interchangeContractions(module, !options.ukernels);
    record("interchanged");
  }
  for (auto& [name, add] : stages()) {
    mlir::PassManager pm(&jit.ctx);
    add(pm);
    FRICTION_CHECK(mlir::succeeded(pm.run(module)),
                   std::string("codegen: stage '") + name + "' failed:\n" + diags.text);
    if (std::string(name) == "bufferized") {
      for (auto fn : module.getOps<mlir::func::FuncOp>())
        FRICTION_CHECK(fn.getNumResults() == 0 || fn.isDeclaration(),
                       "codegen: bufferization did not write " + fn.getName().str() + "'s results in place");
    }
    record(name);
    if (std::string(name) == "bufferized" && options.ukernels) {
      callMicrokernels(module);
      FRICTION_CHECK(mlir::succeeded(mlir::verify(module)), "codegen: microkernel calls do not verify:\n" + diags.text);
      record("ukernels");
    }
    if (std::string(name) == "loops") {
      approximateMath(module);
      record("approximated");
    }
  }
}

}  // namespace

CompiledBatch compileKernels(const std::vector<const Node*>& nodes, const CodegenOptions& codegen) {
  Jit& jit = Jit::get();
  std::lock_guard<std::mutex> lock(jit.mu);
  CompiledBatch out;
  auto t0 = Clock::now();
  auto module = buildModule(jit, nodes);
  out.buildMs = msSince(t0);
  t0 = Clock::now();
  lower(jit, *module, codegen, nullptr);
  out.lowerMs = msSince(t0);
  t0 = Clock::now();

  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  FRICTION_CHECK(bool(jtmb), "codegen: cannot detect the host target: " + llvm::toString(jtmb.takeError()));
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto tm = jtmb->createTargetMachine();
  FRICTION_CHECK(bool(tm), "codegen: no target machine: " + llvm::toString(tm.takeError()));
  auto transformer = mlir::makeOptimizingTransformer(kLlvmOptLevel, 0, tm->get());
  mlir::ExecutionEngineOptions options;
  options.transformer = transformer;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  llvm::SmallVector<llvm::StringRef> libs = {FRICTION_MLIR_C_RUNNER_UTILS};
  options.sharedLibPaths = libs;
  options.enableGDBNotificationListener = false;
  options.enablePerfNotificationListener = false;
  Diagnostics diags(jit.ctx);
  auto engine = mlir::ExecutionEngine::create(*module, options);
  FRICTION_CHECK(bool(engine), "codegen: JIT failed: " + llvm::toString(engine.takeError()) + "\n" + diags.text);
  std::shared_ptr<mlir::ExecutionEngine> owner(std::move(*engine));
  owner->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap map;
    for (const auto& [name, address] : microkernelSymbols())
      map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(address), llvm::JITSymbolFlags::Exported};
    return map;
  });
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto fn = owner->lookupPacked("_mlir_ciface_k" + std::to_string(i));
    FRICTION_CHECK(bool(fn), "codegen: kernel symbol missing: " + llvm::toString(fn.takeError()));
    out.entries.push_back(*fn);
  }
  out.owner = owner;
  out.jitMs = msSince(t0);
  return out;
}

std::vector<std::pair<std::string, std::string>> kernelStages(const Node& node, const CodegenOptions& codegen) {
  Jit& jit = Jit::get();
  std::lock_guard<std::mutex> lock(jit.mu);
  auto module = buildModule(jit, {&node});
  std::vector<std::pair<std::string, std::string>> dump;
  lower(jit, *module, codegen, &dump);
  return dump;
}

// ---- Ahead-of-time: the same kernels as compileKernels, as an object file ----

namespace {

// A target machine for the host CPU that emits position-independent code
// (the object is linked into a shared library).
std::unique_ptr<llvm::TargetMachine> hostObjectTargetMachine() {
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  FRICTION_CHECK(bool(jtmb), "codegen: cannot detect the host target: " + llvm::toString(jtmb.takeError()));
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  jtmb->setRelocationModel(llvm::Reloc::PIC_);
  jtmb->setCodeModel(llvm::CodeModel::Small);
  auto tm = jtmb->createTargetMachine();
  FRICTION_CHECK(bool(tm), "codegen: no target machine: " + llvm::toString(tm.takeError()));
  return std::move(*tm);
}

// What mlir::ExecutionEngine's lookupPacked finds in a JIT: for each kernel's
// C interface `_mlir_ciface_<name>(desc*...)`, a `_mlir__mlir_ciface_<name>(void**)`
// wrapper unpacking a type-erased argument list (CompiledBatch::entries' PackedFn).
void addPackedWrappers(llvm::Module& m, const std::vector<std::string>& names) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  for (const std::string& name : names) {
    llvm::Function* fn = m.getFunction("_mlir_ciface_" + name);
    FRICTION_CHECK(fn && !fn->isDeclaration(), "codegen: no C interface for kernel " + name);
    auto* type = llvm::FunctionType::get(b.getVoidTy(), b.getPtrTy(), false);
    auto* packed = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, packedSymbol(name), m);
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", packed));
    llvm::SmallVector<llvm::Value*> args;
    for (auto [i, arg] : llvm::enumerate(fn->args())) {
      llvm::Value* slot = b.CreateGEP(b.getPtrTy(), packed->getArg(0), b.getInt64(i));
      args.push_back(b.CreateLoad(arg.getType(), b.CreateLoad(b.getPtrTy(), slot)));
    }
    b.CreateCall(fn, args);
    b.CreateRetVoid();
  }
}

}  // namespace

std::string packedSymbol(const std::string& name) { return "_mlir__mlir_ciface_" + name; }

HostCpu hostCpu() {
  HostCpu h;
  h.name = llvm::sys::getHostCPUName().str();
  for (const auto& f : llvm::sys::getHostCPUFeatures())
    if (f.getValue()) h.features.push_back(f.getKey().str());
  std::sort(h.features.begin(), h.features.end());
  return h;
}

ObjectStats emitKernelObject(const std::vector<const Node*>& nodes, const std::vector<std::string>& names,
                             const CodegenOptions& codegen, const std::string& path) {
  FRICTION_CHECK(nodes.size() == names.size(), "codegen: one name per kernel");
  Jit& jit = Jit::get();
  std::lock_guard<std::mutex> lock(jit.mu);
  ObjectStats out;
  auto t0 = Clock::now();
  auto module = buildModule(jit, nodes);
  size_t i = 0;
  for (auto fn : module->getOps<mlir::func::FuncOp>()) fn.setSymName(names.at(i++));
  out.buildMs = msSince(t0);
  t0 = Clock::now();
  lower(jit, *module, codegen, nullptr);
  out.lowerMs = msSince(t0);
  t0 = Clock::now();
  Diagnostics diags(jit.ctx);
  llvm::LLVMContext llvmCtx;
  auto llvmModule = mlir::translateModuleToLLVMIR(*module, llvmCtx, "friction_aot");
  FRICTION_CHECK(llvmModule != nullptr, "codegen: translation to LLVM IR failed:\n" + diags.text);
  auto tm = hostObjectTargetMachine();
  mlir::ExecutionEngine::setupTargetTripleAndDataLayout(llvmModule.get(), tm.get());
  addPackedWrappers(*llvmModule, names);
  if (auto err = mlir::makeOptimizingTransformer(kLlvmOptLevel, 0, tm.get())(llvmModule.get()))
    throw Error("codegen: LLVM O3 failed: " + llvm::toString(std::move(err)));
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  FRICTION_CHECK(!ec, "codegen: cannot write '" + path + "': " + ec.message());
  llvm::legacy::PassManager pm;
  FRICTION_CHECK(!tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile),
                 "codegen: the host target cannot emit object files");
  pm.run(*llvmModule);
  os.flush();
  FRICTION_CHECK(!os.has_error(), "codegen: writing '" + path + "' failed");
  out.objectMs = msSince(t0);
  return out;
}

}  // namespace friction::codegen
