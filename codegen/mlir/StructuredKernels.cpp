// The Structured kernels of the GPU targets (codegen/StructuredOps.def): one
// op each, as linalg on tensors in destination-passing style like every other
// kernel, so the same stages turn them into parallel loop nests and PTX.
// Data movement is one copy generic per piece into a slice of the result
// (never tensor.insert_slice of a whole input: bufferized, that is a
// memref.copy, which no loop nest carries to the GPU); reductions are a fill
// and one generic whose output map keeps the reduced dims at 0; pooling is a
// fill and one generic per window cell over the outputs it reaches, like the
// convolutions of KernelBuilder.cpp. Each build function mirrors the
// interpreter's semantics of its op (runtime/interp/kernels/).
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "codegen/KernelAnalysis.h"
#include "codegen/mlir/Context.h"
#include "ir/Error.h"
#include "ir/ops/NnShapes.h"
#include "ir/ops/TensorShapes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace friction::codegen {
namespace {

using Ints = std::vector<int64_t>;
using Iter = mlir::utils::IteratorType;
using BodyFn = std::function<void(mlir::OpBuilder&, mlir::Location, mlir::ValueRange)>;

// The body of a copy: yield the input.
void copyBody(mlir::OpBuilder& pb, mlir::Location l, mlir::ValueRange v) {
  pb.create<mlir::linalg::YieldOp>(l, mlir::ValueRange{v[0]});
}

int64_t normalized(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

// What the build functions share: the builder, the node, its arguments
// (aligned with the node's inputs; null where an input is a constant) and
// the result's initial tensor.
struct Structured {
  mlir::OpBuilder& b;
  mlir::Location loc;
  const Node& n;
  std::vector<mlir::Value> args;
  mlir::Value init;
  std::vector<mlir::Value> scratch;  // statistics buffers (StructuredOps.def), updated by the build function

  mlir::MLIRContext* ctx() { return b.getContext(); }
  Ints shapeOf(size_t input) const { return n.input(input)->shape().staticDims(); }
  Ints resultShape() const { return n.output(0)->shape().staticDims(); }
  mlir::Value f32(double v) { return b.create<mlir::arith::ConstantOp>(loc, b.getF32FloatAttr(float(v))); }
  mlir::AffineExpr dim(size_t i) { return b.getAffineDimExpr(unsigned(i)); }
  mlir::AffineMap map(size_t dims, llvm::ArrayRef<mlir::AffineExpr> exprs) {
    return mlir::AffineMap::get(unsigned(dims), 0, exprs, ctx());
  }
  mlir::AffineMap identity(size_t dims) { return b.getMultiDimIdentityMap(unsigned(dims)); }
  // Static offsets, sizes or strides of a slice.
  llvm::SmallVector<mlir::OpFoldResult> indices(const Ints& v) {
    llvm::SmallVector<mlir::OpFoldResult> r;
    for (int64_t x : v) r.push_back(b.getIndexAttr(x));
    return r;
  }
  // numpy broadcasting: a value of shape `xs` read at the index of `ys` (right-aligned, size-1 dims at 0).
  mlir::AffineMap broadcast(const Ints& xs, const Ints& ys) {
    llvm::SmallVector<mlir::AffineExpr> e;
    for (size_t i = 0, off = ys.size() - xs.size(); i < xs.size(); ++i)
      e.push_back(xs[i] == ys[i + off] ? dim(i + off) : b.getAffineConstantExpr(0));
    return map(ys.size(), e);
  }
  mlir::RankedTensorType type(const Ints& shape) { return mlir::RankedTensorType::get(shape, b.getF32Type()); }

  mlir::Value generic(mlir::ValueRange ins, mlir::Value out, llvm::ArrayRef<mlir::AffineMap> maps,
                      llvm::ArrayRef<Iter> iters, const BodyFn& body) {
    return b.create<mlir::linalg::GenericOp>(loc, mlir::TypeRange{out.getType()}, ins, mlir::ValueRange{out}, maps,
                                             iters, body)
        .getResult(0);
  }
  mlir::Value fill(mlir::Value out, double value) {
    return b.create<mlir::linalg::FillOp>(loc, mlir::ValueRange{f32(value)}, mlir::ValueRange{out}).getResult(0);
  }
  // out = f(out) elementwise, in place.
  mlir::Value mapInPlace(mlir::Value out, const std::function<mlir::Value(mlir::OpBuilder&, mlir::Location, mlir::Value)>& f) {
    size_t r = size_t(mlir::cast<mlir::RankedTensorType>(out.getType()).getRank());
    return generic({}, out, {identity(r)}, llvm::SmallVector<Iter>(r, Iter::parallel),
                   [&](mlir::OpBuilder& pb, mlir::Location l, mlir::ValueRange v) {
                     pb.create<mlir::linalg::YieldOp>(l, mlir::ValueRange{f(pb, l, v[0])});
                   });
  }
  // out *= factor, in place.
  mlir::Value scaleInPlace(mlir::Value out, double factor) {
    return mapInPlace(out, [factor](mlir::OpBuilder& pb, mlir::Location l, mlir::Value a) {
      return pb.create<mlir::arith::MulFOp>(l, a, pb.create<mlir::arith::ConstantOp>(l, pb.getF32FloatAttr(float(factor))))
          .getResult();
    });
  }
  // dest[offsets + strides * i] = src[i]: a copy generic into a slice of `dest`.
  mlir::Value copyInto(mlir::Value src, mlir::AffineMap srcMap, mlir::Value dest, const Ints& offsets, const Ints& sizes) {
    auto off = indices(offsets), size = indices(sizes), ones = indices(Ints(sizes.size(), 1));
    mlir::Value slice = b.create<mlir::tensor::ExtractSliceOp>(loc, type(sizes), dest, off, size, ones);
    mlir::Value copied = generic({src}, slice, {srcMap, identity(sizes.size())},
                                 llvm::SmallVector<Iter>(sizes.size(), Iter::parallel),
                                 copyBody);
    return b.create<mlir::tensor::InsertSliceOp>(loc, copied, dest, off, size, ones);
  }
};

// y = transpose(x, perm): y[i] = x[i permuted back].
mlir::Value buildTranspose(Structured& s) {
  const Ints xs = s.shapeOf(0);
  const size_t r = xs.size();
  Ints perm = s.n.attrInts("perm");
  if (perm.empty()) perm.resize(r), std::iota(perm.rbegin(), perm.rend(), 0);  // default: reverse
  FRICTION_CHECK(perm.size() == r, s.n.describe() + ": perm has the wrong length");
  llvm::SmallVector<mlir::AffineExpr> xe(r);
  for (size_t i = 0; i < r; ++i) xe[size_t(normalized(perm[i], int64_t(r)))] = s.dim(i);  // y dim i reads x dim perm[i]
  return s.generic({s.args[0]}, s.init, {s.map(r, xe), s.identity(r)}, llvm::SmallVector<Iter>(r, Iter::parallel),
                   copyBody);
}

// y = x broadcast (numpy, right-aligned) to the result's shape.
mlir::Value buildExpand(Structured& s) {
  const Ints xs = s.shapeOf(0), ys = s.resultShape();
  FRICTION_CHECK(xs.size() <= ys.size(), s.n.describe() + ": Expand to a lower rank");
  return s.generic({s.args[0]}, s.init, {s.broadcast(xs, ys), s.identity(ys.size())},
                   llvm::SmallVector<Iter>(ys.size(), Iter::parallel),
                   copyBody);
}

// y[i] = x[start + i * step] per sliced axis: the forward axes as a strided
// slice, then a copy that reads the backward axes (negative steps) through
// `d * step + start`. (A generic reading a forward axis that way would, for
// step 1 and start 0, claim x's extent as the loop's.)
mlir::Value buildSlice(Structured& s) {
  const Ints xs = s.shapeOf(0), ys = s.resultShape();
  const size_t r = xs.size();
  auto starts = constantInts(s.n, 1), ends = constantInts(s.n, 2);
  FRICTION_CHECK(starts && ends, s.n.describe() + ": Slice without starts and ends");
  Ints offsets(r, 0), sizes = xs, strides(r, 1);
  llvm::SmallVector<mlir::AffineExpr> xe;
  for (size_t i = 0; i < r; ++i) xe.push_back(s.dim(i));
  for (SliceAxis a : sliceAxes(int64_t(r), *starts, *ends, constantInts(s.n, 3), constantInts(s.n, 4))) {
    const size_t axis = size_t(a.axis);
    FRICTION_CHECK(clampSlice(xs[axis], a) == ys[axis], s.n.describe() + ": Slice result disagrees with its type");
    if (a.step > 0) offsets[axis] = a.start, sizes[axis] = ys[axis], strides[axis] = a.step;
    else xe[axis] = s.dim(axis) * a.step + a.start;
  }
  mlir::Value x = s.b.create<mlir::tensor::ExtractSliceOp>(s.loc, s.type(sizes), s.args[0], s.indices(offsets),
                                                          s.indices(sizes), s.indices(strides));
  return s.generic({x}, s.init, {s.map(r, xe), s.identity(r)}, llvm::SmallVector<Iter>(r, Iter::parallel), copyBody);
}

// Each input copied into its slab of the result along `axis`.
mlir::Value buildConcat(Structured& s) {
  const Ints ys = s.resultShape();
  const size_t axis = size_t(normalized(s.n.attrInt("axis", 0), int64_t(ys.size())));
  FRICTION_CHECK(axis < ys.size(), s.n.describe() + ": Concat axis out of range");
  mlir::Value acc = s.init;
  int64_t at = 0;
  for (size_t i = 0; i < s.n.numInputs(); ++i) {
    if (!s.args[i]) continue;
    const Ints xs = s.shapeOf(i);
    Ints offsets(ys.size(), 0);
    offsets[axis] = at;
    acc = s.copyInto(s.args[i], s.identity(xs.size()), acc, offsets, xs);
    at += xs[axis];
  }
  FRICTION_CHECK(at == ys[axis], s.n.describe() + ": Concat inputs do not add up to the result");
  return acc;
}

// The value everywhere, then x copied into the interior (constant mode, no crops).
mlir::Value buildPad(Structured& s) {
  const Ints xs = s.shapeOf(0);
  const ConstantPad pad = constantPad(s.n);
  Ints offsets(pad.pads.begin(), pad.pads.begin() + int64_t(xs.size()));
  return s.copyInto(s.args[0], s.identity(xs.size()), s.fill(s.init, pad.value), offsets, xs);
}

// y = (x - mean) * scale / sqrt(var + epsilon) + B, per channel (dim 1).
mlir::Value buildBatchNorm(Structured& s) {
  FRICTION_CHECK(s.n.attrInt("training_mode", 0) == 0, s.n.describe() + ": BatchNormalization in training mode");
  const Ints xs = s.shapeOf(0);
  const size_t r = xs.size();
  FRICTION_CHECK(r >= 2 && s.args.size() == 5, s.n.describe() + ": BatchNormalization without a channel axis or parameters");
  for (size_t i = 1; i < 5; ++i)
    FRICTION_CHECK(s.args[i] && s.shapeOf(i) == Ints{xs[1]}, s.n.describe() + ": parameters are not one per channel");
  const float eps = s.n.attrFloat("epsilon", 1e-5f);
  mlir::AffineMap channel = s.map(r, {s.dim(1)});
  return s.generic({s.args[0], s.args[1], s.args[2], s.args[3], s.args[4]}, s.init,
                   {s.identity(r), channel, channel, channel, channel, s.identity(r)},
                   llvm::SmallVector<Iter>(r, Iter::parallel),
                   [eps](mlir::OpBuilder& pb, mlir::Location l, mlir::ValueRange v) {
                     mlir::Value e = pb.create<mlir::arith::ConstantOp>(l, pb.getF32FloatAttr(eps));
                     mlir::Value sd = pb.create<mlir::math::SqrtOp>(l, pb.create<mlir::arith::AddFOp>(l, v[4], e));
                     mlir::Value c = pb.create<mlir::arith::SubFOp>(l, v[0], v[3]);
                     mlir::Value y = pb.create<mlir::arith::DivFOp>(l, pb.create<mlir::arith::MulFOp>(l, c, v[1]), sd);
                     pb.create<mlir::linalg::YieldOp>(l, mlir::ValueRange{pb.create<mlir::arith::AddFOp>(l, y, v[2])});
                   });
}

// The Reduce ops and the global pools: the result filled with the
// reduction's identity, one generic over x accumulating into it (the reduced
// dims read as 0 of the result: the kept dims of 1, or dropped ones), then
// the finishing map (mean, sqrt, log).
mlir::Value buildReduce(Structured& s) {
  const std::string& op = s.n.op();
  const Ints xs = s.shapeOf(0);
  const int64_t r = int64_t(xs.size());
  const bool global = op == "GlobalAveragePool" || op == "GlobalMaxPool";
  const std::vector<bool> reduced = reducedDims(s.n);
  int64_t count = 1;
  for (int64_t d = 0; d < r; ++d)
    if (reduced[size_t(d)]) count *= xs[size_t(d)];
  const bool keep = global || s.n.attrInt("keepdims", 1) != 0;
  llvm::SmallVector<mlir::AffineExpr> ye;
  llvm::SmallVector<Iter> iters;
  for (int64_t d = 0; d < r; ++d) {
    iters.push_back(reduced[size_t(d)] ? Iter::reduction : Iter::parallel);
    if (!reduced[size_t(d)]) ye.push_back(s.dim(size_t(d)));
    else if (keep) ye.push_back(s.b.getAffineConstantExpr(0));
  }
  const bool isMax = op == "ReduceMax" || op == "GlobalMaxPool", isMin = op == "ReduceMin";
  const double inf = std::numeric_limits<double>::infinity();
  mlir::Value acc = s.fill(s.init, isMax ? -inf : isMin ? inf : 0.0);
  acc = s.generic({s.args[0]}, acc, {s.identity(size_t(r)), s.map(size_t(r), ye)}, iters,
                  [&](mlir::OpBuilder& pb, mlir::Location l, mlir::ValueRange v) {
                    mlir::Value x = v[0], a = v[1], y;
                    // std::max(a, x) and std::min(a, x), as the interpreter reduces: x only when it compares.
                    auto pick = [&](mlir::Value lhs, mlir::Value rhs) {
                      mlir::Value takeX = pb.create<mlir::arith::CmpFOp>(l, mlir::arith::CmpFPredicate::OLT, lhs, rhs);
                      return pb.create<mlir::arith::SelectOp>(l, takeX, x, a).getResult();
                    };
                    if (isMax) y = pick(a, x);
                    else if (isMin) y = pick(x, a);
                    else if (op == "ReduceSumSquare" || op == "ReduceL2")
                      y = pb.create<mlir::arith::AddFOp>(l, a, pb.create<mlir::arith::MulFOp>(l, x, x));
                    else if (op == "ReduceL1") y = pb.create<mlir::arith::AddFOp>(l, a, pb.create<mlir::math::AbsFOp>(l, x));
                    else y = pb.create<mlir::arith::AddFOp>(l, a, x);
                    pb.create<mlir::linalg::YieldOp>(l, mlir::ValueRange{y});
                  });
  if (op == "ReduceMean" || op == "GlobalAveragePool") return s.scaleInPlace(acc, 1.0 / double(count));
  if (op == "ReduceL2")
    return s.mapInPlace(acc, [](mlir::OpBuilder& pb, mlir::Location l, mlir::Value a) {
      return pb.create<mlir::math::SqrtOp>(l, a).getResult();
    });
  if (op == "ReduceLogSum")
    return s.mapInPlace(acc, [](mlir::OpBuilder& pb, mlir::Location l, mlir::Value a) {
      return pb.create<mlir::math::LogOp>(l, a).getResult();
    });
  return acc;
}

// MaxPool and AveragePool (NCHW, any number of spatial dims): the result
// filled with -inf or 0, then one generic per window cell over the rectangle
// of outputs it reaches (padding is never read). (One generic over the whole
// window, as unpadded convolutions get, has no operand that gives the window
// dims their extent: linalg would need a shape-only window tensor, which
// bufferizes to a host allocation.) AveragePool then divides by the taps each output counts: the
// ones inside the input, or inside the padded input (count_include_pad),
// computed per dim from the output index.
mlir::Value buildPool(Structured& s) {
  const bool isMax = s.n.op() == "MaxPool";
  const Ints xs = s.shapeOf(0), ys = s.resultShape();
  FRICTION_CHECK(xs.size() >= 3 && ys.size() == xs.size(), s.n.describe() + ": pooling needs [N, C, spatial...]");
  const size_t d = xs.size() - 2, r = xs.size();
  const Window win = resolveWindow(s.n, {xs.begin() + 2, xs.end()});
  FRICTION_CHECK(win.outputSpatial({xs.begin() + 2, xs.end()}) == Ints(ys.begin() + 2, ys.end()),
                 s.n.describe() + ": pooling result disagrees with its type");
  mlir::Value acc = s.fill(s.init, isMax ? -std::numeric_limits<double>::infinity() : 0.0);
  auto accumulate = [isMax](mlir::OpBuilder& pb, mlir::Location l, mlir::ValueRange v) {
    mlir::Value y;
    if (isMax) {  // the interpreter's `x > best`: a NaN tap is never taken
      mlir::Value keep = pb.create<mlir::arith::CmpFOp>(l, mlir::arith::CmpFPredicate::OGT, v[0], v[1]);
      y = pb.create<mlir::arith::SelectOp>(l, keep, v[0], v[1]);
    } else {
      y = pb.create<mlir::arith::AddFOp>(l, v[1], v[0]);
    }
    pb.create<mlir::linalg::YieldOp>(l, mlir::ValueRange{y});
  };
  {
    for (int64_t cell = 0; cell < win.kernelSize(); ++cell) {
      std::optional<WindowCell> c = windowCell(win, xs, ys, cell);
      if (!c) continue;
      // [N, C] whole, then the cell's rectangle.
      Ints xOff = {0, 0}, yOff = {0, 0}, size = {xs[0], xs[1]}, xStride = {1, 1}, ones(r, 1);
      xOff.insert(xOff.end(), c->xOffsets.begin(), c->xOffsets.end());
      yOff.insert(yOff.end(), c->yOffsets.begin(), c->yOffsets.end());
      size.insert(size.end(), c->sizes.begin(), c->sizes.end());
      xStride.insert(xStride.end(), c->xStrides.begin(), c->xStrides.end());
      mlir::Value xc = s.b.create<mlir::tensor::ExtractSliceOp>(s.loc, s.type(size), s.args[0], s.indices(xOff), s.indices(size), s.indices(xStride));
      mlir::Value yc = s.b.create<mlir::tensor::ExtractSliceOp>(s.loc, s.type(size), acc, s.indices(yOff), s.indices(size), s.indices(ones));
      mlir::Value sum = s.generic({xc}, yc, {s.identity(r), s.identity(r)}, llvm::SmallVector<Iter>(r, Iter::parallel), accumulate);
      acc = s.b.create<mlir::tensor::InsertSliceOp>(s.loc, sum, acc, s.indices(yOff), s.indices(size), s.indices(ones));
    }
  }
  if (isMax) return acc;
  const bool includePad = s.n.attrInt("count_include_pad", 0) != 0;
  return s.generic({}, acc, {s.identity(r)}, llvm::SmallVector<Iter>(r, Iter::parallel),
                   [&](mlir::OpBuilder& pb, mlir::Location l, mlir::ValueRange v) {
                     auto index = [&](int64_t c) { return pb.create<mlir::arith::ConstantIndexOp>(l, c).getResult(); };
                     mlir::Value count = index(1);
                     for (size_t i = 0; i < d; ++i) {
                       // Taps k in [0, K) with lo <= o * stride - pad + k * dilation < hi.
                       const int64_t lo = includePad ? -win.pads[i] : 0, hi = xs[2 + i] + (includePad ? win.pads[i + d] : 0);
                       mlir::Value o = pb.create<mlir::linalg::IndexOp>(l, uint64_t(2 + i));
                       mlir::Value base = pb.create<mlir::arith::SubIOp>(
                           l, pb.create<mlir::arith::MulIOp>(l, o, index(win.strides[i])), index(win.pads[i]));
                       auto firstTap = [&](int64_t bound) {
                         mlir::Value t = pb.create<mlir::arith::CeilDivSIOp>(
                             l, pb.create<mlir::arith::SubIOp>(l, index(bound), base), index(win.dilations[i]));
                         return pb.create<mlir::arith::MinSIOp>(l, pb.create<mlir::arith::MaxSIOp>(l, t, index(0)),
                                                                index(win.kernel[i]))
                             .getResult();
                       };
                       mlir::Value taps = pb.create<mlir::arith::SubIOp>(l, firstTap(hi), firstTap(lo));
                       count = pb.create<mlir::arith::MulIOp>(l, count, pb.create<mlir::arith::MaxSIOp>(l, taps, index(0)));
                     }
                     mlir::Value n64 = pb.create<mlir::arith::IndexCastOp>(l, pb.getI64Type(), count);
                     mlir::Value nf = pb.create<mlir::arith::SIToFPOp>(l, pb.getF32Type(), n64);
                     pb.create<mlir::linalg::YieldOp>(l, mlir::ValueRange{pb.create<mlir::arith::DivFOp>(l, v[0], nf).getResult()});
                   });
}

mlir::Value yield(mlir::OpBuilder& pb, mlir::Location l, mlir::Value v) {
  pb.create<mlir::linalg::YieldOp>(l, mlir::ValueRange{v});
  return v;
}

// y[outer, q, inner] = data[outer, indices[q], inner] along `axis`: one
// generic over y reading the indices through a map and the data with
// tensor.extract at the computed index (negative indices count from the end;
// indices out of range, which the interpreter rejects, are clamped).
mlir::Value buildGather(Structured& s) {
  const Ints xs = s.shapeOf(0), qs = s.shapeOf(1), ys = s.resultShape();
  const size_t axis = size_t(normalized(s.n.attrInt("axis", 0), int64_t(xs.size())));
  FRICTION_CHECK(axis < xs.size() && ys.size() == xs.size() - 1 + qs.size(), s.n.describe() + ": Gather shapes disagree");
  llvm::SmallVector<mlir::AffineExpr> qe;
  for (size_t i = 0; i < qs.size(); ++i) qe.push_back(s.dim(axis + i));
  mlir::Value data = s.args[0];
  const int64_t extent = xs[axis];
  return s.generic({s.args[1]}, s.init, {s.map(ys.size(), qe), s.identity(ys.size())},
                   llvm::SmallVector<Iter>(ys.size(), Iter::parallel),
                   [&](mlir::OpBuilder& pb, mlir::Location l, mlir::ValueRange v) {
                     mlir::Value q = pb.create<mlir::arith::IndexCastOp>(l, pb.getIndexType(), v[0]);
                     mlir::Value zero = pb.create<mlir::arith::ConstantIndexOp>(l, 0);
                     mlir::Value negative = pb.create<mlir::arith::CmpIOp>(l, mlir::arith::CmpIPredicate::slt, q, zero);
                     mlir::Value wrapped = pb.create<mlir::arith::AddIOp>(l, q, pb.create<mlir::arith::ConstantIndexOp>(l, extent));
                     q = pb.create<mlir::arith::SelectOp>(l, negative, wrapped, q);
                     // Clamped into range: the interpreter rejects an index out of range, a GPU thread would read
                     // past the buffer.
                     q = pb.create<mlir::arith::MinSIOp>(l, pb.create<mlir::arith::MaxSIOp>(l, q, zero),
                                                         pb.create<mlir::arith::ConstantIndexOp>(l, extent - 1));
                     llvm::SmallVector<mlir::Value> at;
                     for (size_t d = 0; d < axis; ++d) at.push_back(pb.create<mlir::linalg::IndexOp>(l, uint64_t(d)));
                     at.push_back(q);
                     for (size_t d = axis + 1; d < xs.size(); ++d)
                       at.push_back(pb.create<mlir::linalg::IndexOp>(l, uint64_t(d - 1 + qs.size())));
                     yield(pb, l, pb.create<mlir::tensor::ExtractOp>(l, data, at));
                   });
}

// y = float(x): a Cast of i64 or i32 to f32 (the analysis admits no other).
mlir::Value buildCast(Structured& s) {
  const size_t r = s.resultShape().size();
  const bool toF32 = s.n.output(0)->dtype() == DType::F32;
  FRICTION_CHECK(toF32, s.n.describe() + ": only Casts to f32 are generated");
  return s.generic({s.args[0]}, s.init, {s.identity(r), s.identity(r)}, llvm::SmallVector<Iter>(r, Iter::parallel),
                   [](mlir::OpBuilder& pb, mlir::Location l, mlir::ValueRange v) {
                     yield(pb, l, pb.create<mlir::arith::SIToFPOp>(l, pb.getF32Type(), v[0]));
                   });
}

// What Softmax and LayerNormalization share: input 0's shape, the iterator
// types that reduce its normalized dims, and the map of a statistic (the
// normalized dims read at 0).
struct Statistics {
  Ints xs;
  llvm::SmallVector<Iter> reduce;
  mlir::AffineMap stat;
  int64_t count = 1;  // elements each statistic summarizes
  Statistics(Structured& s) : xs(s.shapeOf(0)) {
    std::vector<bool> dims = normalizedDims(s.n);
    llvm::SmallVector<mlir::AffineExpr> e;
    for (size_t d = 0; d < xs.size(); ++d) {
      reduce.push_back(dims[d] ? Iter::reduction : Iter::parallel);
      e.push_back(dims[d] ? s.b.getAffineConstantExpr(0) : s.dim(d));
      if (dims[d]) count *= xs[d];
    }
    stat = s.map(xs.size(), e);
  }
  llvm::SmallVector<Iter> parallel() const { return llvm::SmallVector<Iter>(xs.size(), Iter::parallel); }
};

// Softmax and LogSoftmax along `axis`: the maxima, the sums of exp(x - max),
// then exp(x - max) / sum or x - max - log(sum).
mlir::Value buildSoftmax(Structured& s) {
  Statistics st(s);
  const size_t r = st.xs.size();
  const bool log = s.n.op() == "LogSoftmax";
  mlir::Value mx = s.fill(s.scratch[0], -std::numeric_limits<double>::infinity());
  mx = s.generic({s.args[0]}, mx, {s.identity(r), st.stat}, st.reduce, [](mlir::OpBuilder& pb, mlir::Location l, mlir::ValueRange v) {
    mlir::Value larger = pb.create<mlir::arith::CmpFOp>(l, mlir::arith::CmpFPredicate::OGT, v[0], v[1]);
    yield(pb, l, pb.create<mlir::arith::SelectOp>(l, larger, v[0], v[1]));
  });
  mlir::Value sum = s.fill(s.scratch[1], 0.0);
  sum = s.generic({s.args[0], mx}, sum, {s.identity(r), st.stat, st.stat}, st.reduce,
                  [](mlir::OpBuilder& pb, mlir::Location l, mlir::ValueRange v) {
                    mlir::Value e = pb.create<mlir::math::ExpOp>(l, pb.create<mlir::arith::SubFOp>(l, v[0], v[1]));
                    yield(pb, l, pb.create<mlir::arith::AddFOp>(l, v[2], e));
                  });
  s.scratch = {mx, sum};
  return s.generic({s.args[0], mx, sum}, s.init, {s.identity(r), st.stat, st.stat, s.identity(r)}, st.parallel(),
                   [log](mlir::OpBuilder& pb, mlir::Location l, mlir::ValueRange v) {
                     mlir::Value c = pb.create<mlir::arith::SubFOp>(l, v[0], v[1]);
                     yield(pb, l, log ? pb.create<mlir::arith::SubFOp>(l, c, pb.create<mlir::math::LogOp>(l, v[2])).getResult()
                                      : pb.create<mlir::arith::DivFOp>(l, pb.create<mlir::math::ExpOp>(l, c), v[2]).getResult());
                   });
}

// The means, the (biased) variances, then (x - mean) / sqrt(var + epsilon) *
// scale + B, scale and B read through `param(k)`: input k's map from x's index.
mlir::Value normalize(Structured& s, const std::function<mlir::AffineMap(int)>& param) {
  Statistics st(s);
  const size_t r = st.xs.size();
  FRICTION_CHECK(s.args.size() >= 2 && s.args[1], s.n.describe() + ": " + s.n.op() + " without a scale");
  const float eps = s.n.attrFloat("epsilon", 1e-5f);
  auto scaled = [&](mlir::Value v) { return s.scaleInPlace(v, 1.0 / double(st.count)); };
  mlir::Value mean = s.generic({s.args[0]}, s.fill(s.scratch[0], 0.0), {s.identity(r), st.stat}, st.reduce,
                               [](mlir::OpBuilder& pb, mlir::Location l, mlir::ValueRange v) {
                                 yield(pb, l, pb.create<mlir::arith::AddFOp>(l, v[1], v[0]));
                               });
  mean = scaled(mean);
  mlir::Value var = s.generic({s.args[0], mean}, s.fill(s.scratch[1], 0.0), {s.identity(r), st.stat, st.stat}, st.reduce,
                              [](mlir::OpBuilder& pb, mlir::Location l, mlir::ValueRange v) {
                                mlir::Value c = pb.create<mlir::arith::SubFOp>(l, v[0], v[1]);
                                yield(pb, l, pb.create<mlir::arith::AddFOp>(l, v[2], pb.create<mlir::arith::MulFOp>(l, c, c)));
                              });
  var = scaled(var);
  s.scratch = {mean, var};
  const bool hasB = s.args.size() > 2 && s.args[2];
  llvm::SmallVector<mlir::Value> ins = {s.args[0], mean, var, s.args[1]};
  llvm::SmallVector<mlir::AffineMap> maps = {s.identity(r), st.stat, st.stat, param(1)};
  if (hasB) ins.push_back(s.args[2]), maps.push_back(param(2));
  maps.push_back(s.identity(r));
  return s.generic(ins, s.init, maps, st.parallel(), [eps, hasB](mlir::OpBuilder& pb, mlir::Location l, mlir::ValueRange v) {
    mlir::Value e = pb.create<mlir::arith::ConstantOp>(l, pb.getF32FloatAttr(eps));
    mlir::Value sd = pb.create<mlir::math::SqrtOp>(l, pb.create<mlir::arith::AddFOp>(l, v[2], e));
    mlir::Value y = pb.create<mlir::arith::MulFOp>(
        l, pb.create<mlir::arith::DivFOp>(l, pb.create<mlir::arith::SubFOp>(l, v[0], v[1]), sd), v[3]);
    yield(pb, l, hasB ? pb.create<mlir::arith::AddFOp>(l, y, v[4]).getResult() : y);
  });
}

// LayerNormalization over `axis` to the last dim, scale and B broadcast over
// the normalized dims.
mlir::Value buildLayerNorm(Structured& s) {
  const Ints xs = s.shapeOf(0);
  return normalize(s, [&](int k) { return s.broadcast(s.shapeOf(k), xs); });
}

// InstanceNormalization over each image plane, scale and B one per channel.
mlir::Value buildInstanceNorm(Structured& s) {
  const size_t r = s.shapeOf(0).size();
  return normalize(s, [&](int) { return s.map(r, {s.dim(1)}); });
}

}  // namespace

std::vector<mlir::Value> buildStructuredKernel(mlir::OpBuilder& b, const Node& n, const std::vector<mlir::Value>& args,
                                               mlir::Value init, const std::vector<mlir::Value>& scratch) {
  using BuildFn = mlir::Value (*)(Structured&);
  static const std::unordered_map<std::string, BuildFn> table = {
#define FRICTION_STRUCTURED_OP(op, arguments, statistics, build) {#op, &build},
#include "codegen/StructuredOps.def"
#undef FRICTION_STRUCTURED_OP
  };
  auto it = table.find(n.op());
  FRICTION_CHECK(it != table.end(), "codegen: no structured kernel for " + n.op());
  Structured s{b, b.getUnknownLoc(), n, args, init, scratch};
  std::vector<mlir::Value> results = {it->second(s)};
  results.insert(results.end(), s.scratch.begin(), s.scratch.end());
  return results;
}

}  // namespace friction::codegen
