// The native steps of the program builder, which need no code generator:
// data-movement and per-axis ops, Resize among them (codegen/NativeTensorOps.cpp), zero-copy
// views, window ops in NCHW, and the shape arithmetic folded at build time.
// Each graph runs through the builder with a source that compiles nothing
// (FakeKernelSource.h), so any node without a native path would show up as an
// interpreter fallback; outputs are checked against the interpreter.
#include <gtest/gtest.h>

#include <limits>

#include "codegen/CpuBackend.h"
#include "ir/Builder.h"
#include "runtime/interp/Interpreter.h"
#include "tests/codegen/FakeKernelSource.h"
#include "tests/common/BackendTestUtil.h"

namespace friction {
namespace {

using test::expectClose;
using test::FakeSource;
using test::randomTensor;
using Ints = std::vector<int64_t>;

Value* ints(GraphBuilder& b, const Ints& v) { return b.constant(Tensor::vectorI64(v)); }

// Builds a graph of one f32 input `x` of `shape` and the body; runs it
// natively and on the interpreter (within rtol, BackendTestUtil.h's Tolerance); returns the program's statistics.
codegen::CpuStats expectNativeMatches(const Ints& shape, const std::function<Value*(GraphBuilder&, Value*)>& body,
                                      const std::string& what, double rtol = 1e-6) {
  SCOPED_TRACE(what);
  Graph g;
  GraphBuilder b(g);
  b.output(body(b, b.input("x", {DType::F32, Shape::fromStatic(shape)})));
  FakeSource source;
  auto model = codegen::compileCpuModel(g, source, "native only");
  std::vector<Tensor> in = {randomTensor(shape, 11)};
  auto want = interp::run(g, in);
  auto got = model->run(in);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) expectClose(got[i], want[i], rtol, what);
  EXPECT_EQ(model->interpNodes(), 0) << model->description();
  return *codegen::cpuStats(*model);
}

TEST(NativeTensorOps, SliceWithStepsNegativeBoundsAndReversal) {
  struct Case {
    Ints starts, ends, axes, steps;
    bool view;  // its result lies densely in its input
  };
  for (const Case& c : std::vector<Case>{{{1, 0}, {3, 6}, {0, 1}, {1, 1}, true},
                                         {{0}, {5}, {2}, {2}, false},
                                         {{-1}, {-7}, {1}, {-2}, false},
                                         {{-3, 1}, {INT64_MAX, -1}, {-1, 0}, {1, 1}, false}}) {
    auto stats = expectNativeMatches(
        {4, 6, 5}, [&](GraphBuilder& b, Value* x) {
          return b.op("Slice", {x, ints(b, c.starts), ints(b, c.ends), ints(b, c.axes), ints(b, c.steps)});
        },
        "Slice");
    EXPECT_EQ(stats.nativeOps["Slice (strided copy)"], c.view ? 0 : 1);
    EXPECT_EQ(stats.views, c.view ? 1 : 0);
  }
}

// A Slice whose result lies densely in its input is a view of the input's buffer at an offset; a part of
// each row, or the rows reversed, is a copy.
TEST(NativeTensorOps, ContiguousSlicesAreViewsOfTheirInput) {
  auto stats = expectNativeMatches(
      {6, 16}, [](GraphBuilder& b, Value* x) {
        auto slice = [&](const Ints& starts, const Ints& ends, const Ints& axes, const Ints& steps) {
          Value* s = b.op("Slice", {x, ints(b, starts), ints(b, ends), ints(b, axes), ints(b, steps)});
          return b.op("Reshape", {s, ints(b, {-1})});  // a view too
        };
        return b.op("Concat", {slice({2}, {4}, {0}, {1}),            // rows 2, 3: a view at element 32
                               slice({1, 0}, {2, 16}, {0, 1}, {1, 1}),  // row 1: at element 16
                               slice({0}, {8}, {1}, {1}),            // half of every row: a copy
                               slice({5}, {-7}, {0}, {-1}),          // the rows reversed: a copy
                               slice({0, 3}, {1, 7}, {0, 1}, {1, 1})},  // dense within row 0: at element 3
                    {{"axis", int64_t(0)}});
      },
      "contiguous slices");
  EXPECT_EQ(stats.views, 3 + 5);
  EXPECT_EQ(stats.nativeOps["Slice (strided copy)"], 2);
}

TEST(NativeTensorOps, ConcatAlongEveryAxisOfInputsAndConstants) {
  for (int64_t axis : {0, 1, -1}) {
    auto stats = expectNativeMatches(
        {2, 3, 4}, [&](GraphBuilder& b, Value* x) {
          Ints other = {2, 3, 4};
          other[size_t(axis < 0 ? 2 : axis)] = 5;
          return b.op("Concat", {x, b.constant(randomTensor(other, 12)), x}, {{"axis", axis}});
        },
        "Concat axis " + std::to_string(axis));
    EXPECT_EQ(stats.nativeOps["Concat (row copy)"], 1);
  }
}

// An NHWC channel Concat large enough for the threads to share its rows, of narrow pieces (a vector loop) and a
// wide one (over 256 floats a row: memcpy).
TEST(NativeTensorOps, ConcatOfNarrowAndWideChannelGroupsOverManyRows) {
  auto stats = expectNativeMatches(
      {2, 9, 9, 20}, [&](GraphBuilder& b, Value* x) {
        Value* wide = b.constant(randomTensor({2, 9, 9, 300}, 13));
        return b.op("Concat", {x, wide, x, b.constant(randomTensor({2, 9, 9, 3}, 14))}, {{"axis", int64_t(3)}});
      },
      "NHWC channel Concat");
  EXPECT_EQ(stats.nativeOps["Concat (row copy)"], 1);
}

TEST(NativeTensorOps, PadWithAndWithoutAValue) {
  for (bool value : {false, true}) {
    expectNativeMatches(
        {2, 3, 4, 5}, [&](GraphBuilder& b, Value* x) {
          std::vector<Value*> in = {x, ints(b, {0, 1, 2, 0, 0, 2, 1, 3})};
          if (value) in.push_back(b.constant(Tensor::scalarF32(0.5f)));
          return b.op("Pad", in);
        },
        value ? "Pad 0.5" : "Pad");
  }
}

// Reflect, edge and wrap: each output position reads one source position per axis (pads wider than the axis
// wrap and reflect more than once; a negative pad crops), as the interpreter reads them (padSourceIndex).
TEST(NativeTensorOps, PadThatReflectsRepeatsItsEdgeOrWraps) {
  for (const std::string mode : {"reflect", "edge", "wrap"})
    for (const Ints& pads : {Ints{0, 0, 2, 1, 0, 0, 1, 3}, Ints{0, 1, 5, 7, 1, 0, -1, 9}}) {
      auto stats = expectNativeMatches(
          {2, 3, 4, 3}, [&](GraphBuilder& b, Value* x) { return b.op("Pad", {x, ints(b, pads)}, {{"mode", mode}}); },
          "Pad " + mode);
      EXPECT_EQ(stats.nativeOps["Pad " + mode + " (index tables)"], 1);
    }
}

TEST(NativeTensorOps, GatherOfScalarVectorAndMatrixIndices) {
  std::vector<Tensor> indices = {Tensor::scalarI64(-1), Tensor::vectorI64({2, 0, 2}),
                                 Tensor::vectorI64({1, 0, 3, 3}).reshaped({2, 2})};
  for (const Tensor& idx : indices)
    for (int64_t axis : {0, 1}) {
      auto stats = expectNativeMatches(
          {4, 5, 3}, [&](GraphBuilder& b, Value* x) { return b.op("Gather", {x, b.constant(idx)}, {{"axis", axis}}); },
          "Gather axis " + std::to_string(axis) + " of " + std::to_string(idx.numel()) + " indices");
      EXPECT_EQ(stats.nativeOps["Gather (strided copy)"], 1);
    }
}

// An Embedding: indices known only at run time, checked on every run.
TEST(NativeTensorOps, GatherOfRunTimeIndicesCopiesRowsAndChecksBounds) {
  for (DType indexType : {DType::I64, DType::I32}) {
    Graph g;
    GraphBuilder b(g);
    Value* ids = b.input("ids", {indexType, Shape::fromStatic({2, 3})});
    b.output(b.op("Gather", {b.constant(randomTensor({10, 4}, 3)), ids}, {}, "embedding"));
    FakeSource source;
    auto model = codegen::compileCpuModel(g, source, "native only");
    EXPECT_EQ(model->interpNodes(), 0) << model->description();
    EXPECT_EQ(codegen::cpuStats(*model)->nativeOps.at("Gather (rows)"), 1);
    std::vector<Tensor> in = {Tensor::fromVector<int64_t>(DType::I64, {2, 3}, {0, 9, -1, 3, 3, 5}).castTo(indexType)};
    expectClose(model->run(in)[0], interp::run(g, in)[0], 0, "Gather rows");
    in = {Tensor::fromVector<int64_t>(DType::I64, {2, 3}, {0, 1, 2, 10, 0, 0}).castTo(indexType)};
    try {
      model->run(in);
      ADD_FAILURE() << "index 10 of an axis of 10 was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'embedding': index 10 out of range"), std::string::npos) << e.what();
    }
  }
}

TEST(NativeTensorOps, CastBetweenElementTypes) {
  auto stats = expectNativeMatches(
      {3, 7}, [](GraphBuilder& b, Value* x) {
        auto cast = [&](Value* v, DType to) { return b.op("Cast", {v}, {{"to", int64_t(dtypeToOnnxCode(to))}}); };
        Value* i32 = cast(cast(x, DType::I32), DType::F32);            // truncates toward zero
        Value* boolean = cast(cast(x, DType::Bool), DType::F32);
        Value* u8 = cast(cast(cast(x, DType::I64), DType::U8), DType::F64);  // negatives wrap
        Value* like = b.op("CastLike", {b.op("CastLike", {x, b.constant(Tensor::scalarI64(0))}), x});  // to i64, back
        return b.op("Concat", {i32, boolean, cast(u8, DType::F32), like}, {{"axis", int64_t(0)}});
      },
      "Cast");
  EXPECT_EQ(stats.nativeOps["Cast f32 to i32"], 1);
  EXPECT_EQ(stats.nativeOps["Cast i64 to f32"], 1);  // the CastLike back
  EXPECT_EQ(stats.nativeOps["Cast u8 to f64"], 1);
}

// f16/bf16 through the native Cast (rounded to nearest even), and transposes of 1- and 8-byte elements (the
// layout pass moves a quantized model's int8 and an index tensor's int64); a half Transpose runs widened to
// f32 (legalize), between casts.
TEST(NativeTensorOps, HalfCastsAndTransposesOfEveryElementSize) {
  auto stats = expectNativeMatches(
      {2, 3, 5}, [](GraphBuilder& b, Value* x) {
        auto cast = [&](Value* v, DType to) { return b.op("Cast", {v}, {{"to", int64_t(dtypeToOnnxCode(to))}}); };
        auto moved = [&](Value* v) { return b.op("Transpose", {v}, {{"perm", Ints{2, 0, 1}}}); };
        std::vector<Value*> parts;  // x in [-2, 2): the integers -1, 0 and 1 after truncation
        for (DType t : {DType::F16, DType::BF16, DType::I8, DType::I64, DType::Bool})
          parts.push_back(cast(cast(moved(cast(x, t)), DType::F64), DType::F32));
        return b.op("Concat", parts, {{"axis", int64_t(0)}});
      },
      "half casts and transposes", 0);
  EXPECT_EQ(stats.nativeOps["Cast f32 to f16"], 2);  // x, and the transposed f32 values back
  EXPECT_EQ(stats.nativeOps["Cast bf16 to f64"], 1);
  EXPECT_EQ(stats.nativeOps["transpose (element by element)"], 3);  // 1, 8 and 1 (bool) bytes
}

// A quantized embedding table (int8) gathers rows of bytes, as an f32 one gathers rows of floats.
TEST(NativeTensorOps, GatherOfAnInt8TableCopiesItsRows) {
  auto stats = expectNativeMatches(
      {2, 3}, [](GraphBuilder& b, Value* x) {
        std::vector<int8_t> codes(15);
        for (size_t i = 0; i < codes.size(); ++i) codes[i] = int8_t(int(i) * 17 - 120);
        Value* table = b.constant(Tensor::fromVector<int8_t>(DType::I8, {5, 3}, codes));
        auto f64 = [&](double v) { return b.constant(Tensor::fromVector<double>(DType::F64, {}, {v})); };
        Value* wide = b.op("Cast", {x}, {{"to", int64_t(dtypeToOnnxCode(DType::F64))}});
        Value* shifted = b.op("Mul", {b.op("Add", {wide, f64(2)}), f64(1.2)});  // x in [-2, 2): rows 0-4 at run time
        Value* rows = b.op("Gather", {table, b.op("Cast", {shifted}, {{"to", int64_t(dtypeToOnnxCode(DType::I64))}})});
        return b.op("Cast", {rows}, {{"to", int64_t(dtypeToOnnxCode(DType::F32))}});
      },
      "int8 Gather", 0);
  EXPECT_EQ(stats.nativeOps["Gather (rows)"], 1);
}

// Swin's shifted-window mask with fold-constants off: comparisons, logic
// and Where on bool and integer tensors, broadcasting, then back to f32.
TEST(NativeTensorOps, ComparisonsLogicAndWhereOnMasks) {
  auto stats = expectNativeMatches(
      {2, 3, 4}, [](GraphBuilder& b, Value* x) {
        Value* positive = b.op("Greater", {x, b.constant(randomTensor({4}, 2, -0.5f, 0.5f))});
        Value* small = b.op("Less", {x, b.constant(randomTensor({3, 1}, 3))});
        Value* both = b.op("And", {b.op("Not", {positive}), small});
        Value* mask = b.op("Or", {both, b.op("Xor", {positive, both})});
        Value* integers = b.op("Cast", {x}, {{"to", int64_t(dtypeToOnnxCode(DType::I64))}});
        Value* zero = b.op("Equal", {integers, b.constant(Tensor::scalarI64(0))});
        Value* atLeast = b.op("GreaterOrEqual", {integers, b.constant(Tensor::scalarI64(1))});
        Value* atMost = b.op("LessOrEqual", {integers, b.constant(Tensor::scalarI64(-1))});
        Value* where = b.op("Where", {mask, x, b.constant(Tensor::scalarF32(-100.f))});
        Value* either = b.op("Or", {zero, b.op("Or", {atLeast, atMost})});  // always true
        auto asF32 = [&](Value* v) { return b.op("Cast", {v}, {{"to", int64_t(dtypeToOnnxCode(DType::F32))}}); };
        return b.op("Concat", {where, asF32(either), asF32(zero)}, {{"axis", int64_t(0)}});
      },
      "masks");
  EXPECT_EQ(stats.nativeOps["Where (broadcast loop)"], 1);
  EXPECT_EQ(stats.nativeOps["Or (broadcast loop)"], 3);
}

TEST(NativeTensorOps, ScatterNDOfRowsAndOfElements) {
  for (bool rows : {true, false}) {
    auto stats = expectNativeMatches(
        {4, 5, 3}, [&](GraphBuilder& b, Value* x) {
          Tensor indices = rows ? Tensor::fromVector<int64_t>(DType::I64, {2, 1}, {1, -1})
                                : Tensor::fromVector<int64_t>(DType::I64, {2, 3}, {0, 1, 2, 3, 4, 0});
          Ints updates = rows ? Ints{2, 5, 3} : Ints{2};
          return b.op("ScatterND", {x, b.constant(indices), b.constant(randomTensor(updates, 4))});
        },
        rows ? "ScatterND rows" : "ScatterND elements");
    EXPECT_EQ(stats.nativeOps["ScatterND (row copies)"], 1);
  }
}

TEST(NativeTensorOps, ExpandBroadcastsByRepeatingElements) {
  expectNativeMatches({3, 1}, [](GraphBuilder& b, Value* x) { return b.op("Expand", {x, ints(b, {2, 3, 4})}); },
                      "Expand");
}

TEST(NativeTensorOps, BatchNormalizationWithConstantAndComputedParameters) {
  for (bool constant : {true, false}) {
    expectNativeMatches(
        {2, 3, 4, 5}, [&](GraphBuilder& b, Value* x) {
          auto param = [&](uint64_t seed, float lo) { return b.constant(randomTensor({3}, seed, lo, 2)); };
          Value* scale = param(21, -2);
          // A scale computed at run time (a view of a constant) cannot be folded at build.
          if (!constant) scale = b.op("Reshape", {scale, ints(b, {3})});
          return b.op("BatchNormalization", {x, scale, param(22, -2), param(23, -2), param(24, 0.1f)},
                      {{"epsilon", 1e-3f}});
        },
        constant ? "BatchNormalization" : "BatchNormalization, scale computed");
  }
}

TEST(NativeTensorOps, ReductionsOverConsecutiveAndScatteredAxes) {
  using Attrs = std::map<std::string, Attribute>;
  struct Case {
    std::string op;
    Attrs attrs;
    std::optional<Ints> axesInput;
  };
  std::vector<Case> cases = {{"ReduceMean", {{"axes", Ints{1}}, {"keepdims", int64_t(0)}}, std::nullopt},
                             {"ReduceSum", {}, Ints{2, 3}},
                             {"ReduceSum", {{"keepdims", int64_t(0)}}, std::nullopt},
                             {"ReduceMax", {}, std::nullopt},
                             {"ReduceMin", {{"axes", Ints{-1}}}, std::nullopt},
                             {"ReduceMean", {{"axes", Ints{2, 1}}}, std::nullopt},
                             {"ReduceL2", {{"axes", Ints{-1}}}, std::nullopt},
                             {"ReduceL1", {{"axes", Ints{1, 2}}, {"keepdims", int64_t(0)}}, std::nullopt},
                             {"ReduceSumSquare", {}, std::nullopt},
                             {"ReduceLogSumExp", {{"axes", Ints{0}}}, std::nullopt},
                             {"ReduceProd", {{"axes", Ints{1, 2}}}, std::nullopt},
                             // not consecutive: moved last first (MeanVarianceNormalization's [0, 2, 3])
                             {"ReduceMean", {{"axes", Ints{0, 2, 3}}}, std::nullopt},
                             {"ReduceSum", {{"keepdims", int64_t(0)}}, Ints{3, 1}},
                             {"ReduceMax", {{"axes", Ints{-1, 0}}, {"keepdims", int64_t(0)}}, std::nullopt},
                             {"ReduceProd", {{"axes", Ints{0, 2}}}, std::nullopt}};
  for (const Case& c : cases) {
    auto stats = expectNativeMatches(
        {2, 3, 4, 5}, [&](GraphBuilder& b, Value* x) {
          std::vector<Value*> in = {x};
          if (c.axesInput) in.push_back(ints(b, *c.axesInput));
          return b.op(c.op, in, c.attrs);
        },
        c.op);
    EXPECT_EQ(stats.nativeCalls, 1);
  }
}

// Resize in every mode, coordinate transformation and nearest rounding the interpreter takes, up and down,
// over an NCHW image (the innermost axis interpolated, element by element). The kernel weighs in floats where
// the interpreter sums in doubles: a cubic output is 16 taps, some of negative weight, so a result near 0 differs
// by a few 1e-8 of values of 0.1 (rtol 1e-4 allows 1e-6 of the outputs' scale).
constexpr double kResizeRtol = 1e-4;
TEST(NativeTensorOps, ResizeInEveryModeAndCoordinateTransform) {
  using Attrs = std::map<std::string, Attribute>;
  std::vector<Attrs> kinds;
  for (std::string ctm : {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "tf_half_pixel_for_nn",
                          "half_pixel_symmetric"}) {
    for (std::string nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})
      kinds.push_back({{"mode", std::string("nearest")}, {"coordinate_transformation_mode", ctm},
                       {"nearest_mode", nearest}});
    kinds.push_back({{"mode", std::string("linear")}, {"coordinate_transformation_mode", ctm}});
    kinds.push_back({{"mode", std::string("cubic")}, {"coordinate_transformation_mode", ctm}});
  }
  kinds.push_back({{"mode", std::string("cubic")}, {"cubic_coeff_a", -0.5f}, {"exclude_outside", int64_t(1)}});
  for (const std::vector<float>& scales : {std::vector<float>{1, 1, 2, 1.5f}, {1, 1, 0.6f, 0.5f}})
    for (const Attrs& attrs : kinds) {
      const std::string what = "Resize " + std::get<std::string>(attrs.at("mode")) + " " +
                               (attrs.count("coordinate_transformation_mode")
                                    ? std::get<std::string>(attrs.at("coordinate_transformation_mode"))
                                    : "exclude_outside") +
                               (attrs.count("nearest_mode") ? " " + std::get<std::string>(attrs.at("nearest_mode")) : "") +
                               " by " + std::to_string(scales[2]) + " x " + std::to_string(scales[3]);
      auto stats = expectNativeMatches(
          {2, 3, 5, 7}, [&](GraphBuilder& b, Value* x) {
            Value* s = b.constant(Tensor::fromVector<float>(DType::F32, {4}, scales));
            return b.op("Resize", {x, nullptr, s}, attrs);
          },
          what, kResizeRtol);
      EXPECT_EQ(stats.nativeOps["Resize " + std::get<std::string>(attrs.at("mode")) + " (tap tables)"], 1) << what;
    }
}

// Resize by sizes over channels-last and other layouts: the axes after the last resized one are one contiguous
// run (a weighted sum of rows), a first axis resized alone, a rank-5 volume.
TEST(NativeTensorOps, ResizeBySizesOverRunsOfTheAxesItKeeps) {
  struct Case {
    Ints shape, sizes;
  };
  for (const Case& c : std::vector<Case>{{{1, 6, 5, 8}, {1, 12, 9, 8}},
                                         {{2, 4, 4, 3}, {2, 2, 3, 3}},
                                         {{4, 5, 6}, {9, 5, 6}},
                                         {{1, 2, 3, 4, 5}, {1, 2, 6, 8, 5}}})
    for (std::string mode : {"nearest", "linear", "cubic"})
      expectNativeMatches(
          c.shape, [&](GraphBuilder& b, Value* x) {
            return b.op("Resize", {x, nullptr, nullptr, ints(b, c.sizes)}, {{"mode", mode}});
          },
          "Resize " + mode + " to " + Shape::fromStatic(c.sizes).str(), kResizeRtol);
}

// ConvTranspose (U-Net decoders, generators): the 2x2 stride-2 upsampling, overlapping 3x3 and 4x4 windows with
// pads and output_padding, dilation, groups, SAME_UPPER and output_shape, with and without a bias.
TEST(NativeWindowOps, ConvTransposeOfEveryGeometry) {
  using Attrs = std::map<std::string, Attribute>;
  struct Case {
    int64_t C, K, group, R;
    Attrs attrs;
    bool bias;
  };
  const std::vector<Case> cases = {
      {6, 4, 1, 2, {{"strides", Ints{2, 2}}}, true},
      {6, 4, 1, 3, {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}, {"output_padding", Ints{1, 1}}}, true},
      {4, 6, 2, 4, {{"strides", Ints{2, 1}}, {"pads", Ints{1, 0, 2, 1}}}, false},
      {6, 6, 3, 3, {{"dilations", Ints{2, 2}}, {"pads", Ints{2, 2, 2, 2}}}, true},
      {6, 4, 1, 3, {{"strides", Ints{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}}, true},
      {6, 4, 1, 3, {{"strides", Ints{3, 2}}, {"output_shape", Ints{17, 12}}}, false}};
  for (const Case& c : cases) {
    auto stats = expectNativeMatches(
        {2, c.C, 5, 6}, [&](GraphBuilder& b, Value* x) {
          std::vector<Value*> in = {x, b.constant(randomTensor({c.C, c.K / c.group, c.R, c.R}, 31))};
          if (c.bias) in.push_back(b.constant(randomTensor({c.K}, 32)));
          Attrs attrs = c.attrs;
          attrs["group"] = c.group;
          return b.op("ConvTranspose", in, attrs);
        },
        "ConvTranspose " + std::to_string(c.R) + "x" + std::to_string(c.R) + " group " + std::to_string(c.group),
        1e-5);
    EXPECT_EQ(stats.nativeOps["ConvTranspose nchw (sgemm + col2im)"], 1);
  }
}

// A conv cropped to the window cells read inside (a 3x3 at dilation 4 over 4x4 is a 1x1) whose weights are
// computed at run time: cropped on every run.
TEST(NativeWindowOps, ConvCroppedToTheCellsInsideWithWeightsOfTheRun) {
  auto stats = expectNativeMatches(
      {1, 5, 4, 4}, [&](GraphBuilder& b, Value* x) {
        Value* w = b.op("Reshape", {b.constant(randomTensor({6, 45}, 33)), ints(b, {6, 5, 3, 3})});
        return b.op("Conv", {x, w}, {{"dilations", Ints{4, 4}}, {"pads", Ints{4, 4, 4, 4}}});
      },
      "dilated conv, weights of the run", 1e-5);
  EXPECT_EQ(stats.nativeOps["conv nchw 1x1 (sgemm) cropped from 3x3"], 1);
}

// The native kernels a program runs, for a failure's message.
std::string nativeOpsOf(const codegen::CpuStats& stats) {
  std::string ops;
  for (const auto& [description, count] : stats.nativeOps) ops += description + " x" + std::to_string(count) + "; ";
  return ops;
}

// Window ops over one and three spatial dims run the 2-D kernels: a 1-D op as a 2-D one of height 1 (any group,
// pooling included), a 3-D Conv through the dense GEMM (im2col over the depth too), 3-D pooling as a 2-D one of
// every depth plane then over the depth window, GlobalAveragePool of any rank as one mean over the pixels. A 3-D
// conv cropped in height and width keeps its depth taps.
TEST(NativeWindowOps, WindowOpsOverOneAndThreeSpatialDims) {
  using Attrs = std::map<std::string, Attribute>;
  struct Case {
    Ints x, w;
    Attrs attrs;
    std::string description;
  };
  const std::vector<Case> convs = {
      {{2, 6, 11}, {8, 6, 3}, {{"pads", Ints{1, 1}}, {"strides", Ints{2}}}, "conv ncw (im2col + sgemm)"},
      {{2, 6, 11}, {6, 2, 5}, {{"group", int64_t(3)}, {"pads", Ints{2, 2}}}, "grouped conv ncw (direct)"},
      {{1, 4, 4, 6, 7}, {5, 4, 3, 3, 3}, {{"pads", Ints{1, 1, 1, 1, 1, 1}}}, "conv ncdhw (im2col + sgemm)"},
      {{2, 3, 5, 9, 9}, {8, 3, 3, 7, 7}, {{"pads", Ints{1, 3, 3, 1, 3, 3}}, {"strides", Ints{1, 2, 2}}},
       "conv ncdhw (im2col + sgemm)"},
      {{1, 8, 4, 5, 5}, {6, 8, 1, 1, 1}, {}, "conv ncdhw 1x1 (sgemm)"},
      {{1, 5, 6, 4, 4}, {6, 5, 3, 3, 3}, {{"dilations", Ints{1, 4, 4}}, {"pads", Ints{1, 4, 4, 1, 4, 4}}},
       "conv ncdhw (im2col + sgemm) cropped from 3x3"}};
  for (const Case& c : convs) {
    auto stats = expectNativeMatches(
        c.x, [&](GraphBuilder& b, Value* x) {
          return b.op("Conv", {x, b.constant(randomTensor(c.w, 34)), b.constant(randomTensor({c.w[0]}, 35))}, c.attrs);
        },
        c.description, 1e-5);
    EXPECT_EQ(stats.nativeOps[c.description], 1) << nativeOpsOf(stats);
  }
  const std::vector<Case> pools = {
      {{2, 5, 12}, {}, {{"kernel_shape", Ints{3}}, {"strides", Ints{2}}, {"pads", Ints{1, 1}}}, "MaxPool ncw"},
      {{2, 5, 12}, {}, {{"kernel_shape", Ints{4}}, {"strides", Ints{4}}}, "AveragePool ncw"},
      {{2, 5, 12}, {}, {}, "GlobalAveragePool ncw"},
      {{2, 5, 3, 4, 6}, {}, {}, "GlobalAveragePool ncdhw"},
      {{1, 3, 5, 7, 8}, {}, {{"kernel_shape", Ints{3, 3, 3}}, {"strides", Ints{2, 2, 2}}, {"pads", Ints{1, 1, 1, 1, 1, 1}}},
       "MaxPool ncdhw"},
      {{1, 3, 4, 7, 8}, {}, {{"kernel_shape", Ints{1, 3, 3}}, {"strides", Ints{1, 2, 2}}, {"pads", Ints{0, 1, 1, 0, 1, 1}}},
       "MaxPool ncdhw"},
      {{2, 3, 5, 6, 6}, {}, {{"kernel_shape", Ints{2, 2, 2}}, {"strides", Ints{2, 2, 2}}, {"ceil_mode", int64_t(1)}},
       "AveragePool ncdhw"},
      {{1, 2, 4, 5, 5}, {}, {{"kernel_shape", Ints{3, 3, 3}}, {"pads", Ints{1, 1, 1, 1, 1, 1}}}, "AveragePool ncdhw"},
      {{1, 2, 4, 5, 5}, {},
       {{"kernel_shape", Ints{3, 3, 3}}, {"pads", Ints{1, 0, 1, 1, 1, 0}}, {"count_include_pad", int64_t(1)}},
       "AveragePool ncdhw"}};
  for (const Case& c : pools) {
    const std::string op = c.description.substr(0, c.description.find(' '));
    auto stats = expectNativeMatches(c.x, [&](GraphBuilder& b, Value* x) { return b.op(op, {x}, c.attrs); },
                                     c.description, 1e-5);
    EXPECT_EQ(stats.nativeOps[c.description], 1) << nativeOpsOf(stats);
  }
}

// ---- ops the ONNX node tests use that the families do not: each native, in every variant of its attributes ----

Value* asF32(GraphBuilder& b, Value* v) { return b.op("Cast", {v}, {{"to", int64_t(dtypeToOnnxCode(DType::F32))}}); }
Value* asType(GraphBuilder& b, Value* v, DType t) { return b.op("Cast", {v}, {{"to", int64_t(dtypeToOnnxCode(t))}}); }
// x truncated to integers (-1, 0, 1 of randomTensor's [-2, 2]): ties for the ops that must pick among equal
// elements.
Value* withTies(GraphBuilder& b, Value* x) { return asF32(b, asType(b, x, DType::I32)); }

TEST(NativeTensorOps, TileRepeatsEveryDim) {
  for (const Ints& repeats : {Ints{2, 1, 3}, Ints{1, 1, 1}, Ints{3, 2, 1}}) {
    auto stats = expectNativeMatches(
        {2, 3, 4}, [&](GraphBuilder& b, Value* x) { return b.op("Tile", {x, ints(b, repeats)}); }, "Tile");
    EXPECT_EQ(stats.nativeOps["Tile (strided copy)"], 1);
  }
}

TEST(NativeTensorOps, ArgMaxAndArgMinOfTiesAtEveryAxis) {
  for (const std::string op : {"ArgMax", "ArgMin"})
    for (int64_t axis : {0, 1, -1})
      for (int64_t keepdims : {0, 1})
        for (int64_t last : {0, 1}) {
          auto stats = expectNativeMatches(
              {3, 4, 5}, [&](GraphBuilder& b, Value* x) {
                return asF32(b, b.op(op, {withTies(b, x)},
                                     {{"axis", axis}, {"keepdims", keepdims}, {"select_last_index", last}}));
              },
              op + " axis " + std::to_string(axis) + " keepdims " + std::to_string(keepdims) + " last " +
                  std::to_string(last));
          EXPECT_EQ(stats.nativeOps[op + " (axis scan)"], 1);
        }
}

TEST(NativeTensorOps, GatherElementsOfRunTimeIndicesChecksBounds) {
  for (int64_t axis : {0, 1, -1}) {
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", {DType::F32, Shape::fromStatic({3, 4, 5})});
    Value* idx = b.input("idx", {DType::I64, Shape::fromStatic({2, 3, 5})});  // narrower than x off the axis too
    b.output(b.op("GatherElements", {x, idx}, {{"axis", axis}}, "gather"));
    FakeSource source;
    auto model = codegen::compileCpuModel(g, source, "native only");
    EXPECT_EQ(model->interpNodes(), 0) << model->description();
    const int64_t extent = Ints{3, 4, 5}[size_t(axis < 0 ? axis + 3 : axis)];
    std::vector<int64_t> indices;
    for (int64_t i = 0; i < 30; ++i) indices.push_back((i * 7) % (2 * extent) - extent);  // negatives too
    std::vector<Tensor> in = {randomTensor({3, 4, 5}, 6), Tensor::fromVector<int64_t>(DType::I64, {2, 3, 5}, indices)};
    expectClose(model->run(in)[0], interp::run(g, in)[0], 0, "GatherElements axis " + std::to_string(axis));
    indices[7] = extent;
    in[1] = Tensor::fromVector<int64_t>(DType::I64, {2, 3, 5}, indices);
    try {
      model->run(in);
      ADD_FAILURE() << "index " << extent << " of an axis of " << extent << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'gather': index"), std::string::npos) << e.what();
    }
  }
}

// Duplicate positions among the indices: the last update wins (none) or each combines in the interpreter's order.
TEST(NativeTensorOps, ScatterElementsOfRunTimeIndicesInEveryReduction) {
  for (const std::string reduction : {"none", "add", "mul", "max", "min"})
    for (int64_t axis : {0, -1}) {
      Graph g;
      GraphBuilder b(g);
      Value* x = b.input("x", {DType::F32, Shape::fromStatic({3, 4})});
      Value* idx = b.input("idx", {DType::I64, Shape::fromStatic({2, 3})});
      Value* updates = b.input("updates", {DType::F32, Shape::fromStatic({2, 3})});
      b.output(b.op("ScatterElements", {x, idx, updates}, {{"axis", axis}, {"reduction", reduction}}, "scatter"));
      FakeSource source;
      auto model = codegen::compileCpuModel(g, source, "native only");
      EXPECT_EQ(model->interpNodes(), 0) << model->description();
      EXPECT_EQ(codegen::cpuStats(*model)->nativeOps.at("ScatterElements (index loop)"), 1);
      std::vector<Tensor> in = {randomTensor({3, 4}, 7), Tensor::fromVector<int64_t>(DType::I64, {2, 3}, {0, -1, 1, 0, 2, -1}),
                                randomTensor({2, 3}, 8)};
      expectClose(model->run(in)[0], interp::run(g, in)[0], 0, "ScatterElements " + reduction);
    }
}

// Tuples addressing elements and whole rows, with batch dims shared by data and indices.
TEST(NativeTensorOps, GatherNDOfTuplesSlicesAndBatches) {
  struct Case {
    Ints indexShape;
    std::vector<int64_t> indices;
    int64_t batchDims;
  };
  for (const Case& c : std::vector<Case>{{{2, 3}, {0, 1, 2, 1, -1, 0}, 0},  // elements of [2, 3, 4]
                                         {{3, 1}, {1, 0, -1}, 0},           // [3, 4] planes
                                         {{2, 2, 2}, {0, 1, 2, 3, 1, 1, 0, 0}, 1}}) {
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", {DType::F32, Shape::fromStatic({2, 3, 4})});
    Value* idx = b.input("idx", {DType::I64, Shape::fromStatic(c.indexShape)});
    b.output(b.op("GatherND", {x, idx}, {{"batch_dims", c.batchDims}}));
    FakeSource source;
    auto model = codegen::compileCpuModel(g, source, "native only");
    EXPECT_EQ(model->interpNodes(), 0) << model->description();
    std::vector<Tensor> in = {randomTensor({2, 3, 4}, 9), Tensor::fromVector<int64_t>(DType::I64, c.indexShape, c.indices)};
    expectClose(model->run(in)[0], interp::run(g, in)[0], 0, "GatherND batch_dims " + std::to_string(c.batchDims));
  }
}

TEST(NativeTensorOps, EyeLikeIsNaNAndIsInf) {
  auto stats = expectNativeMatches(
      {3, 5}, [](GraphBuilder& b, Value* x) {
        const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
        Value* odd = b.constant(Tensor::fromVector<float>(DType::F32, {1, 5}, {inf, -inf, nan, 0.f, -nan}));
        Value* special = b.op("Concat", {x, odd}, {{"axis", int64_t(0)}});
        Value* isNan = b.op("IsNaN", {special}), *posInf = b.op("IsInf", {special}, {{"detect_negative", int64_t(0)}});
        Value* eye = b.op("EyeLike", {special}, {{"k", int64_t(1)}});
        return b.op("Concat", {asF32(b, isNan), asF32(b, posInf), eye}, {{"axis", int64_t(0)}});
      },
      "EyeLike, IsNaN, IsInf");
  EXPECT_EQ(stats.nativeOps["EyeLike (diagonal)"], 1);
  EXPECT_EQ(stats.nativeOps["IsInf (element loop)"], 1);
}

// Two results, both checked; ties (x truncated to -1, 0, 1) leave the lower index first, as ONNX asks.
TEST(NativeTensorOps, TopKOfTiesLargestAndSmallestAtEveryAxis) {
  for (int64_t largest : {1, 0})
    for (int64_t axis : {0, 1, -1})
      for (int64_t k : {1, 3}) {
        const std::string what = "TopK largest " + std::to_string(largest) + " axis " + std::to_string(axis) + " k " +
                                 std::to_string(k);
        Graph g;
        GraphBuilder b(g);
        Value* x = b.input("x", {DType::F32, Shape::fromStatic({3, 4, 5})});
        auto topk = b.opN("TopK", {withTies(b, x), b.constant(Tensor::vectorI64({k}))}, 2,
                          {{"axis", axis}, {"largest", largest}});
        b.output(topk[0]);
        b.output(asF32(b, topk[1]));
        FakeSource source;
        auto model = codegen::compileCpuModel(g, source, "native only");
        EXPECT_EQ(model->interpNodes(), 0) << model->description();
        EXPECT_EQ(codegen::cpuStats(*model)->nativeOps.at("TopK (partial sort)"), 1) << what;
        std::vector<Tensor> in = {randomTensor({3, 4, 5}, 12)};
        auto got = model->run(in), want = interp::run(g, in);
        for (size_t i = 0; i < 2; ++i) expectClose(got[i], want[i], 0, what + " output " + std::to_string(i));
      }
}

// Integer and f64 arithmetic with the interpreter's semantics: truncating division (by -1 too), Mod taking the
// divisor's sign (fmod=0) or the dividend's (fmod=1), f32 Mod (no compiled path); a zero divisor is an error.
TEST(NativeTensorOps, ArithmeticOnIntegersF64AndModOnEveryType) {
  const std::vector<int64_t> a = {7, -7, 9, -9, 0, 5}, b = {2, -3, -1};  // b broadcasts over a's rows
  for (DType type : {DType::I64, DType::I32, DType::F64, DType::F32})
    for (std::string op : {"Add", "Sub", "Mul", "Div", "Max", "Min", "Mod", "ModC"}) {
      if (type == DType::F32 && op != "Mod" && op != "ModC") continue;  // compiled through MLIR
      const std::string what = op + " " + std::string(dtypeName(type));
      Graph g;
      GraphBuilder b_(g);
      Value* x = b_.input("x", {type, Shape::fromStatic({2, 3})});
      Value* y = b_.constant(Tensor::fromVector<int64_t>(DType::I64, {3}, b).castTo(type));
      std::map<std::string, Attribute> attrs;
      if (op == "ModC") attrs["fmod"] = int64_t(1);
      b_.output(b_.op(op == "ModC" ? "Mod" : op, {x, y}, attrs, "arith"));
      FakeSource source;
      auto model = codegen::compileCpuModel(g, source, "native only");
      EXPECT_EQ(model->interpNodes(), 0) << what << ": " << model->description();
      std::vector<Tensor> in = {Tensor::fromVector<int64_t>(DType::I64, {2, 3}, a).castTo(type)};
      expectClose(model->run(in)[0].castTo(DType::F32), interp::run(g, in)[0].castTo(DType::F32), 0, what);
    }
  Graph g;
  GraphBuilder b_(g);
  Value* x = b_.input("x", {DType::I64, Shape::fromStatic({2})});
  b_.output(b_.op("Div", {x, b_.constant(Tensor::vectorI64({3, 0}))}, {}, "ratio"));
  FakeSource source;
  auto model = codegen::compileCpuModel(g, source, "native only");
  try {
    model->run({Tensor::vectorI64({6, 1})});
    ADD_FAILURE() << "a division by zero was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'ratio': integer division by zero"), std::string::npos) << e.what();
  }
}

TEST(NativeTensorOps, CumSumForwardReversedExclusiveAndOnIntegers) {
  for (int64_t axis : {0, 1, -1})
    for (int64_t exclusive : {0, 1})
      for (int64_t reverse : {0, 1})
        for (bool integers : {false, true}) {
          auto stats = expectNativeMatches(
              {3, 4, 5}, [&](GraphBuilder& b, Value* x) {
                std::map<std::string, Attribute> attrs = {{"exclusive", exclusive}, {"reverse", reverse}};
                if (!integers) return b.op("CumSum", {x, b.constant(Tensor::scalarI64(axis))}, attrs);
                Value* counts = asType(b, withTies(b, x), DType::I64);  // a mask's cumulative sum: position ids
                return asF32(b, b.op("CumSum", {counts, b.constant(Tensor::scalarI64(axis))}, attrs));
              },
              "CumSum axis " + std::to_string(axis) + (exclusive ? " exclusive" : "") + (reverse ? " reverse" : "") +
                  (integers ? " i64" : ""),
              1e-5);
          EXPECT_EQ(stats.nativeOps["CumSum (row scan)"], 1);
        }
}

TEST(NativeTensorOps, TriluKeepsEitherSideOfEveryDiagonal) {
  for (int64_t upper : {0, 1})
    for (std::optional<int64_t> k : {std::optional<int64_t>(), std::optional<int64_t>(-2), std::optional<int64_t>(1),
                                     std::optional<int64_t>(7), std::optional<int64_t>(-9)}) {
      auto stats = expectNativeMatches(
          {2, 4, 5}, [&](GraphBuilder& b, Value* x) {
            std::vector<Value*> in = {x};
            if (k) in.push_back(b.constant(Tensor::scalarI64(*k)));
            return b.op("Trilu", in, {{"upper", upper}});
          },
          std::string(upper ? "upper" : "lower") + " k " + (k ? std::to_string(*k) : "absent"));
      EXPECT_EQ(stats.nativeOps["Trilu (row copies)"], 1);
    }
}

TEST(NativeTensorOps, SoftmaxAcrossAnInnerAxisAndHardmaxAtEveryAxis) {
  for (const std::string op : {"Softmax", "LogSoftmax", "Hardmax"})
    for (int64_t axis : {0, 1, 2}) {
      if (op != "Hardmax" && axis == 2) continue;  // the last axis: the row kernel, tested with the epilogues
      auto stats = expectNativeMatches(
          {3, 4, 5}, [&](GraphBuilder& b, Value* x) {
            return b.op(op, {op == "Hardmax" ? withTies(b, x) : x}, {{"axis", axis}});
          },
          op + " axis " + std::to_string(axis), 1e-5);
      EXPECT_EQ(stats.nativeOps[op + (axis == 2 ? " rows" : " across rows")], 1);
    }
}

TEST(NativeTensorOps, InstanceNormalizationLrnAndGlobalMaxPool) {
  auto stats = expectNativeMatches(
      {2, 6, 4, 5}, [](GraphBuilder& b, Value* x) {
        Value* norm = b.op("InstanceNormalization",
                           {x, b.constant(randomTensor({6}, 3)), b.constant(randomTensor({6}, 4))}, {{"epsilon", 1e-3f}});
        Value* lrnOdd = b.op("LRN", {norm}, {{"size", int64_t(3)}, {"alpha", 0.02f}, {"beta", 0.75f}, {"bias", 2.f}});
        Value* lrnEven = b.op("LRN", {lrnOdd}, {{"size", int64_t(4)}});  // a window one longer after the channel
        Value* pooled = b.op("GlobalMaxPool", {x});
        return b.op("Concat", {lrnEven, b.op("Expand", {pooled, ints(b, {2, 6, 4, 5})})}, {{"axis", int64_t(1)}});
      },
      "normalizations", 1e-5);
  EXPECT_EQ(stats.nativeOps["InstanceNormalization rows"], 1);
  EXPECT_EQ(stats.nativeOps["LRN (channel windows)"], 2);
  EXPECT_EQ(stats.nativeOps["GlobalMaxPool (consecutive axes)"], 1);
}

TEST(NativeTensorOps, ShapeOpsAreZeroCopyViews) {
  auto stats = expectNativeMatches(
      {2, 3, 4}, [](GraphBuilder& b, Value* x) {
        Value* y = b.op("Reshape", {x, ints(b, {6, 4})});
        y = b.op("Unsqueeze", {y, ints(b, {0})});
        y = b.op("Squeeze", {y, ints(b, {0})});
        y = b.op("Cast", {y}, {{"to", int64_t(1)}});  // to f32: what it already is
        y = b.op("Dropout", {y});                      // at inference: the identity
        y = b.op("Dropout", {y, b.constant(Tensor::scalarF32(0.3f)), b.constant(Tensor::scalarI64(0).castTo(DType::Bool))});
        return b.op("Flatten", {y}, {{"axis", int64_t(0)}});
      },
      "views");
  EXPECT_EQ(stats.views, 7);
  EXPECT_EQ(stats.nativeCalls, 0);
}

// PyTorch's shape arithmetic (Shape -> Gather -> Unsqueeze -> Concat ->
// Reshape), as exported, with no pass run: evaluated when the program is
// built, so the Reshape is a view and nothing runs on the interpreter.
TEST(NativeTensorOps, ShapeArithmeticIsEvaluatedAtBuild) {
  auto stats = expectNativeMatches(
      {2, 3, 4}, [](GraphBuilder& b, Value* x) {
        Value* batch = b.op("Gather", {b.op("Shape", {x}), b.constant(Tensor::scalarI64(0))}, {{"axis", int64_t(0)}});
        Value* target = b.op("Concat", {b.op("Unsqueeze", {batch, ints(b, {0})}), ints(b, {-1})}, {{"axis", int64_t(0)}});
        return b.op("Reshape", {x, target});
      },
      "shape arithmetic");
  EXPECT_EQ(stats.shapeNodesFolded, 4);
  EXPECT_EQ(stats.views, 1);
}

TEST(NativeTensorOps, BoundsComputedFromTheInputFallBackToTheInterpreter) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {4, 6}});
  Value* starts = b.input("starts", {DType::I64, {1}});
  b.output(b.op("Slice", {x, starts, ints(b, {3}), ints(b, {0})}));
  FakeSource source;
  auto model = codegen::compileCpuModel(g, source, "native only");
  EXPECT_EQ(model->interpNodes(), 1) << model->description();
}

// tf_crop_and_resize (outside its roi a position takes the extrapolation value) is left to the interpreter.
TEST(NativeTensorOps, ResizeThatCropsFallsBackToTheInterpreter) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, Shape::fromStatic({1, 1, 4, 4})});
  Value* roi = b.constant(Tensor::fromVector<float>(DType::F32, {8}, {0, 0, 0.4f, 0.6f, 1, 1, 0.6f, 0.8f}));
  b.output(b.op("Resize", {x, roi, nullptr, ints(b, {1, 1, 3, 3})},
                {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("tf_crop_and_resize")}}));
  FakeSource source;
  auto model = codegen::compileCpuModel(g, source, "native only");
  EXPECT_EQ(model->interpNodes(), 1) << model->description();
}

}  // namespace
}  // namespace friction
