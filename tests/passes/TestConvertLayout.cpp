#include "frontend/onnx/OnnxImport.h"
#include "frontend/zoo/Zoo.h"
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

TEST(ConvertLayout, ReshapeStopsSinking) {
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

