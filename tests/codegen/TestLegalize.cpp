// codegen/Legalize.cpp: Split, matmul-form Einsum, DepthToSpace and SpaceToDepth rewritten into ops with
// kernels. Each rewrite is checked for structure (the ops after) and for
// numerics (the rewritten graph against the original on the interpreter).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "codegen/KernelAnalysis.h"
#include "codegen/Legalize.h"
#include "ir/Builder.h"
#include "ir/Verifier.h"
#include "ir/ops/Recurrent.h"
#include "runtime/interp/Interpreter.h"
#include "tests/common/BackendTestUtil.h"

namespace friction {
namespace {

using Ints = std::vector<int64_t>;

std::vector<std::string> ops(const Graph& g) {
  std::vector<std::string> o;
  for (const auto& n : g.nodes()) o.push_back(n->op());
  return o;
}

// Legalizes a copy of `g` for `options`' target; checks it verifies and computes what `g` does (within
// `tolerance`: a rewrite may add the same terms in another order).
std::shared_ptr<Graph> legalizedMatches(const Graph& g, const std::vector<Tensor>& in, int64_t expectRewrites,
                                        const codegen::CodegenOptions& options = {}, double tolerance = 1e-6) {
  std::shared_ptr<Graph> copy = cloneGraph(g);
  EXPECT_EQ(codegen::legalize(*copy, options), expectRewrites);
  verify(*copy);
  auto want = interp::run(g, in), got = interp::run(*copy, in);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) test::expectClose(got[i], want[i], tolerance, "legalized");
  return copy;
}

codegen::CodegenOptions gpuTarget() {
  codegen::CodegenOptions o;
  o.target = codegen::Target::CudaNests;
  return o;
}

TEST(Legalize, SplitBecomesOneSlicePerOutput) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, Shape::fromStatic({2, 7, 3})});
  auto parts = b.opN("Split", {x, b.constant(Tensor::vectorI64({2, 4, 1}))}, 3, {{"axis", int64_t(-2)}});
  b.output(parts[0]);
  b.output(b.op("Relu", {parts[1]}));
  b.output(parts[2]);
  EXPECT_TRUE(codegen::needsLegalizing(g));
  auto after = legalizedMatches(g, {test::randomTensor({2, 7, 3}, 5)}, 1);
  EXPECT_EQ(ops(*after), (std::vector<std::string>{"Slice", "Slice", "Slice", "Relu"}));  // where the Split ran
  EXPECT_FALSE(codegen::needsLegalizing(*after));
}

TEST(Legalize, EinsumOfMatmulFormBecomesTransposesAroundAMatMul) {
  struct Case {
    std::string equation;
    Ints a, b;
    std::vector<std::string> expect;
  };
  std::vector<Case> cases = {
      {"bgid,bgjd->bgij", {2, 3, 4, 5}, {2, 3, 6, 5}, {"Transpose", "MatMul"}},        // q @ k^T (MaxViT)
      {"B G I J, B G J D -> B G I D", {2, 3, 4, 6}, {2, 3, 6, 5}, {"MatMul"}},       // attn @ v, spaces
      {"ik,kj->ji", {4, 5}, {5, 3}, {"MatMul", "Transpose"}},                         // transposed result
      {"kbi,bjk->bij", {5, 2, 4}, {2, 3, 5}, {"Transpose", "Transpose", "MatMul"}}};  // both operands permuted
  for (const Case& c : cases) {
    SCOPED_TRACE(c.equation);
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("a", {DType::F32, Shape::fromStatic(c.a)});
    Value* y = b.input("b", {DType::F32, Shape::fromStatic(c.b)});
    b.output(b.op("Einsum", {x, y}, {{"equation", c.equation}}));
    auto after = legalizedMatches(g, {test::randomTensor(c.a, 1), test::randomTensor(c.b, 2)}, 1);
    EXPECT_EQ(ops(*after), c.expect);
  }
}

// A sum over one operand's letter, a repeated letter (a trace), an outer
// product (two row letters), an implicit output, a dynamic batch: not one
// static matmul, so left to the Einsum kernel.
TEST(Legalize, OtherEinsumsAreLeftAlone) {
  struct Case {
    std::string equation;
    Shape a, b;
  };
  const Dim n = Dim::sym("N");
  std::vector<Case> cases = {{"ij,jk->i", {3, 4}, {4, 5}},
                             {"ii,ij->ij", {3, 3}, {3, 4}},
                             {"ab,cd->abcd", {2, 3}, {4, 5}},
                             {"bij,bjk", {2, 3, 4}, {2, 4, 5}},
                             {"bik,bkj->bij", {n, 3, 4}, {n, 4, 3}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.equation);
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("a", {DType::F32, c.a});
    Value* y = b.input("b", {DType::F32, c.b});
    b.output(b.op("Einsum", {x, y}, {{"equation", c.equation}}));
    EXPECT_FALSE(codegen::needsLegalizing(g));
  }
}

// A pixel shuffle and its inverse: the channels' blocks to and from the pixels, in both of DepthToSpace's
// orders.
TEST(Legalize, DepthToSpaceAndSpaceToDepthBecomeATransposeBetweenReshapes) {
  struct Case {
    std::string op, mode;
    Ints x;
    int64_t block;
  };
  for (const Case& c : std::vector<Case>{{"DepthToSpace", "DCR", {2, 8, 3, 4}, 2},
                                         {"DepthToSpace", "CRD", {2, 18, 2, 3}, 3},
                                         {"SpaceToDepth", "", {2, 3, 4, 6}, 2}}) {
    SCOPED_TRACE(c.op + " " + c.mode);
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", {DType::F32, Shape::fromStatic(c.x)});
    std::map<std::string, Attribute> attrs = {{"blocksize", c.block}};
    if (!c.mode.empty()) attrs["mode"] = c.mode;
    b.output(b.op(c.op, {x}, attrs));
    EXPECT_TRUE(codegen::needsLegalizing(g));
    auto after = legalizedMatches(g, {test::randomTensor(c.x, 3)}, 1);
    EXPECT_EQ(ops(*after), (std::vector<std::string>{"Reshape", "Transpose", "Reshape"}));
  }
}

}  // namespace
}  // namespace friction

namespace friction {
namespace {

// A half-precision op becomes the f32 op on widened values (widen-half's rewrite): its constant operands widened
// now, its activations at run time, each half result it computes rounded by ReducePrecision (the interpreter's
// per-op rounding, so results agree exactly), none after Relu, which only selects elements; the outputs narrowed
// once. The widened Split is then split into Slices.
TEST(Legalize, HalfOpsBecomeF32OpsWithTheirRounding) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F16, Shape::fromStatic({1, 2, 5, 5})});
  Value* w = b.constant(test::randomTensor({3, 2, 3, 3}, 3).castTo(DType::F16));
  Value* y = b.op("Relu", {b.op("Conv", {x, w}, {{"pads", Ints{1, 1, 1, 1}}})});
  auto halves = b.opN("Split", {y, b.constant(Tensor::vectorI64({1, 2}))}, 2, {{"axis", int64_t(1)}});
  b.output(halves[0]);
  b.output(b.op("ArgMax", {halves[1]}, {{"axis", int64_t(1)}}));  // an i64 result stays as it is
  EXPECT_TRUE(codegen::needsLegalizing(g));
  std::shared_ptr<Graph> copy = cloneGraph(g);
  EXPECT_EQ(codegen::legalize(*copy), 5);  // Conv, Relu, Split, ArgMax; then the f32 Split
  verify(*copy);
  EXPECT_EQ(ops(*copy),
            (std::vector<std::string>{"Cast", "Conv", "ReducePrecision", "Relu", "Slice", "Slice", "ArgMax", "Cast"}));
  EXPECT_EQ(copy->outputs()[0]->name(), g.outputs()[0]->name());
  EXPECT_EQ(copy->outputs()[0]->dtype(), DType::F16);
  for (const auto& n : copy->nodes())
    if (n->op() != "Cast")
      for (const Value* v : n->inputs()) EXPECT_TRUE(!v || v->dtype() != DType::F16) << n->describe();
  std::vector<Tensor> in = {test::randomTensor({1, 2, 5, 5}, 4).castTo(DType::F16)};
  auto want = interp::run(g, in), got = interp::run(*copy, in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].bitwiseEqual(want[i])) << "output " << i;
  EXPECT_FALSE(codegen::needsLegalizing(*copy));
}

// On the GPU targets a Resize of constant scales or sizes becomes, a resized axis at a time, Gathers of its
// taps' source positions along the axis, weighted and summed (nearest: one Gather an axis); the cpu target keeps
// its native gather. Numerics for nearest, linear and cubic, up and down, ranks 3 to 5.
TEST(Legalize, ResizeOnTheGpuTargetsBecomesWeightedGathersOfItsTaps) {
  struct Case {
    Ints x;
    std::string mode;
    std::vector<float> scales;
    Ints sizes;
    std::vector<std::string> expect;  // empty: not checked
  };
  const std::vector<std::string> linearAxis = {"Gather", "Mul", "Gather", "Mul", "Add"};
  std::vector<std::string> bilinear = linearAxis;
  bilinear.insert(bilinear.end(), linearAxis.begin(), linearAxis.end());
  const std::vector<Case> cases = {{{1, 2, 3, 4}, "nearest", {1, 1, 2, 2}, {}, {"Gather", "Gather"}},
                                   {{1, 2, 3, 4}, "linear", {1, 1, 2, 1.5f}, {}, bilinear},
                                   {{2, 3, 5, 7}, "linear", {1, 1, 0.6f, 0.5f}, {}, {}},
                                   {{1, 2, 4, 9}, "cubic", {1, 1, 1, 2}, {}, {}},
                                   {{4, 5, 6}, "linear", {}, {9, 5, 6}, linearAxis},
                                   {{1, 2, 3, 4, 5}, "cubic", {}, {1, 2, 6, 8, 5}, {}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.mode + " of rank " + std::to_string(c.x.size()));
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", {DType::F32, Shape::fromStatic(c.x)});
    Value* scales = c.scales.empty() ? nullptr
                                     : b.constant(Tensor::fromVector<float>(DType::F32, {int64_t(c.scales.size())}, c.scales));
    Value* sizes = c.sizes.empty() ? nullptr : b.constant(Tensor::vectorI64(c.sizes));
    b.output(b.op("Resize", {x, nullptr, scales, sizes}, {{"mode", c.mode}}));
    EXPECT_FALSE(codegen::needsLegalizing(g)) << "the cpu target's native gather";
    EXPECT_TRUE(codegen::needsLegalizing(g, gpuTarget()));
    auto after = legalizedMatches(g, {test::randomTensor(c.x, 5)}, 1, gpuTarget(), 1e-5);
    if (!c.expect.empty()) EXPECT_EQ(ops(*after), c.expect);
    EXPECT_FALSE(codegen::needsLegalizing(*after, gpuTarget()));
  }
}

// On the GPU targets (and the cpu target where its native kernel does not apply: not 2-D, or microkernels off)
// a strided ConvTranspose of constant weights at dilation 1 becomes one Conv per output phase, the phases
// interleaved by Concats and Reshapes (and cropped to the result by a Slice); otherwise a Conv at stride 1 over
// its input with zeros between the elements (Reshape, Pad, Reshape), a Slice where pads are wider than the
// window, of its weights regrouped and flipped: at build when they are constants (the old ones dropped), else by
// a Reshape, Transpose, Reshape and flipping Slice on every run. test::convTransposeCases() against interp.
TEST(Legalize, ConvTransposeOnTheGpuTargetsBecomesAConvPerPhaseOrOverZeros) {
  const std::vector<test::ConvTransposeCase> cases = test::convTransposeCases();
  auto count = [](const std::vector<std::string>& ops, const std::string& op) { return std::count(ops.begin(), ops.end(), op); };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("ConvTranspose case " + std::to_string(i));
    Graph g;
    GraphBuilder b(g);
    b.output(test::convTranspose(b, b.input("x", {DType::F32, Shape::fromStatic(cases[i].x)}), cases[i]));
    EXPECT_EQ(codegen::needsLegalizing(g), cases[i].x.size() != 4) << "the cpu target's native 2-D kernel";
    codegen::CodegenOptions noMicrokernels;
    noMicrokernels.set("ukernels", "off");
    EXPECT_TRUE(codegen::needsLegalizing(g, noMicrokernels));
    auto after = legalizedMatches(g, {test::randomTensor(cases[i].x, 5)}, 1, gpuTarget(), 1e-5);
    const std::vector<std::string> got = ops(*after);
    EXPECT_EQ(after->findValue(g.nodes().front()->input(1)->name()), nullptr) << "the old weights dropped";
    if (i == 0) {  // a U-Net's 2 x 2 at stride 2: four 1 x 1 Convs, joined along the columns twice, then the rows
      EXPECT_EQ(got, (std::vector<std::string>{"Conv", "Conv", "Conv", "Conv", "Reshape", "Reshape", "Concat", "Reshape",
                                               "Reshape", "Reshape", "Concat", "Reshape", "Reshape", "Reshape", "Concat",
                                               "Reshape"}));
      for (const auto& n : after->nodes())
        if (n->op() == "Conv") EXPECT_EQ(n->input(1)->shape().staticDims(), (Ints{3, 4, 1, 1})) << "one tap a phase";
    }
    if (i == 2) EXPECT_EQ(got, std::vector<std::string>{"Conv"}) << "stride 1: the Conv alone";
    if (i == 7) EXPECT_EQ(count(got, "Conv"), 8) << "3-D at stride 2: eight phases";
    if (i == 3 || i == 6) EXPECT_EQ(got.back(), "Slice") << "an extent no multiple of the stride: cropped";
    std::set<std::vector<std::vector<int64_t>>> crops;  // (starts, ends, axes) of each Slice of x
    for (const auto& n : after->nodes())
      if (n->op() == "Slice" && !n->input(0)->producer())
        EXPECT_TRUE(crops.insert({constantData(n->input(1))->toInt64Vector(), constantData(n->input(2))->toInt64Vector(),
                                  constantData(n->input(3))->toInt64Vector()}).second)
            << "phases that crop x alike share one Slice: " << n->name();
    if (i == 4 || i == 5) {  // dilated: the Conv over zeros
      EXPECT_EQ(count(got, "Pad"), 1);
      EXPECT_EQ(count(got, "Conv"), 1);
    }
    // Weights computed at run time (an input): the Conv over zeros, its weights rearranged by ops.
    Graph computed;
    GraphBuilder c(computed);
    Value* x = c.input("x", {DType::F32, Shape::fromStatic(cases[i].x)});
    Value* w = c.input("w", {DType::F32, Shape::fromStatic(cases[i].w)});
    c.output(c.op("ConvTranspose", {x, w}, cases[i].attrs));
    auto rearranged = legalizedMatches(computed, {test::randomTensor(cases[i].x, 5), test::randomTensor(cases[i].w, 6)}, 1,
                                       gpuTarget(), 1e-5);
    const std::vector<std::string> chain = {"Reshape", "Transpose", "Reshape", "Slice", "Conv"}, zeros = {"Reshape", "Pad", "Reshape"};
    const std::vector<std::string> all = ops(*rearranged);
    EXPECT_TRUE(std::search(all.begin(), all.end(), chain.begin(), chain.end()) != all.end()) << "the weights' ops";
    if (i != 2) EXPECT_TRUE(std::search(all.begin(), all.end(), zeros.begin(), zeros.end()) != all.end()) << "the zeros";
  }
  // A window narrower than its stride leaves phases no tap reaches: the Conv over zeros.
  Graph g;
  GraphBuilder b(g);
  const test::ConvTransposeCase narrow = {{1, 2, 4, 4}, {2, 3, 1, 1}, {{"strides", Ints{2, 2}}}, true};
  b.output(test::convTranspose(b, b.input("x", {DType::F32, Shape::fromStatic(narrow.x)}), narrow));
  auto after = legalizedMatches(g, {test::randomTensor(narrow.x, 5)}, 1, gpuTarget(), 1e-5);
  EXPECT_EQ(ops(*after), (std::vector<std::string>{"Reshape", "Pad", "Reshape", "Slice", "Conv"}));
}

// On the halide and GPU targets RNN, GRU and LSTM are unrolled over their static sequence into each step's ops
// (the cpu target keeps its native recurrence): directions, both layouts, initial states, clip, GRU's two
// reset orders, LSTM's peepholes and input_forget, a constant sequence_lens of whole sequences, activations
// of every kind; Y, Y_h and Y_c against the interpreter. A sequence_lens of the run, or a sequence of more
// than 1024 steps, is left alone.
TEST(Legalize, RecurrentLayersUnrollOverTheirSequenceOnTheOtherTargets) {
  using Attrs = std::map<std::string, Attribute>;
  using Names = std::vector<std::string>;
  struct Case {
    std::string op;
    int64_t directions, layout;
    Attrs attrs;
    bool bias, initial, peepholes, lengths;
  };
  const int64_t T = 4, B = 3, I = 5, H = 6;
  const std::vector<Case> cases = {
      {"RNN", 1, 0, {}, true, true, false, false},
      {"RNN", 2, 0, {{"activations", Names{"Relu", "ScaledTanh"}}, {"activation_alpha", std::vector<float>{0.f, 0.7f}},
                     {"activation_beta", std::vector<float>{0.f, 1.3f}}}, false, false, false, false},
      {"GRU", 1, 0, {{"direction", std::string("reverse")}, {"clip", 0.5f}}, true, true, false, true},
      {"GRU", 2, 1, {{"linear_before_reset", int64_t(1)}}, true, true, false, false},
      {"LSTM", 1, 0, {}, true, true, true, true},
      {"LSTM", 2, 0, {{"input_forget", int64_t(1)},
                      {"activations", Names{"HardSigmoid", "Elu", "Softsign", "Affine", "LeakyRelu", "Softplus"}},
                      {"activation_alpha", std::vector<float>{0.3f, 0.9f, 0.f, 0.5f, 0.1f, 0.f}},
                      {"activation_beta", std::vector<float>{0.4f, 0.f, 0.f, 0.2f, 0.f, 0.f}}}, true, true, true, false},
      {"LSTM", 1, 1, {{"activations", Names{"Sigmoid", "ThresholdedRelu", "Tanh"}},
                      {"activation_alpha", std::vector<float>{0.f, 0.2f, 0.f}}}, false, false, false, false},
  };
  codegen::CodegenOptions halide;
  halide.target = codegen::Target::Halide;
  for (const Case& c : cases) {
    const int64_t gates = c.op == "RNN" ? 1 : c.op == "GRU" ? 3 : 4, D = c.directions;
    SCOPED_TRACE(c.op + " of " + std::to_string(D) + " directions, layout " + std::to_string(c.layout));
    Graph g;
    GraphBuilder b(g);
    const Ints xs = c.layout ? Ints{B, T, I} : Ints{T, B, I}, states = c.layout ? Ints{B, D, H} : Ints{D, B, H};
    Value* x = b.input("x", {DType::F32, Shape::fromStatic(xs)});
    std::vector<Value*> in = {x, b.constant(test::randomTensor({D, gates * H, I}, 2, -0.6f, 0.6f)),
                              b.constant(test::randomTensor({D, gates * H, H}, 3, -0.6f, 0.6f)),
                              c.bias ? b.constant(test::randomTensor({D, 2 * gates * H}, 4)) : nullptr,
                              c.lengths ? b.constant(Tensor::fromVector<int32_t>(DType::I32, {B}, std::vector<int32_t>(B, T)))
                                        : nullptr,
                              c.initial ? b.constant(test::randomTensor(states, 5)) : nullptr};
    if (c.op == "LSTM") {
      in.push_back(c.initial ? b.constant(test::randomTensor(states, 6)) : nullptr);
      in.push_back(c.peepholes ? b.constant(test::randomTensor({D, 3 * H}, 7)) : nullptr);
    }
    Attrs attrs = c.attrs;
    attrs["hidden_size"] = H;
    attrs["layout"] = c.layout;
    if (D == 2) attrs["direction"] = std::string("bidirectional");
    for (Value* out : b.opN(c.op, in, c.op == "LSTM" ? 3 : 2, attrs)) b.output(out);
    EXPECT_FALSE(codegen::needsLegalizing(g)) << "the cpu target's native recurrence";
    auto after = legalizedMatches(g, {test::randomTensor(xs, 8)}, 1, halide, 1e-4);
    for (const std::string& op : ops(*after)) EXPECT_FALSE(isRecurrentOp(op));
    // Under halide each step's cell is one region, the same kernel every step of a direction.
    std::set<std::string> cellKernels;
    int64_t cells = 0;
    for (const auto& n : after->nodes())
      if (n->op() == "Fused") cells++, cellKernels.insert(codegen::structuralKey(*n));
    EXPECT_EQ(cells, T * D);
    EXPECT_LE(int64_t(cellKernels.size()), D);
    auto onGpu = legalizedMatches(g, {test::randomTensor(xs, 8)}, 1, gpuTarget(), 1e-4);
    const std::vector<std::string> gpuOps = ops(*onGpu);
    EXPECT_EQ(std::count(gpuOps.begin(), gpuOps.end(), "Fused"), 0) << "a GPU target runs a cell's ops";
  }
  // A long sequence's states are joined 32 at a time (Halide compiles a Concat in time square in its inputs).
  {
    const int64_t steps = 70;
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", {DType::F32, Shape::fromStatic({steps, B, I})});
    for (Value* out : b.opN("RNN", {x, b.constant(test::randomTensor({1, H, I}, 2, -0.6f, 0.6f)),
                                    b.constant(test::randomTensor({1, H, H}, 3, -0.6f, 0.6f))}, 2, {{"hidden_size", H}}))
      b.output(out);
    auto after = legalizedMatches(g, {test::randomTensor({steps, B, I}, 8)}, 1, halide, 1e-4);
    size_t widest = 0;
    for (const auto& n : after->nodes())
      if (n->op() == "Concat") widest = std::max(widest, n->numInputs());
    EXPECT_EQ(widest, 32u);
  }
  // A sequence_lens of the run, and a sequence too long to unroll, stay.
  for (const auto& [seq, lengths] : {std::make_pair(int64_t(4), true), std::make_pair(int64_t(1025), false)}) {
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", {DType::F32, Shape::fromStatic({seq, B, I})});
    Value* l = lengths ? b.input("lengths", {DType::I32, Shape::fromStatic({B})}) : nullptr;
    b.output(b.opN("RNN", {x, b.constant(test::randomTensor({1, H, I}, 2)), b.constant(test::randomTensor({1, H, H}, 3)),
                           nullptr, l}, 2, {{"hidden_size", H}})[0]);
    EXPECT_FALSE(codegen::needsLegalizing(g, halide)) << seq << " steps";
  }
}

// On the halide and GPU targets a Tile of constant repeats becomes an Expand between two Reshapes (each repeated
// dim [x] viewed as [1, x], expanded to [repeats, x]): grouped-query attention's repeat_interleave, a repeat of
// every dim, a rank-1 one; the cpu target keeps its native Tile; repeats of the run stay.
TEST(Legalize, TileOnTheOtherTargetsBecomesAnExpandBetweenReshapes) {
  struct Case {
    Ints x, repeats;
  };
  codegen::CodegenOptions gpu = gpuTarget();
  for (const Case& c : std::vector<Case>{{{2, 2, 1, 5, 4}, {1, 1, 3, 1, 1}}, {{3, 4}, {2, 3}}, {{5}, {4}}}) {
    SCOPED_TRACE("Tile of " + Shape::fromStatic(c.x).str());
    Graph g;
    GraphBuilder b(g);
    b.output(b.op("Tile", {b.input("x", {DType::F32, Shape::fromStatic(c.x)}), b.constant(Tensor::vectorI64(c.repeats))}));
    EXPECT_FALSE(codegen::needsLegalizing(g)) << "the cpu target's native Tile";
    auto after = legalizedMatches(g, {test::randomTensor(c.x, 5)}, 1, gpu);
    EXPECT_EQ(ops(*after), (std::vector<std::string>{"Reshape", "Expand", "Reshape"}));
  }
  Graph g;
  GraphBuilder b(g);
  b.output(b.op("Tile", {b.input("x", {DType::F32, Shape::fromStatic({3, 4})}), b.input("repeats", {DType::I64, Shape::fromStatic({2})})}));
  EXPECT_FALSE(codegen::needsLegalizing(g, gpu)) << "repeats of the run";
}

}  // namespace
}  // namespace friction
