// The model zoo: every archetype builds, verifies, round-trips through ONNX
// and runs; parameter and FLOP counts match closed-form formulas written from
// the architectures (not from the graphs); presets match published counts.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <unistd.h>

#include "frontend/onnx/OnnxExport.h"
#include "frontend/onnx/OnnxImport.h"
#include "frontend/zoo/Zoo.h"
#include "ir/Error.h"
#include "ir/OpRegistry.h"
#include "ir/Specialize.h"
#include "ir/Verifier.h"
#include "runtime/interp/Interpreter.h"

using namespace friction;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<Graph> zooModel(const std::string& spec) { return zoo::build(zoo::parseSpec(spec)); }

// Learned parameters: float tensors of rank >= 1. The rest are shared
// constants (GELU/attention scalars, Reshape shapes, the class-token index).
int64_t learnedParams(const Graph& g) {
  int64_t n = 0;
  for (const Value* v : g.initializers())
    if (v->dtype() == DType::F32 && v->constant().rank() >= 1) n += v->constant().numel();
  return n;
}

int64_t totalParams(const Graph& g) {
  int64_t n = 0;
  for (const Value* v : g.initializers()) n += v->constant().numel();
  return n;
}

int64_t totalFlops(const Graph& g) {
  int64_t f = 0;
  for (const auto& n : g.nodes()) f += nodeFlops(*n);
  return f;
}

// ---- Closed forms. FLOP conventions of the op registry: a multiply-add is 2
// FLOPs (Conv, MatMul, Gemm); a bias, elementwise op, activation or pooled
// element 1 per output; BatchNormalization 2 and LayerNormalization 8 per
// element; Softmax 5 per element; MaxPool k*k per output; reshapes 0. ----

struct Count {
  int64_t params = 0, flops = 0;
  void add(int64_t p, int64_t f) { params += p, flops += f; }
};

int64_t convOut(int64_t h, int64_t k, int64_t s, int64_t p) { return (h + 2 * p - k) / s + 1; }

std::vector<int64_t> spread(int64_t depth, int64_t n) {  // remainder to the last stages
  std::vector<int64_t> r;
  for (int64_t s = 0; s < n; ++s) r.push_back(depth / n + (s >= n - depth % n ? 1 : 0));
  return r;
}

// k x k conv (cin -> cout, no bias) producing ho x ho, BatchNorm (4 tensors
// of cout), optional activation.
void convBn(Count& c, int64_t cin, int64_t cout, int64_t k, int64_t ho, bool act, int64_t group = 1) {
  int64_t y = cout * ho * ho;
  c.add(k * k * cin / group * cout + 4 * cout, 2 * y * (cin / group) * k * k + 2 * y + (act ? y : 0));
}

// Gemm/linear over `rows` rows: in*out + out parameters.
void linear(Count& c, int64_t rows, int64_t in, int64_t out) { c.add(in * out + out, 2 * rows * in * out + rows * out); }
// LayerNorm over `rows` rows of `d` features.
void layerNorm(Count& c, int64_t rows, int64_t d) { c.add(2 * d, 8 * rows * d); }
// Linear-GELU-Linear; GELU is 5 elementwise ops.
void mlp(Count& c, int64_t rows, int64_t d, int64_t hidden) {
  linear(c, rows, d, hidden);
  c.flops += 5 * rows * hidden;
  linear(c, rows, hidden, d);
}
// Patch embedding: conv p x p stride p with bias, 3 -> d over `tokens` positions.
void patchEmbed(Count& c, int64_t tokens, int64_t d, int64_t p) { c.add(3 * p * p * d + d, 2 * tokens * d * 3 * p * p + tokens * d); }

Count resnetFormula(int64_t depth, int64_t w, int64_t res, bool bottleneck, int64_t classes) {
  Count c;
  int64_t h = convOut(res, 7, 2, 3);
  convBn(c, 3, w, 7, h, true);
  h = convOut(h, 3, 2, 1);
  c.flops += 9 * w * h * h;  // max pool 3x3
  int64_t ch = w;
  auto stages = spread(depth, 4);
  for (int64_t s = 0; s < 4; ++s)
    for (int64_t i = 0; i < stages[s]; ++i) {
      int64_t stride = i == 0 && s > 0 ? 2 : 1, m = w << s, out = bottleneck ? 4 * m : m;
      int64_t ho = convOut(h, 3, stride, 1);
      if (bottleneck) {
        convBn(c, ch, m, 1, h, true);
        convBn(c, m, m, 3, ho, true);
        convBn(c, m, out, 1, ho, false);
      } else {
        convBn(c, ch, m, 3, ho, true);
        convBn(c, m, m, 3, ho, false);
      }
      if (stride != 1 || ch != out) convBn(c, ch, out, 1, ho, false);  // projection shortcut
      c.flops += 2 * out * ho * ho;                                      // Add + Relu
      h = ho, ch = out;
    }
  c.flops += ch * h * h;  // global average pool
  linear(c, 1, ch, classes);
  return c;
}

Count mobilenetFormula(int64_t depth, int64_t w, int64_t res, int64_t expand, int64_t classes) {
  const int64_t chans[7] = {16, 24, 32, 64, 96, 160, 320}, strides[7] = {1, 2, 2, 2, 1, 2, 1};
  auto sc = [&](int64_t v) { return std::max<int64_t>(1, v * w / 32); };
  Count c;
  int64_t h = convOut(res, 3, 2, 1), ch = sc(32);
  convBn(c, 3, ch, 3, h, true);
  auto stages = spread(depth, 7);
  for (int64_t s = 0; s < 7; ++s)
    for (int64_t i = 0; i < stages[s]; ++i) {
      int64_t t = s == 0 ? 1 : expand, hid = ch * t, out = sc(chans[s]), stride = i == 0 ? strides[s] : 1;
      int64_t ho = convOut(h, 3, stride, 1);
      if (t != 1) convBn(c, ch, hid, 1, h, true);
      convBn(c, hid, hid, 3, ho, true, hid);  // depthwise
      convBn(c, hid, out, 1, ho, false);
      if (stride == 1 && ch == out) c.flops += out * ho * ho;
      h = ho, ch = out;
    }
  int64_t last = sc(1280);
  convBn(c, ch, last, 1, h, true);
  c.flops += last * h * h;
  linear(c, 1, last, classes);
  return c;
}

Count convnextFormula(int64_t depth, int64_t w, int64_t res, int64_t ratio, int64_t classes) {
  Count c;
  int64_t h = convOut(res, 4, 4, 0), ch = w;
  c.add(48 * w + w, 2 * w * h * h * 48 + w * h * h);  // stem conv 4x4/4 with bias
  layerNorm(c, h * h, w);
  auto stages = spread(depth, 4);
  for (int64_t s = 0; s < 4; ++s) {
    if (stages[s] == 0) continue;
    if (s > 0) {
      layerNorm(c, h * h, ch);
      int64_t ho = convOut(h, 2, 2, 0), out = w << s;
      c.add(4 * ch * out + out, 2 * out * ho * ho * ch * 4 + out * ho * ho);
      h = ho, ch = out;
    }
    int64_t p = h * h;
    for (int64_t i = 0; i < stages[s]; ++i) {
      c.add(49 * ch + ch, 2 * ch * p * 49 + ch * p);  // depthwise 7x7 with bias
      layerNorm(c, p, ch);
      mlp(c, p, ch, ratio * ch);
      c.add(ch, ch * p);  // layer scale
      c.flops += ch * p;  // residual
    }
  }
  c.flops += ch * h * h;  // global average pool
  layerNorm(c, 1, ch);
  linear(c, 1, ch, classes);
  return c;
}

Count vitFormula(int64_t depth, int64_t d, int64_t heads, int64_t patch, int64_t res, int64_t ratio, int64_t classes) {
  Count c;
  int64_t g = res / patch, t = g * g + 1;
  patchEmbed(c, g * g, d, patch);
  c.add(d + t * d, t * d);  // class token; position embedding Add
  for (int64_t i = 0; i < depth; ++i) {
    layerNorm(c, t, d);
    for (int j = 0; j < 4; ++j) linear(c, t, d, d);  // q, k, v, proj
    // scores (T x T per head over head_dim) + scale + softmax + context.
    c.flops += 2 * t * t * d + heads * t * t + 5 * heads * t * t + 2 * t * t * d;
    c.flops += t * d;  // residual
    layerNorm(c, t, d);
    mlp(c, t, d, ratio * d);
    c.flops += t * d;
  }
  layerNorm(c, t, d);
  linear(c, 1, d, classes);
  return c;
}

Count mixerFormula(int64_t depth, int64_t d, int64_t patch, int64_t res, int64_t ratio, int64_t classes) {
  Count c;
  int64_t t = (res / patch) * (res / patch), ds = std::max<int64_t>(1, d / 2);
  patchEmbed(c, t, d, patch);
  for (int64_t i = 0; i < depth; ++i) {
    layerNorm(c, t, d);
    mlp(c, d, t, ds);  // token mixing: d rows of t tokens
    c.flops += t * d;
    layerNorm(c, t, d);
    mlp(c, t, d, ratio * d);
    c.flops += t * d;
  }
  layerNorm(c, t, d);
  c.flops += t * d;  // mean over tokens
  linear(c, 1, d, classes);
  return c;
}

Count mlpFormula(int64_t depth, int64_t w, int64_t inputs, int64_t classes) {
  Count c;
  int64_t in = inputs;
  for (int64_t i = 0; i < depth; ++i, in = w) {
    linear(c, 1, in, w);
    c.flops += w;  // Relu
  }
  linear(c, 1, in, classes);
  return c;
}

void expectCounts(const std::string& spec, const Count& want) {
  SCOPED_TRACE(spec);
  auto g = zooModel(spec + "&batch=1");
  EXPECT_EQ(learnedParams(*g), want.params);
  EXPECT_LE(totalParams(*g) - learnedParams(*g), 32);  // only a few shared constants
  EXPECT_EQ(totalFlops(*g), want.flops);
}

std::string S(const char* fmt, auto... args) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

}  // namespace

TEST(Zoo, ResnetCountsMatchFormula) {
  for (int64_t depth : {0, 1, 3, 6, 9})
    for (int64_t w : {8, 16})
      for (bool bn : {false, true})
        expectCounts(S("resnet?depth=%ld&width=%ld&resolution=64&block=%s", long(depth), long(w), bn ? "bottleneck" : "basic"),
                     resnetFormula(depth, w, 64, bn, 10));
}

TEST(Zoo, MobileNetV2CountsMatchFormula) {
  for (int64_t depth : {1, 4, 7, 10})
    for (int64_t w : {8, 32})
      expectCounts(S("mobilenetv2?depth=%ld&width=%ld&resolution=64", long(depth), long(w)), mobilenetFormula(depth, w, 64, 6, 10));
  expectCounts("mobilenetv2?depth=9&width=16&expand=3&classes=7", mobilenetFormula(9, 16, 32, 3, 7));
}

TEST(Zoo, ConvnextCountsMatchFormula) {
  for (int64_t depth : {0, 2, 4, 7})
    for (int64_t w : {8, 24})
      expectCounts(S("convnext?depth=%ld&width=%ld&resolution=64", long(depth), long(w)), convnextFormula(depth, w, 64, 4, 10));
  expectCounts("convnext?depth=5&mlp_ratio=2", convnextFormula(5, 16, 32, 2, 10));
}

TEST(Zoo, VitCountsMatchFormula) {
  for (int64_t depth : {0, 1, 3})
    for (int64_t w : {32, 96})
      expectCounts(S("vit?depth=%ld&width=%ld&heads=4&patch=8&resolution=32", long(depth), long(w)),
                   vitFormula(depth, w, 4, 8, 32, 4, 10));
  expectCounts("vit?depth=2&width=48&heads=3&patch=4&resolution=20&mlp_ratio=2&classes=5", vitFormula(2, 48, 3, 4, 20, 2, 5));
}

TEST(Zoo, MixerCountsMatchFormula) {
  for (int64_t depth : {0, 1, 4})
    for (int64_t w : {32, 64})
      expectCounts(S("mixer?depth=%ld&width=%ld&patch=8&resolution=32", long(depth), long(w)), mixerFormula(depth, w, 8, 32, 4, 10));
  expectCounts("mixer?depth=3&width=24&patch=4&resolution=24&mlp_ratio=2", mixerFormula(3, 24, 4, 24, 2, 10));
}

TEST(Zoo, MlpCountsMatchFormula) {
  for (int64_t depth : {0, 1, 5})
    for (int64_t w : {3, 64}) expectCounts(S("mlp?depth=%ld&width=%ld&inputs=20", long(depth), long(w)), mlpFormula(depth, w, 20, 10));
}

// Published parameter counts (torchvision / timm) within 5%; our count also
// holds BatchNorm running statistics. FLOPs within 10% of twice the published
// multiply-accumulates.
TEST(Zoo, PresetsMatchPublishedModels) {
  const std::map<std::string, double> publishedGMacs = {
      {"resnet18", 1.82}, {"resnet34", 3.67}, {"resnet50", 4.11}, {"mobilenetv2", 0.30}, {"convnext_t", 4.5},
      {"vit_ti", 1.26},   {"vit_s", 4.61},    {"vit_b", 17.58},   {"mixer_s16", 3.8},   {"mixer_b16", 12.6}};
  int checked = 0;
  for (const auto& arch : zoo::list())
    for (const auto& p : arch.presets) {
      if (p.publishedParams == 0) continue;  // not a published model (e.g. mlp_1g)
      SCOPED_TRACE(p.name);
      auto g = zooModel(arch.name + "?preset=" + p.name + "&batch=1");
      double ratio = double(totalParams(*g)) / double(p.publishedParams);
      EXPECT_NEAR(ratio, 1.0, 0.05);
      ASSERT_TRUE(publishedGMacs.count(p.name));
      EXPECT_NEAR(double(totalFlops(*g)) / (2e9 * publishedGMacs.at(p.name)), 1.0, 0.1);
      ++checked;
    }
  EXPECT_EQ(checked, 10);
}

TEST(Zoo, PresetKnobsAreOverridable) {
  // An explicit depth replaces the preset's stage list (spread evenly).
  auto g = zooModel("resnet?preset=resnet50&depth=8&resolution=32&batch=1");
  EXPECT_EQ(learnedParams(*g), resnetFormula(8, 64, 32, true, 1000).params);
  auto v = zooModel("vit?preset=vit_ti&depth=1&resolution=32&batch=1");
  EXPECT_EQ(learnedParams(*v), vitFormula(1, 192, 3, 16, 32, 4, 1000).params);
}

// Builds, verifies, exports (ONNX checker), re-imports, and runs at batch 2;
// outputs are finite, reproducible for a seed and different for another.
TEST(Zoo, EveryArchetypeRoundTripsAndRuns) {
  const std::vector<std::string> specs = {
      "resnet?width=4&resolution=16",
      "resnet?width=4&resolution=16&block=bottleneck",
      "mobilenetv2?width=8&resolution=16",
      "convnext?width=8&resolution=32",
      "vit?width=16&heads=2&patch=8&resolution=16",
      "mixer?width=16&patch=4&resolution=16",
      "mlp?width=8&inputs=6",
  };
  fs::path dir = fs::temp_directory_path() / ("friction_zoo_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const auto& base : specs)
    for (int depth : {1, 3}) {
      std::string spec = base + "&depth=" + std::to_string(depth);
      SCOPED_TRACE(spec);
      auto runSeed = [&](int seed) {
        auto g = zooModel(spec + "&seed=" + std::to_string(seed));
        verify(*g);
        EXPECT_EQ(g->outputs()[0]->shape().str(), "[N,10]");
        std::string path = (dir / "model.onnx").string();
        onnxio::exportOnnxFile(*g, path);
        auto back = onnxio::importOnnxFile(path);
        verify(*back);
        EXPECT_EQ(back->outputs()[0]->shape().str(), "[N,10]");
        EXPECT_EQ(back->nodes().size(), g->nodes().size());
        bindInputDims(*back, batchBindings(*back, 2));
        const Value* in = back->inputs()[0];
        Tensor x(DType::F32, in->shape().staticDims());
        for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float(std::sin(0.37 * double(i)));
        Tensor y = interp::run(*back, {x})[0];
        EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 10}));
        for (int64_t i = 0; i < y.numel(); ++i) EXPECT_TRUE(std::isfinite(y.data<float>()[i]));
        return y;
      };
      Tensor a = runSeed(0), b = runSeed(0), c = runSeed(1);
      EXPECT_TRUE(a.bitwiseEqual(b));
      EXPECT_FALSE(a.bitwiseEqual(c));
    }
  fs::remove_all(dir);
}

TEST(Zoo, KeepsDemoSpecsAndStaticBatch) {
  auto r = zooModel("resnet?depth=4&width=32&resolution=64");
  verify(*r);
  EXPECT_EQ(r->outputs()[0]->shape().str(), "[N,10]");
  auto m = zooModel("mlp?depth=1&width=3&inputs=2&classes=2");
  EXPECT_EQ(totalParams(*m), 2 * 3 + 3 + 3 * 2 + 2);
  EXPECT_EQ(zooModel("vit?batch=4")->outputs()[0]->shape().str(), "[4,10]");
  EXPECT_EQ(zooModel("convnext?batch=B")->outputs()[0]->shape().str(), "[B,10]");
}

TEST(Zoo, NodeNamesAreHierarchical) {
  auto g = zooModel("resnet?depth=8&block=bottleneck");
  std::set<std::string> names;
  for (const auto& n : g->nodes()) names.insert(n->name());
  for (const char* n : {"stem.conv", "stem.pool", "stage2.block1.conv1", "stage2.block1.downsample", "stage4.block2.add",
                        "head.fc"})
    EXPECT_TRUE(names.count(n)) << n;
  EXPECT_EQ(names.size(), g->nodes().size());  // unique
}

TEST(Zoo, BadKnobsGiveClearErrors) {
  auto expectError = [](const std::string& spec, const std::string& part) {
    try {
      zooModel(spec);
      ADD_FAILURE() << spec << " built";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expectError("vit?foo=1", "unknown knob 'foo'");
  expectError("vit?depth=two", "knob depth='two' is not an integer");
  expectError("mlp?width=0", "knob width='0' is out of range");
  expectError("resnet?preset=resnet9", "unknown preset 'resnet9'");
  expectError("resnet?block=wide", "knob block='wide' must be one of basic|bottleneck");
  expectError("resnet?stages=1,2", "must list 4 stages");
  expectError("resnet?stages=1,1,1,1&depth=3", "has 4 blocks but depth=3");
  expectError("vit?width=30&heads=4", "not divisible by heads");
  expectError("mixer?batch=2x", "knob batch='2x'");
  expectError("convnext?resolution=8", "too small");
  expectError("transformer", "unknown zoo architecture 'transformer'");
}
