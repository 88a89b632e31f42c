// Tensor (data movement) ops: shape inference incl. symbolic shape tracking,
// and exact interpreter results on small graphs.
#include <gtest/gtest.h>

#include <numeric>

#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Specialize.h"
#include "runtime/interp/Interpreter.h"

using namespace friction;

namespace {

using I64s = std::vector<int64_t>;
using F32s = std::vector<float>;

Tensor f32(I64s shape, F32s v) { return Tensor::fromVector<float>(DType::F32, std::move(shape), v); }
Tensor iota(I64s shape) {
  F32s v(size_t(checkedNumel(shape)));
  std::iota(v.begin(), v.end(), 0.0f);
  return f32(std::move(shape), v);
}
Attribute ints(I64s v) { return v; }

// Builds a one-op graph over input x (given data) and extra constant inputs, runs it.
struct OneOp {
  Graph g;
  GraphBuilder b{g};
  std::vector<Tensor> run(const std::string& op, const Tensor& x, std::vector<Tensor> consts,
                          std::map<std::string, Attribute> attrs = {}, size_t numOutputs = 1) {
    std::vector<Value*> ins{b.input("x", x.type())};
    for (Tensor& c : consts) ins.push_back(c.defined() ? b.constant(c) : nullptr);
    for (Value* v : b.opN(op, ins, numOutputs, std::move(attrs))) {
      outTypes.push_back(v->type());
      b.output(v);
    }
    return interp::run(g, {x});
  }
  std::vector<TensorType> outTypes;
};

std::vector<double> values(const Tensor& t) { return t.toDoubleVector(); }

}  // namespace

// x:[N,3,8,8] -> Shape -> Gather(0) -> Unsqueeze -> Concat with [-1] -> Reshape: [N,192].
TEST(TensorOps, PyTorchFlattenKeepsSymbolicBatch) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, Shape{Dim::sym("N"), 3, 8, 8}});
  Value* shape = b.op("Shape", {x});
  Value* n = b.op("Gather", {shape, b.constant(Tensor::scalarI64(0))}, {{"axis", int64_t(0)}});
  Value* n1 = b.op("Unsqueeze", {n, b.constant(Tensor::vectorI64({0}))});
  Value* target = b.op("Concat", {n1, b.constant(Tensor::vectorI64({-1}))}, {{"axis", int64_t(0)}});
  Value* y = b.op("Reshape", {x, target});
  b.output(y);
  EXPECT_EQ(shape->knownContents()->at(0), Dim::sym("N"));
  EXPECT_EQ(n->shape(), Shape{});
  EXPECT_EQ(target->shape(), (Shape{2}));
  EXPECT_EQ(y->shape(), (Shape{Dim::sym("N"), 192}));

  Tensor in = iota({2, 3, 8, 8});
  Tensor out = interp::run(g, {in})[0];
  EXPECT_EQ(out.shape(), (I64s{2, 192}));
  EXPECT_EQ(values(out), values(in));

  bindInputDims(g, {{"N", 2}});
  EXPECT_EQ(y->shape(), (Shape{2, 192}));
}

// ViT: Expand(cls[1,1,D], [N,1,D]) then Concat with the patch tokens along axis 1.
TEST(TensorOps, VitClassTokenConcat) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, Shape{Dim::sym("N"), 4, 8}});
  Value* cls = b.constant(iota({1, 1, 8}), "cls");
  Value* n = b.op("Gather", {b.op("Shape", {x}), b.constant(Tensor::scalarI64(0))});
  Value* n1 = b.op("Unsqueeze", {n, b.constant(Tensor::vectorI64({0}))});
  Value* shape = b.op("Concat", {n1, b.constant(Tensor::vectorI64({1})), b.constant(Tensor::vectorI64({8}))},
                      {{"axis", int64_t(0)}});
  Value* e = b.op("Expand", {cls, shape});
  Value* y = b.op("Concat", {e, x}, {{"axis", int64_t(1)}});
  b.output(y);
  EXPECT_EQ(e->shape(), (Shape{Dim::sym("N"), 1, 8}));
  EXPECT_EQ(y->shape(), (Shape{Dim::sym("N"), 5, 8}));

  Tensor in = f32({2, 4, 8}, F32s(64, -1.0f));
  Tensor out = interp::run(g, {in})[0];
  ASSERT_EQ(out.shape(), (I64s{2, 5, 8}));
  for (int64_t bi = 0; bi < 2; ++bi)
    for (int64_t t = 0; t < 5; ++t)
      for (int64_t d = 0; d < 8; ++d)
        EXPECT_EQ(out.data<float>()[(bi * 5 + t) * 8 + d], t == 0 ? float(d) : -1.0f);
}

TEST(TensorOps, ReshapeSymbolicInference) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, Shape{Dim::sym("N"), 197, 768}});
  auto reshape = [&](I64s target) { return b.op("Reshape", {x, b.constant(Tensor::vectorI64(target))})->shape(); };
  Dim N = Dim::sym("N");
  EXPECT_EQ(reshape({0, 0, 12, 64}), (Shape{N, 197, 12, 64}));
  EXPECT_EQ(reshape({0, 0, 12, -1}), (Shape{N, 197, 12, 64}));
  EXPECT_EQ(reshape({-1, 197, 12, 64}), (Shape{N, 197, 12, 64}));
  EXPECT_EQ(reshape({0, -1}), (Shape{N, 197 * 768}));
  EXPECT_EQ(reshape({-1, 768}), (Shape{Dim::unknown(), 768}));  // N*197: not a single symbol
  // Target from tracked contents [N, 197, 12, 64].
  Value* s = b.op("Shape", {x}, {{"end", int64_t(2)}});
  Value* t = b.op("Concat", {s, b.constant(Tensor::vectorI64({12, 64}))}, {{"axis", int64_t(0)}});
  EXPECT_EQ(b.op("Reshape", {x, t})->shape(), (Shape{N, 197, 12, 64}));
  // Flatten of [N,C,H,W] keeps N.
  Value* img = b.input("img", {DType::F32, Shape{N, 3, 4, 4}});
  EXPECT_EQ(b.op("Flatten", {img})->shape(), (Shape{N, 48}));
  // Unknown target contents but static length: rank known.
  Value* dyn = b.input("dyn", {DType::I64, Shape{3}});
  EXPECT_EQ(b.op("Reshape", {x, dyn})->shape(), (Shape{Dim::unknown(), Dim::unknown(), Dim::unknown()}));
}

TEST(TensorOps, InferenceRejectsInconsistentInput) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, Shape{2, 3, 4}});
  Value* y = b.input("y", {DType::F32, Shape{2, 5, 4}});
  auto reshape = [&](I64s target) { b.op("Reshape", {x, b.constant(Tensor::vectorI64(target))}); };
  EXPECT_THROW(reshape({5, 5}), Error);
  EXPECT_THROW(reshape({-1, -1}), Error);
  EXPECT_THROW(reshape({-2, 12}), Error);
  EXPECT_THROW(reshape({0, 0, 0, 0}), Error);
  EXPECT_NO_THROW(b.op("Concat", {x, y}, {{"axis", int64_t(1)}}));
  EXPECT_THROW(b.op("Concat", {x, y}, {{"axis", int64_t(0)}}), Error);
  EXPECT_THROW(b.op("Concat", {x, y}, {{"axis", int64_t(3)}}), Error);
  EXPECT_THROW(b.op("Transpose", {x}, {{"perm", ints({0, 0, 1})}}), Error);
  EXPECT_THROW(b.op("Unsqueeze", {x, b.constant(Tensor::vectorI64({4}))}), Error);
  EXPECT_THROW(b.op("Squeeze", {x, b.constant(Tensor::vectorI64({1}))}), Error);
  EXPECT_THROW(b.op("Gather", {x, b.constant(Tensor::scalarI64(0))}, {{"axis", int64_t(-4)}}), Error);
  EXPECT_THROW(b.opN("Split", {x}, 2, {{"axis", int64_t(1)}}), Error);    // 3 does not split in 2
  EXPECT_THROW(b.op("Constant", {}, {{"value_string", std::string("hi")}}), Error);
  EXPECT_THROW(b.op("Reshape", {x, b.constant(Tensor::vectorI64({24}))}, {{"bogus", int64_t(1)}}), Error);
  try {
    reshape({7, -1});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Reshape '"), std::string::npos) << e.what();
  }
}

TEST(TensorOps, ShapeArithmeticContents) {
  Graph g;
  GraphBuilder b(g);
  Dim N = Dim::sym("N");
  Value* x = b.input("x", {DType::F32, Shape{N, 3, 8, 8}});
  Value* s = b.op("Shape", {x}, {{"start", int64_t(-2)}});
  EXPECT_EQ(*s->knownContents(), (std::vector<Dim>{8, 8}));
  Value* sl = b.op("Slice", {b.op("Shape", {x}), b.constant(Tensor::vectorI64({0})), b.constant(Tensor::vectorI64({2}))});
  EXPECT_EQ(*sl->knownContents(), (std::vector<Dim>{N, 3}));
  Value* size = b.op("Size", {x});
  EXPECT_EQ(size->shape(), Shape{});
  Value* c = b.op("Constant", {}, {{"value_ints", ints({4, 5})}});
  EXPECT_EQ(*c->knownContents(), (std::vector<Dim>{4, 5}));
  EXPECT_EQ(b.op("ConstantOfShape", {c})->type(), (TensorType{DType::F32, Shape{4, 5}}));
  Value* tiled = b.op("Tile", {x, b.constant(Tensor::vectorI64({1, 2, 1, 1}))});
  EXPECT_EQ(tiled->shape(), (Shape{N, 6, 8, 8}));
  Value* r = b.op("Range", {b.constant(Tensor::scalarI64(0)), b.op("Gather", {s, b.constant(Tensor::scalarI64(0))}),
                            b.constant(Tensor::scalarI64(3))});
  EXPECT_EQ(r->shape(), (Shape{3}));
  EXPECT_EQ(*r->knownContents(), (std::vector<Dim>{0, 3, 6}));
  Value* rn = b.op("Range", {b.constant(Tensor::scalarI64(0)), b.op("Gather", {sl, b.constant(Tensor::scalarI64(0))}),
                             b.constant(Tensor::scalarI64(1))});
  EXPECT_EQ(rn->shape(), (Shape{Dim::unknown()}));
  Value* e = b.op("Expand", {b.constant(iota({1})), b.op("Shape", {x})});
  EXPECT_EQ(e->shape(), (Shape{N, 3, 8, 8}));
  Value* p = b.op("Pad", {x, b.constant(Tensor::vectorI64({0, 0, 1, 1, 0, 0, 1, 1}))});
  EXPECT_EQ(p->shape(), (Shape{N, 3, 10, 10}));
  Value* rs = b.op("Resize", {x, nullptr, b.constant(f32({4}, {1, 1, 2, 2}))}, {{"mode", std::string("nearest")}});
  EXPECT_EQ(rs->shape(), (Shape{N, 3, 16, 16}));
}

TEST(TensorOps, TransposeSliceGather) {
  {
    OneOp t;
    Tensor out = t.run("Transpose", iota({2, 3}), {})[0];
    EXPECT_EQ(out.shape(), (I64s{3, 2}));
    EXPECT_EQ(values(out), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  }
  {
    // Negative step with INT64_MAX-style clamping: x[::-2] over 5 elements.
    OneOp t;
    Tensor out = t.run("Slice", iota({5}), {Tensor::vectorI64({-1}), Tensor::vectorI64({INT64_MIN}), Tensor::vectorI64({0}),
                                            Tensor::vectorI64({-2})})[0];
    EXPECT_EQ(values(out), (std::vector<double>{4, 2, 0}));
    EXPECT_EQ(t.outTypes[0].shape, (Shape{3}));
  }
  {
    OneOp t;
    Tensor out = t.run("Slice", iota({2, 4}), {Tensor::vectorI64({1}), Tensor::vectorI64({INT64_MAX}),
                                               Tensor::vectorI64({-1})})[0];
    EXPECT_EQ(values(out), (std::vector<double>{1, 2, 3, 5, 6, 7}));
  }
  {
    OneOp t;
    Tensor idx = Tensor::fromVector<int64_t>(DType::I64, {2}, {-1, 0});
    Tensor out = t.run("Gather", iota({2, 3}), {idx}, {{"axis", int64_t(1)}})[0];
    EXPECT_EQ(out.shape(), (I64s{2, 2}));
    EXPECT_EQ(values(out), (std::vector<double>{2, 0, 5, 3}));
  }
  {
    OneOp t;
    Tensor idx = Tensor::fromVector<int64_t>(DType::I64, {2, 1}, {1, 0});
    Tensor out = t.run("GatherND", iota({2, 2}), {idx})[0];
    EXPECT_EQ(values(out), (std::vector<double>{2, 3, 0, 1}));
  }
}

TEST(TensorOps, DataMovementIsDtypeAgnostic) {
  // f16 and bool go through the byte-copy path unchanged.
  Tensor h = Tensor::fromVector<uint16_t>(DType::F16, {2, 2}, {floatToHalf(1), floatToHalf(2), floatToHalf(3), floatToHalf(4)});
  OneOp t;
  Tensor out = t.run("Transpose", h, {})[0];
  EXPECT_EQ(out.dtype(), DType::F16);
  EXPECT_EQ(values(out), (std::vector<double>{1, 3, 2, 4}));
  OneOp t2;
  Tensor bools = Tensor::fromVector<uint8_t>(DType::Bool, {3}, {1, 0, 1});
  Tensor tiled = t2.run("Tile", bools, {Tensor::vectorI64({2})})[0];
  EXPECT_EQ(values(tiled), (std::vector<double>{1, 0, 1, 1, 0, 1}));
}

TEST(TensorOps, ConcatSplitPadTileExpand) {
  {
    OneOp t;
    auto outs = t.run("Split", iota({5, 2}), {Tensor::vectorI64({2, 3})}, {}, 2);
    EXPECT_EQ(values(outs[0]), (std::vector<double>{0, 1, 2, 3}));
    EXPECT_EQ(outs[1].shape(), (I64s{3, 2}));
    EXPECT_EQ(t.outTypes[1].shape, (Shape{3, 2}));
  }
  {
    OneOp t;
    auto outs = t.run("Split", iota({2, 4}), {}, {{"axis", int64_t(-1)}}, 2);
    EXPECT_EQ(values(outs[1]), (std::vector<double>{2, 3, 6, 7}));
  }
  {
    OneOp t;
    Tensor out = t.run("Pad", iota({3}), {Tensor::vectorI64({2, 1}), Tensor::scalarF32(9)})[0];
    EXPECT_EQ(values(out), (std::vector<double>{9, 9, 0, 1, 2, 9}));
  }
  {
    OneOp t;
    Tensor out = t.run("Pad", iota({3}), {Tensor::vectorI64({2, 2})}, {{"mode", std::string("reflect")}})[0];
    EXPECT_EQ(values(out), (std::vector<double>{2, 1, 0, 1, 2, 1, 0}));
  }
  {
    OneOp t;
    Tensor out = t.run("Pad", iota({3}), {Tensor::vectorI64({2, -1})}, {{"mode", std::string("edge")}})[0];
    EXPECT_EQ(values(out), (std::vector<double>{0, 0, 0, 1}));
  }
  {
    OneOp t;
    Tensor out = t.run("Expand", iota({3, 1}), {Tensor::vectorI64({2, 1, 2})})[0];
    EXPECT_EQ(out.shape(), (I64s{2, 3, 2}));
    EXPECT_EQ(values(out), (std::vector<double>{0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2}));
  }
  {
    OneOp t;
    Tensor out = t.run("Concat", iota({1, 2}), {iota({1, 1})}, {{"axis", int64_t(1)}})[0];
    EXPECT_EQ(values(out), (std::vector<double>{0, 1, 0}));
  }
}

TEST(TensorOps, NumericAlongAxis) {
  {
    OneOp t;
    Tensor out = t.run("CumSum", f32({4}, {1, 2, 3, 4}), {Tensor::scalarI64(0)},
                       {{"exclusive", int64_t(1)}, {"reverse", int64_t(1)}})[0];
    EXPECT_EQ(values(out), (std::vector<double>{9, 7, 4, 0}));
  }
  {
    OneOp t;
    auto outs = t.run("TopK", f32({2, 3}, {1, 3, 3, 5, 4, 6}), {Tensor::vectorI64({2})}, {}, 2);
    EXPECT_EQ(values(outs[0]), (std::vector<double>{3, 3, 6, 5}));
    EXPECT_EQ(outs[1].toInt64Vector(), (I64s{1, 2, 2, 0}));
  }
  {
    OneOp t;
    Tensor out = t.run("Trilu", iota({3, 3}), {Tensor::scalarI64(1)}, {{"upper", int64_t(0)}})[0];
    EXPECT_EQ(values(out), (std::vector<double>{0, 1, 0, 3, 4, 5, 6, 7, 8}));
  }
  {
    OneOp t;
    Tensor out = t.run("OneHot", Tensor::vectorI64({0, -1}), {Tensor::scalarI64(3), f32({2}, {0, 5})})[0];
    EXPECT_EQ(values(out), (std::vector<double>{5, 0, 0, 0, 0, 5}));
  }
  {
    OneOp t;
    Tensor out = t.run("NonZero", f32({2, 2}, {0, 1, 2, 0}), {})[0];
    EXPECT_EQ(out.toInt64Vector(), (I64s{0, 1, 1, 0}));
  }
  {
    OneOp t;
    Tensor idx = Tensor::fromVector<int64_t>(DType::I64, {2, 1}, {1, 1});
    Tensor out = t.run("ScatterND", f32({3}, {1, 1, 1}), {idx, f32({2}, {2, 3})}, {{"reduction", std::string("add")}})[0];
    EXPECT_EQ(values(out), (std::vector<double>{1, 6, 1}));
  }
  {
    OneOp t;
    Tensor out = t.run("DepthToSpace", iota({1, 4, 1, 1}), {}, {{"blocksize", int64_t(2)}})[0];
    EXPECT_EQ(out.shape(), (I64s{1, 1, 2, 2}));
    EXPECT_EQ(values(out), (std::vector<double>{0, 1, 2, 3}));
  }
}

TEST(TensorOps, ResizeModes) {
  {
    OneOp t;
    Tensor out = t.run("Resize", f32({1, 2}, {1, 2}), {Tensor(), f32({2}, {1, 2})}, {{"mode", std::string("nearest")}})[0];
    EXPECT_EQ(values(out), (std::vector<double>{1, 1, 2, 2}));
  }
  {
    // half_pixel linear upsampling of [0, 1] to 4: x = -0.25, 0.25, 0.75, 1.25 clamped.
    OneOp t;
    Tensor out = t.run("Resize", f32({2}, {0, 1}), {Tensor(), Tensor(), Tensor::vectorI64({4})},
                       {{"mode", std::string("linear")}})[0];
    EXPECT_EQ(values(out), (std::vector<double>{0, 0.25, 0.75, 1}));
  }
  {
    OneOp t;
    Tensor out = t.run("Resize", f32({3}, {0, 1, 2}), {Tensor(), Tensor(), Tensor::vectorI64({5})},
                       {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("align_corners")}})[0];
    EXPECT_EQ(values(out), (std::vector<double>{0, 0.5, 1, 1.5, 2}));
  }
}
