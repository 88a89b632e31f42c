// The `ukernels` stage: named matmuls on buffers become calls of friction's
// SGEMM microkernel (codegen/Microkernels.h), as a rewrite pattern.
#include "codegen/Microkernels.h"
#include "codegen/mlir/Context.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace friction::codegen {
namespace {

// A linalg.matmul / matmul_transpose_a / matmul_transpose_b / batch_matmul
// on buffers becomes `call @friction_sgemm(A, B, C, transA, transB, beta)`
// (or `_batched`) on strided dynamic memrefs: leading dimensions and offsets
// travel in the descriptors. A zero fill of C just before it is dropped (the
// call overwrites: beta = 0). Operands the callee type cannot take (a
// non-unit inner stride) do not match: they stay linalg and become loops.
class SgemmCall : public mlir::OpInterfaceRewritePattern<mlir::linalg::LinalgOp> {
 public:
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  mlir::LogicalResult matchAndRewrite(mlir::linalg::LinalgOp op, mlir::PatternRewriter& rewriter) const override {
    mlir::Operation* o = op.getOperation();
    if (!op.hasPureBufferSemantics() || !mlir::isa<mlir::linalg::MatmulOp, mlir::linalg::MatmulTransposeAOp,
                                                   mlir::linalg::MatmulTransposeBOp, mlir::linalg::BatchMatmulOp>(o))
      return mlir::failure();
    bool batched = mlir::isa<mlir::linalg::BatchMatmulOp>(o);
    mlir::MemRefType calleeType = stridedF32(rewriter, batched ? 3 : 2);
    llvm::SmallVector<mlir::Value> operands = {op.getDpsInputs()[0], op.getDpsInputs()[1], op.getDpsInits()[0]};
    for (mlir::Value v : operands)
      if (!mlir::memref::CastOp::areCastCompatible(mlir::TypeRange{v.getType()}, mlir::TypeRange{calleeType}))
        return mlir::failure();
    const char* callee = batched ? kSgemmBatchedCallee : kSgemmCallee;
    declare(rewriter, op->getParentOfType<mlir::ModuleOp>(), callee, calleeType);
    rewriter.setInsertionPoint(op);
    mlir::Location l = op.getLoc();
    float beta = 1.f;
    if (auto fill = mlir::dyn_cast_or_null<mlir::linalg::FillOp>(op->getPrevNode())) {
      auto c = fill.getInputs()[0].getDefiningOp<mlir::arith::ConstantOp>();
      auto value = c ? mlir::dyn_cast<mlir::FloatAttr>(c.getValue()) : nullptr;
      if (fill.getOutputs()[0] == operands[2] && value && value.getValueAsDouble() == 0.0) {
        rewriter.eraseOp(fill);
        beta = 0.f;
      }
    }
    llvm::SmallVector<mlir::Value> args;
    for (mlir::Value v : operands) args.push_back(rewriter.create<mlir::memref::CastOp>(l, calleeType, v));
    auto flag = [&](bool v) { return rewriter.create<mlir::arith::ConstantOp>(l, rewriter.getI32IntegerAttr(v ? 1 : 0)); };
    args.push_back(flag(mlir::isa<mlir::linalg::MatmulTransposeAOp>(o)));
    args.push_back(flag(mlir::isa<mlir::linalg::MatmulTransposeBOp>(o)));
    args.push_back(rewriter.create<mlir::arith::ConstantOp>(l, rewriter.getF32FloatAttr(beta)));
    rewriter.create<mlir::func::CallOp>(l, callee, mlir::TypeRange{}, args);
    rewriter.eraseOp(op);
    return mlir::success();
  }

 private:
  // memref<?x?xf32, strided<[?, 1], offset: ?>> (rank 2) or the rank-3 form.
  static mlir::MemRefType stridedF32(mlir::OpBuilder& b, int rank) {
    const int64_t dyn = mlir::ShapedType::kDynamic;
    llvm::SmallVector<int64_t> shape(size_t(rank), dyn), strides(size_t(rank), dyn);
    strides.back() = 1;
    return mlir::MemRefType::get(shape, b.getF32Type(), mlir::StridedLayoutAttr::get(b.getContext(), dyn, strides));
  }

  // The private declaration of `name` with a C interface, once per module.
  static void declare(mlir::PatternRewriter& rewriter, mlir::ModuleOp module, const char* name, mlir::MemRefType t) {
    if (module.lookupSymbol(name)) return;
    mlir::OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(module.getBody());
    auto fn = rewriter.create<mlir::func::FuncOp>(
        rewriter.getUnknownLoc(), name,
        rewriter.getFunctionType({t, t, t, rewriter.getI32Type(), rewriter.getI32Type(), rewriter.getF32Type()}, {}));
    fn.setPrivate();
    fn->setAttr("llvm.emit_c_interface", rewriter.getUnitAttr());
  }
};

}  // namespace

void callMicrokernels(mlir::ModuleOp module, const CodegenOptions&) {
  llvm::SmallVector<mlir::linalg::LinalgOp> candidates;
  module.walk([&](mlir::linalg::LinalgOp op) { candidates.push_back(op); });
  // One application per op, in program order; no folding of anything else.
  mlir::PatternRewriter rewriter(module.getContext());
  SgemmCall pattern(module.getContext());
  for (mlir::linalg::LinalgOp op : candidates) {
    rewriter.setInsertionPoint(op);
    (void)pattern.matchAndRewrite(op, rewriter);
  }
}

}  // namespace friction::codegen
