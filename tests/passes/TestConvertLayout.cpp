#include <numeric>

#include "frontend/onnx/OnnxImport.h"
#include "frontend/zoo/Zoo.h"
#include "ir/Builder.h"
#include "ir/TextFormat.h"
#include "tests/passes/PassTestUtil.h"

using namespace friction;
using namespace friction::testing;

namespace {

std::map<std::string, int64_t> convert(Graph& g) {
  RunOptions r;
  r.verifyEach = true;
  return runPipeline(g, buildPipeline(PipelineOptions{.passes = {"convert-layout"}}), r).back().stats;
}

std::string nhwcRegion(const std::string& conv) {
  return R"(Fused(%in, %w) {body = graph "b" opset 17 {
      input %x : f32[1,4,4,2]
      input %k : f32[2,2,1,1]
      %t : f32[1,2,4,4] = Transpose(%x) {perm = [0, 3, 1, 2]} @"n1"
      %y : f32[1,2,4,4] = )" + conv + R"(
      %o : f32[1,4,4,2] = Transpose(%y) {perm = [0, 2, 3, 1]} @"n2"
      output %o
    }, kind = "nhwc"} @"f")";
}

}  // namespace

TEST(ConvertLayout, ConvReluConvCancelsTheMiddleTransposes) {
  const char* conv = "Conv(%t, %k) {kernel_shape = [1, 1]} @\"c\"";
  std::string region = nhwcRegion(conv);
  auto regionOn = [&](const std::string& in, const std::string& out) {
    std::string r = region;
    r.replace(r.find("%in"), 3, in);
    return "  " + out + " : f32[1,4,4,2] = " + r + "\n";
  };
  auto stats = expectPassRewrites("convert-layout", R"(
graph "g" opset 17 {
  input %x : f32[1,2,4,4]
  const %w : f32[2,2,1,1] = hex"0000803f000000000000000000000040"
  %a : f32[1,2,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} @"n3"
  %r : f32[1,2,4,4] = Relu(%a) @"n4"
  %b : f32[1,2,4,4] = Conv(%r, %w) {kernel_shape = [1, 1]} @"n5"
  output %b
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f32[1,2,4,4]
  const %w : f32[2,2,1,1] = hex"0000803f000000000000000000000040"
  %xh : f32[1,4,4,2] = Transpose(%x) {perm = [0, 2, 3, 1]} @"n6"
)" + regionOn("%xh", "%a") + R"(  %r : f32[1,4,4,2] = Relu(%a) @"r"
)" + regionOn("%r", "%b") + R"(  %out : f32[1,2,4,4] = Transpose(%b) {perm = [0, 3, 1, 2]} @"t"
  output %out
}
)");
  EXPECT_EQ(stats["ops converted"], 2);
  EXPECT_EQ(stats["transposes inserted"], 5);  // 2 per op, 1 sinking through Relu
  EXPECT_EQ(stats["transposes left"], 2);      // graph input and output
  EXPECT_EQ(stats["transposes cancelled"], 3);
}

TEST(ConvertLayout, ConstantOperandIsPermuted) {
  // Add of a per-channel constant [2,1,1] after the conv: the constant becomes [1,1,1,2].
  auto g = parseGraph(R"(
graph "g" opset 17 {
  input %x : f32[1,2,4,4]
  const %w : f32[2,2,1,1] = hex"0000803f000000000000000000000040"
  const %bias : f32[2,1,1] = hex"0000803f00000040"
  %a : f32[1,2,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} @"n7"
  %s : f32[1,2,4,4] = Add(%a, %bias) @"n8"
  %b : f32[1,2,4,4] = Conv(%s, %w) {kernel_shape = [1, 1]} @"n9"
  output %b
}
)");
  auto stats = convert(*g);
  EXPECT_EQ(stats["transposes left"], 2);
  bool permuted = false;
  for (const auto& n : g->nodes())
    if (n->op() == "Add") permuted = n->input(1)->shape() == Shape{1, 1, 1, 2};
  EXPECT_TRUE(permuted) << printGraph(*g);
}

// A DenseNet step: conv outputs concatenated along channels, then a conv of
// the concatenation. The Concat runs in NHWC along axis 3 and no transpose
// is left between the convs.
TEST(ConvertLayout, ConcatOfConvsSinksAlongTheChannelAxis) {
  auto g = parseGraph(R"(
graph "g" opset 17 {
  input %x : f32[1,2,4,4]
  const %w : f32[2,2,1,1] = hex"0000803f000000000000000000000040"
  const %w4 : f32[2,4,1,1] = hex"0000803f0000000000000000000000400000803f0000000000000000000000c0"
  %a : f32[1,2,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} @"n20"
  %b : f32[1,2,4,4] = Conv(%a, %w) {kernel_shape = [1, 1]} @"n21"
  %c : f32[1,4,4,4] = Concat(%a, %b) {axis = -3} @"n22"
  %d : f32[1,2,4,4] = Conv(%c, %w4) {kernel_shape = [1, 1]} @"n23"
  output %d
}
)");
  auto stats = convert(*g);
  EXPECT_EQ(stats["transposes left"], 2) << printGraph(*g);  // graph input and output
  const Node* concat = nullptr;
  for (const auto& n : g->nodes())
    if (n->op() == "Concat") concat = n.get();
  ASSERT_TRUE(concat);
  EXPECT_EQ(concat->attrInt("axis", 0), 3);
  EXPECT_EQ(concat->output(0)->shape(), (Shape{1, 4, 4, 4}));
}

// Sinking through the ops between two convolutions, each written as the
// model would be: input [1,4,6,6] -> Conv 1x1 -> middle -> (Conv 1x1 when
// the middle gives 4-D) -> output. Each test checks what the middle became
// and that the pass keeps the outputs (interp, pass on vs off).
using Middle = std::function<Value*(GraphBuilder&, Value*)>;

Value* ints(GraphBuilder& b, std::vector<int64_t> v) { return b.constant(Tensor::vectorI64(v)); }

Value* conv1x1(GraphBuilder& b, Value* x) {
  const int64_t channels = x->shape()[1].value;
  Tensor w(DType::F32, {channels, channels, 1, 1});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = float(i % 7 - 3) * 0.25f;
  return b.op("Conv", {x, b.constant(w)}, {{"kernel_shape", std::vector<int64_t>{1, 1}}});
}

ModelBuilder between(const Middle& middle) {
  return [middle] {
    auto g = std::make_unique<Graph>("between");
    g->setOpset(17);
    GraphBuilder b(*g);
    Value* y = middle(b, conv1x1(b, b.input("x", {DType::F32, Shape::fromStatic({1, 4, 6, 6})})));
    b.output(y->shape().rank() == 4 ? conv1x1(b, y) : y);
    return g;
  };
}

// Runs convert-layout on the model, checks its numerics, and returns the converted graph.
std::unique_ptr<Graph> convertChecked(const ModelBuilder& build, std::map<std::string, int64_t>* stats = nullptr) {
  expectSameNumerics(build, exactly({"convert-layout"}), 1);
  auto g = build();
  auto s = convert(*g);
  if (stats) *stats = s;
  std::unordered_set<const Value*> read(g->outputs().begin(), g->outputs().end());
  for (const auto& n : g->nodes()) read.insert(n->inputs().begin(), n->inputs().end());
  for (const auto& n : g->nodes())  // what a rewrite leaves unread is gone too (Reshape shapes, transposes)
    EXPECT_TRUE(read.count(n->output(0))) << "dead after the pass: " << n->describe();
  for (const Value* c : g->initializers()) EXPECT_TRUE(read.count(c)) << "unread constant after the pass: " << c->name();
  return g;
}

const Node* only(const Graph& g, const std::string& op) {
  const Node* found = nullptr;
  for (const auto& n : g.nodes())
    if (n->op() == op) {
      EXPECT_EQ(found, nullptr) << "more than one " << op;
      found = n.get();
    }
  EXPECT_NE(found, nullptr) << "no " << op << " in\n" << printGraph(g, {.maxConstantBytes = 0});
  return found;
}

std::vector<const Node*> transposes(const Graph& g) {
  std::vector<const Node*> t;
  for (const auto& n : g.nodes())
    if (n->op() == "Transpose") t.push_back(n.get());
  return t;
}

std::vector<int64_t> intsOf(const Value* v) { return constantData(v)->toInt64Vector(); }

TEST(ConvertLayout, SliceAlongChannelsRunsChannelsLast) {
  auto g = convertChecked(between([](GraphBuilder& b, Value* x) {
    return b.op("Slice", {x, ints(b, {1}), ints(b, {3}), ints(b, {1})});
  }));
  EXPECT_EQ(intsOf(only(*g, "Slice")->input(3)), (std::vector<int64_t>{3}));
  EXPECT_EQ(transposes(*g).size(), 2u) << printGraph(*g, {.maxConstantBytes = 0});  // graph input and output
}

TEST(ConvertLayout, SplitAndConcatAlongChannelsRunChannelsLast) {
  auto g = convertChecked(between([](GraphBuilder& b, Value* x) {
    auto parts = b.opN("Split", {x, ints(b, {1, 3})}, 2, {{"axis", int64_t(1)}});
    return b.op("Concat", {parts[1], parts[0]}, {{"axis", int64_t(1)}});
  }));
  EXPECT_EQ(only(*g, "Split")->attrInt("axis", 0), 3);
  EXPECT_EQ(only(*g, "Concat")->attrInt("axis", 0), 3);
  EXPECT_EQ(transposes(*g).size(), 2u);
}

TEST(ConvertLayout, PadReordersItsPads) {
  auto g = convertChecked(between([](GraphBuilder& b, Value* x) {
    return b.op("Pad", {x, ints(b, {0, 0, 1, 2, 0, 0, 2, 1})});
  }));
  EXPECT_EQ(intsOf(only(*g, "Pad")->input(1)), (std::vector<int64_t>{0, 1, 2, 0, 0, 2, 1, 0}));
  EXPECT_EQ(transposes(*g).size(), 2u);
}

std::vector<float> floatsOf(const Value* v) {
  const Tensor* t = constantData(v);
  return std::vector<float>(t->data<float>(), t->data<float>() + t->numel());
}
Value* floats(GraphBuilder& b, const std::vector<float>& v) {
  return b.constant(Tensor::fromVector<float>(DType::F32, {int64_t(v.size())}, v));
}

// A U-Net's upsampling between convs runs channels last: its scales (or sizes) follow the dims.
TEST(ConvertLayout, ResizeBetweenConvsReordersItsScalesAndSizes) {
  auto g = convertChecked(between([](GraphBuilder& b, Value* x) {
    return b.op("Resize", {x, nullptr, floats(b, {1, 1, 2, 3})}, {{"mode", std::string("linear")}});
  }));
  EXPECT_EQ(floatsOf(only(*g, "Resize")->input(2)), (std::vector<float>{1, 2, 3, 1}));
  EXPECT_EQ(transposes(*g).size(), 2u);  // graph input and output
  auto h = convertChecked(between([](GraphBuilder& b, Value* x) {
    Value* up = b.op("Resize", {x, nullptr, nullptr, ints(b, {1, 4, 12, 9})}, {{"mode", std::string("nearest")}});
    return b.op("Concat", {up, up}, {{"axis", int64_t(1)}});  // the skip connection's Concat, then a conv
  }));
  EXPECT_EQ(intsOf(only(*h, "Resize")->input(3)), (std::vector<int64_t>{1, 12, 9, 4}));
  EXPECT_EQ(transposes(*h).size(), 2u);
}

// A segmentation head's last upsampling, read by the graph's output: the transpose stays before it, on the
// smaller tensor.
TEST(ConvertLayout, ResizeReadByTheGraphOutputKeepsItsTransposeBefore) {
  auto g = convertChecked([] {
    auto g = std::make_unique<Graph>("head");
    g->setOpset(17);
    GraphBuilder b(*g);
    Value* y = conv1x1(b, b.input("x", {DType::F32, Shape::fromStatic({1, 4, 6, 6})}));
    b.output(b.op("Resize", {y, nullptr, floats(b, {1, 1, 4, 4})}, {{"mode", std::string("linear")}}));
    return g;
  });
  EXPECT_EQ(floatsOf(only(*g, "Resize")->input(2)), (std::vector<float>{1, 1, 4, 4}));
  EXPECT_EQ(transposes(*g).size(), 2u);  // to NHWC for the conv, back before the Resize
}

// Without keepdims the reduced dims leave the perm: [N,H,W,C] reduced over H, W is [N,C], no transpose.
TEST(ConvertLayout, ReductionOverSpatialAxesNeedsNoTransposeAfter) {
  auto g = convertChecked(between([](GraphBuilder& b, Value* x) {
    return b.op("ReduceMean", {x}, {{"axes", std::vector<int64_t>{2, 3}}, {"keepdims", int64_t(0)}});
  }));
  EXPECT_EQ(only(*g, "ReduceMean")->attrInts("axes"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(transposes(*g).size(), 1u);  // the graph input's
}

TEST(ConvertLayout, ReductionKeepingDimsMapsItsAxesInput) {
  auto g = convertChecked(between([](GraphBuilder& b, Value* x) {
    Value* sum = b.op("ReduceSum", {x, ints(b, {1})}, {{"keepdims", int64_t(1)}});
    return b.op("Mul", {x, sum});  // broadcast over the channels
  }));
  EXPECT_EQ(intsOf(only(*g, "ReduceSum")->input(1)), (std::vector<int64_t>{3}));
  EXPECT_EQ(transposes(*g).size(), 2u);
}

// ShuffleNet: [N,C,H,W] -> [N,2,C/2,H,W] -> swap the groups -> [N,C,H,W]
// ends as one channels-last transpose [N,H,W,2,C/2] -> [N,H,W,C/2,2].
TEST(ConvertLayout, ChannelShuffleBecomesOneChannelsLastTranspose) {
  auto g = convertChecked(between([](GraphBuilder& b, Value* x) {
    Value* r = b.op("Reshape", {x, ints(b, {1, 2, 2, 6, 6})});
    Value* t = b.op("Transpose", {r}, {{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}});
    return b.op("Reshape", {t, ints(b, {1, 4, 6, 6})});
  }));
  auto ts = transposes(*g);
  ASSERT_EQ(ts.size(), 3u) << printGraph(*g, {.maxConstantBytes = 0});
  int shuffles = 0;
  for (const Node* t : ts)
    if (t->attrInts("perm") == std::vector<int64_t>{0, 1, 2, 4, 3}) {
      ++shuffles;
      EXPECT_EQ(t->input(0)->shape(), (Shape{1, 6, 6, 2, 2}));
    }
  EXPECT_EQ(shuffles, 1);
}

// ConvNeXt: the model's own channels-last section between its own transposes, then a residual Add.
TEST(ConvertLayout, ModelsOwnToNchwTransposeSinksLikeALayoutTranspose) {
  auto g = convertChecked(between([](GraphBuilder& b, Value* x) {
    Value* t = b.op("Transpose", {x}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
    Tensor gamma = Tensor::fromVector<float>(DType::F32, {4}, {1, 2, 3, 4}), beta(DType::F32, {4});
    Value* n = b.op("LayerNormalization", {t, b.constant(gamma), b.constant(beta)}, {{"axis", int64_t(-1)}});
    Value* back = b.op("Transpose", {n}, {{"perm", std::vector<int64_t>{0, 3, 1, 2}}});
    return b.op("Add", {back, x});
  }));
  EXPECT_EQ(transposes(*g).size(), 2u) << printGraph(*g, {.maxConstantBytes = 0});
}

// A squeeze-excite scale computed by a Gemm and reshaped to [N,C,1,1] joins the
// channels-last Mul as a reshape to [N,1,1,C].
TEST(ConvertLayout, SqueezeExciteScaleFromAGemmJoinsChannelsLast) {
  auto g = convertChecked(between([](GraphBuilder& b, Value* x) {
    Value* pooled = b.op("Flatten", {b.op("GlobalAveragePool", {x})}, {{"axis", int64_t(1)}});
    Tensor w(DType::F32, {4, 4});
    for (int64_t i = 0; i < 16; ++i) w.data<float>()[i] = float(i % 5) * 0.1f;
    Value* s = b.op("Sigmoid", {b.op("Gemm", {pooled, b.constant(w)}, {{"transB", int64_t(1)}})});
    return b.op("Mul", {x, b.op("Reshape", {s, ints(b, {1, 4, 1, 1})})});
  }));
  EXPECT_EQ(transposes(*g).size(), 2u) << printGraph(*g, {.maxConstantBytes = 0});
}

// MaxViT's window reverse: the model's own transpose from [B, gh, gw, ph, pw, C]
// to [B, C, gh, ph, gw, pw], a reshape to NCHW, a conv. The transpose moves
// above the reshape as a channels-last one and the to-NHWC transpose of the conv cancels.
TEST(ConvertLayout, WindowReverseMeetsTheNextConv) {
  auto g = convertChecked([] {
    auto g = std::make_unique<Graph>("reverse");
    g->setOpset(17);
    GraphBuilder b(*g);
    Value* x = b.input("x", {DType::F32, Shape::fromStatic({1, 2, 2, 3, 3, 4})});
    Value* t = b.op("Transpose", {x}, {{"perm", std::vector<int64_t>{0, 5, 1, 3, 2, 4}}});
    b.output(conv1x1(b, b.op("Reshape", {t, ints(b, {1, 4, 6, 6})})));
    return g;
  });
  auto ts = transposes(*g);
  ASSERT_EQ(ts.size(), 2u) << printGraph(*g, {.maxConstantBytes = 0});  // the window reverse and the output's
  EXPECT_EQ(ts[0]->attrInts("perm"), (std::vector<int64_t>{0, 1, 3, 2, 4, 5}));
}

// Flattening NCHW mixes the channels into the rows: the transpose stays before the reshape.
TEST(ConvertLayout, ReshapeThatMixesChannelsKeepsItsTranspose) {
  auto g = parseGraph(R"(
graph "g" opset 17 {
  input %x : f32[1,2,4,4]
  const %w : f32[2,2,1,1] = hex"0000803f000000000000000000000040"
  const %shape : i64[2] = hex"01000000000000002000000000000000"
  %a : f32[1,2,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} @"n10"
  %r : f32[1,2,4,4] = Relu(%a) @"n11"
  %f : f32[1,32] = Reshape(%r, %shape) @"n12"
  output %f
}
)");
  auto stats = convert(*g);
  EXPECT_EQ(stats["transposes left"], 2);
  const Node* reshape = nullptr;
  for (const auto& n : g->nodes())
    if (n->op() == "Reshape") reshape = n.get();
  ASSERT_TRUE(reshape);
  EXPECT_EQ(reshape->input(0)->producer()->op(), "Transpose");
}

// Transposes outside Fused bodies only at the input, or right before the head's Flatten/Reshape.
class LayoutCnn : public ::testing::TestWithParam<const char*> {};
TEST_P(LayoutCnn, OnlyBoundaryTransposesLeft) {
  auto g = zoo::build(zoo::parseSpec(GetParam()));
  auto stats = convert(*g);
  EXPECT_GT(stats["ops converted"], 0);
  std::unordered_set<const Value*> inputs(g->inputs().begin(), g->inputs().end());
  std::unordered_map<const Value*, std::vector<const Node*>> users;
  for (const auto& n : g->nodes())
    for (const Value* in : n->inputs()) users[in].push_back(n.get());
  for (const auto& n : g->nodes()) {
    if (n->op() != "Transpose") continue;
    bool atInput = inputs.count(n->input(0)) > 0;
    bool beforeHead = !users[n->output(0)].empty();
    for (const Node* u : users[n->output(0)]) beforeHead &= u->op() == "Flatten" || u->op() == "Reshape";
    EXPECT_TRUE(atInput || beforeHead) << n->describe() << "\n" << printGraph(*g, {.maxConstantBytes = 0});
  }
  std::printf("%s: %lld converted, %lld inserted, %lld cancelled, %lld left\n", GetParam(),
              (long long)stats["ops converted"], (long long)stats["transposes inserted"],
              (long long)stats["transposes cancelled"], (long long)stats["transposes left"]);
}
INSTANTIATE_TEST_SUITE_P(Zoo, LayoutCnn,
                         ::testing::Values("resnet?depth=3&width=8&resolution=16", "mobilenetv2?depth=2&width=8&resolution=16",
                                           "resnet?depth=4&width=8&resolution=32&block=bottleneck"));

TEST(ConvertLayout, SameNumericsOnEveryModel) { expectSameNumericsOnAllModels({"convert-layout"}); }

