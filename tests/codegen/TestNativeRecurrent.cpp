// The recurrent layers RNN, GRU and LSTM: the cpu backend's native kernel
// (codegen/NativeRecurrentOps.cpp) against the interpreter in every
// configuration of direction, layout, sequence lengths, clip, activations,
// peepholes, input_forget and linear_before_reset; the interpreter's own
// semantics checked by properties the ONNX node tests do not cover (a padded
// batch row is its own shorter sequence; layout 1 is layout 0 transposed;
// alphas and betas go to the activations that take them); bad attributes and
// lengths as errors naming the node.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>

#include "codegen/CpuBackend.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "runtime/interp/Interpreter.h"
#include "tests/codegen/FakeKernelSource.h"
#include "tests/common/BackendTestUtil.h"

namespace friction {
namespace {

using test::errorOf;
using test::expectClose;
using test::randomTensor;
using Ints = std::vector<int64_t>;

struct Layer {
  std::string op = "LSTM";
  std::string direction = "forward";
  int64_t layout = 0;
  int64_t seq = 5, batch = 3, input = 4, hidden = 6;
  bool bias = true, initialState = true, peepholes = false;
  std::vector<int32_t> lengths;  // empty: no sequence_lens
  std::map<std::string, Attribute> attrs;

  int directions() const { return direction == "bidirectional" ? 2 : 1; }
  int64_t gates() const { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }
  Ints xShape() const { return layout ? Ints{batch, seq, input} : Ints{seq, batch, input}; }
  Ints stateShape() const { return layout ? Ints{batch, directions(), hidden} : Ints{directions(), batch, hidden}; }
  std::string name() const {
    std::string n = op + " " + direction + " layout " + std::to_string(layout);
    if (!lengths.empty()) n += " with lengths";
    for (const auto& [k, v] : attrs) n += " " + k;
    return n;
  }
};

// The layer as a graph of one input x, with constant weights (seeded), every output a graph output.
std::unique_ptr<Graph> layerGraph(const Layer& l, uint64_t seed = 3) {
  auto g = std::make_unique<Graph>("layer");
  GraphBuilder b(*g);
  const int64_t dirs = l.directions(), rows = l.gates() * l.hidden;
  // Weights of 1/sqrt(fan-in) or so, as trained layers have, keep the recurrence from amplifying rounding.
  const float wScale = 1.5f / std::sqrt(float(l.input)), rScale = 1.5f / std::sqrt(float(l.hidden));
  std::vector<Value*> in = {b.input("x", {DType::F32, Shape::fromStatic(l.xShape())}),
                            b.constant(randomTensor({dirs, rows, l.input}, seed, -wScale, wScale)),
                            b.constant(randomTensor({dirs, rows, l.hidden}, seed + 1, -rScale, rScale)),
                            l.bias ? b.constant(randomTensor({dirs, 2 * rows}, seed + 2, -0.5f, 0.5f)) : nullptr,
                            l.lengths.empty() ? nullptr
                                              : b.constant(Tensor::fromVector<int32_t>(DType::I32, {l.batch}, l.lengths)),
                            l.initialState ? b.constant(randomTensor(l.stateShape(), seed + 3)) : nullptr};
  if (l.op == "LSTM") {
    in.push_back(l.initialState ? b.constant(randomTensor(l.stateShape(), seed + 4)) : nullptr);
    in.push_back(l.peepholes ? b.constant(randomTensor({dirs, 3 * l.hidden}, seed + 5, -0.5f, 0.5f)) : nullptr);
  }
  while (!in.back()) in.pop_back();
  std::map<std::string, Attribute> attrs = l.attrs;
  attrs["direction"] = l.direction;
  attrs["hidden_size"] = l.hidden;
  attrs["layout"] = l.layout;
  for (Value* v : b.opN(l.op, in, l.op == "LSTM" ? 3 : 2, attrs)) b.output(v);
  return g;
}

// Runs `layer` on the cpu backend (native kernels only) and the interpreter; expects every output within rtol.
void expectNativeMatchesInterp(const Layer& layer, double rtol = 1e-5) {
  SCOPED_TRACE(layer.name());
  auto g = layerGraph(layer);
  test::FakeSource source;
  auto model = codegen::compileCpuModel(*g, source, "native only");
  EXPECT_EQ(model->interpNodes(), 0) << model->description();
  std::vector<Tensor> in = {randomTensor(layer.xShape(), 7)};
  const auto want = interp::run(*g, in);
  // R is arranged at build for the threads there are; a run on fewer threads arranges it anew.
  const int threads = omp_get_max_threads();
  for (int runThreads : {threads, 1}) {
    omp_set_num_threads(runThreads);
    auto got = model->run(in);
    omp_set_num_threads(threads);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      expectClose(got[i], want[i], rtol, layer.name() + " output " + std::to_string(i) + " on " +
                                             std::to_string(runThreads) + " threads");
  }
}

TEST(RecurrentLayers, NativeKernelMatchesTheInterpreterInEveryConfiguration) {
  for (const char* op : {"RNN", "GRU", "LSTM"})
    for (const char* direction : {"forward", "reverse", "bidirectional"})
      for (int64_t layout : {0, 1})
        for (bool lengths : {false, true}) {
          Layer l;
          l.op = op, l.direction = direction, l.layout = layout;
          if (lengths) l.lengths = {5, 2, 0};
          expectNativeMatchesInterp(l);
        }
  Layer gru;
  gru.op = "GRU";
  for (int64_t lbr : {0, 1}) {
    gru.attrs = {{"linear_before_reset", lbr}, {"clip", 0.7f}};
    expectNativeMatchesInterp(gru);
  }
  Layer lstm;
  lstm.peepholes = true;
  lstm.direction = "bidirectional";
  lstm.lengths = {1, 5, 3};
  lstm.attrs = {{"input_forget", int64_t(1)}, {"clip", 1.5f}};
  expectNativeMatchesInterp(lstm);
  lstm.attrs = {{"activations", std::vector<std::string>{"HardSigmoid", "Softsign", "Elu", "Sigmoid", "ScaledTanh",
                                                          "Affine"}},
                {"activation_alpha", std::vector<float>{0.3f, 0.5f, 1.2f, 0.7f}},
                {"activation_beta", std::vector<float>{0.4f, 0.8f, 0.1f}}};
  expectNativeMatchesInterp(lstm);
  // Wide enough for the threads to share the hidden units (80: 48 and 32 on two), each cell, the GRU both ways;
  // sums of 100 products in another order than the interpreter's, so 1e-4 (outputs near 0 differ by ~2e-7).
  for (const char* op : {"RNN", "GRU", "LSTM"})
    for (int64_t lbr : {0, 1}) {
      Layer wide;
      wide.op = op, wide.direction = "bidirectional", wide.hidden = 80, wide.input = 20, wide.lengths = {5, 3, 4};
      wide.peepholes = true;
      if (wide.op == "GRU") wide.attrs = {{"linear_before_reset", lbr}};
      else if (lbr) continue;
      expectNativeMatchesInterp(wide, 1e-4);
    }
  Layer bare;  // no bias, no initial state, one batch row
  bare.op = "GRU", bare.bias = false, bare.initialState = false, bare.batch = 1;
  expectNativeMatchesInterp(bare);
}

// Row n of a batch with sequence_lens is the layer run on that row alone, cut to its length: its Y past the
// length is zero, its Y_h (and Y_c) the state after its last element, for both directions (the reverse one
// starting at the row's last element).
TEST(RecurrentLayers, APaddedBatchRowIsItsOwnShorterSequence) {
  Layer padded;
  padded.direction = "bidirectional", padded.lengths = {5, 2, 1}, padded.initialState = false;
  auto g = layerGraph(padded);
  const Tensor x = randomTensor(padded.xShape(), 9);
  const auto whole = interp::run(*g, {x});
  const int64_t h = padded.hidden, in = padded.input;
  for (int64_t n = 0; n < padded.batch; ++n) {
    Layer alone = padded;
    alone.lengths = {}, alone.batch = 1, alone.seq = padded.lengths[size_t(n)];
    Tensor xn(DType::F32, alone.xShape());
    for (int64_t t = 0; t < alone.seq; ++t)
      std::copy_n(x.data<float>() + (t * padded.batch + n) * in, in, xn.data<float>() + t * in);
    const auto own = interp::run(*layerGraph(alone), {xn});
    for (int64_t t = 0; t < padded.seq; ++t)
      for (int d = 0; d < 2; ++d)
        for (int64_t j = 0; j < h; ++j) {
          const float got = whole[0].data<float>()[((t * 2 + d) * padded.batch + n) * h + j];
          EXPECT_FLOAT_EQ(got, t < alone.seq ? own[0].data<float>()[(t * 2 + d) * h + j] : 0.f)
              << "Y of row " << n << " at " << t << ", direction " << d;
        }
    for (size_t out : {1, 2})
      for (int d = 0; d < 2; ++d)
        for (int64_t j = 0; j < h; ++j)
          EXPECT_FLOAT_EQ(whole[out].data<float>()[(d * padded.batch + n) * h + j], own[out].data<float>()[d * h + j])
              << "output " << out << " of row " << n << ", direction " << d;
  }
}

// layout 1 ([batch, seq, ...]) computes what layout 0 computes on the transposed input.
TEST(RecurrentLayers, BatchMajorLayoutIsTheSequenceMajorOneTransposed) {
  for (const char* op : {"RNN", "GRU", "LSTM"}) {
    Layer seqMajor;
    seqMajor.op = op, seqMajor.direction = "bidirectional";
    Layer batchMajor = seqMajor;
    batchMajor.layout = 1;
    const Tensor x = randomTensor(seqMajor.xShape(), 5);
    Tensor xt(DType::F32, batchMajor.xShape());
    const int64_t S = seqMajor.seq, B = seqMajor.batch, I = seqMajor.input, H = seqMajor.hidden;
    for (int64_t t = 0; t < S; ++t)
      for (int64_t n = 0; n < B; ++n) std::copy_n(x.data<float>() + (t * B + n) * I, I, xt.data<float>() + (n * S + t) * I);
    // The initial states differ in layout too: give neither.
    seqMajor.initialState = batchMajor.initialState = false;
    const auto a = interp::run(*layerGraph(seqMajor), {x}), b = interp::run(*layerGraph(batchMajor), {xt});
    for (int64_t t = 0; t < S; ++t)
      for (int d = 0; d < 2; ++d)
        for (int64_t n = 0; n < B; ++n)
          for (int64_t j = 0; j < H; ++j)
            EXPECT_FLOAT_EQ(b[0].data<float>()[((n * S + t) * 2 + d) * H + j], a[0].data<float>()[((t * 2 + d) * B + n) * H + j])
                << op << " Y";
    for (int d = 0; d < 2; ++d)
      for (int64_t n = 0; n < B; ++n)
        for (int64_t j = 0; j < H; ++j)
          EXPECT_FLOAT_EQ(b[1].data<float>()[(n * 2 + d) * H + j], a[1].data<float>()[(d * B + n) * H + j]) << op << " Y_h";
  }
}

// One step of a bidirectional RNN of one hidden unit and one input, written out: direction 0 LeakyRelu takes
// alpha 0.1; direction 1 HardSigmoid takes the next alpha (0.3) and the first beta (0.6); clip 0.5 bounds the
// activations' input.
TEST(RecurrentLayers, AlphasAndBetasGoToTheActivationsThatTakeThem) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, Shape::fromStatic({1, 1, 1})});
  Value* w = b.constant(Tensor::fromVector<float>(DType::F32, {2, 1, 1}, {2.f, -1.f}));
  Value* r = b.constant(Tensor::fromVector<float>(DType::F32, {2, 1, 1}, {0.f, 0.f}));
  Value* bias = b.constant(Tensor::fromVector<float>(DType::F32, {2, 2}, {0.1f, 0.f, 0.f, 0.2f}));
  auto outs = b.opN("RNN", {x, w, r, bias}, 2,
                    {{"direction", std::string("bidirectional")}, {"hidden_size", int64_t(1)}, {"clip", 0.5f},
                     {"activations", std::vector<std::string>{"LeakyRelu", "HardSigmoid"}},
                     {"activation_alpha", std::vector<float>{0.1f, 0.3f}}, {"activation_beta", std::vector<float>{0.6f}}});
  b.output(outs[1]);
  for (float v : {-2.f, 0.1f, 3.f}) {
    const auto y = interp::run(g, {Tensor::fromVector<float>(DType::F32, {1, 1, 1}, {v})});
    const float forward = std::clamp(2.f * v + 0.1f, -0.5f, 0.5f), backward = std::clamp(-v + 0.2f, -0.5f, 0.5f);
    EXPECT_FLOAT_EQ(y[0].data<float>()[0], forward >= 0 ? forward : 0.1f * forward) << "x = " << v;
    EXPECT_FLOAT_EQ(y[0].data<float>()[1], std::clamp(0.3f * backward + 0.6f, 0.f, 1.f)) << "x = " << v;
  }
}

TEST(RecurrentLayers, BadAttributesAndLengthsAreErrorsNamingTheNode) {
  Layer l;
  l.attrs = {{"activations", std::vector<std::string>{"Sigmoid", "Tanh", "Swish"}}};
  EXPECT_NE(errorOf([&] { layerGraph(l); }).find("unknown activation 'Swish'"), std::string::npos);
  l.attrs = {{"activations", std::vector<std::string>{"Sigmoid", "Tanh"}}};
  EXPECT_NE(errorOf([&] { layerGraph(l); }).find("expected 3 (3 per direction)"), std::string::npos);
  l.attrs = {};
  l.direction = "sideways";
  EXPECT_NE(errorOf([&] { layerGraph(l); }).find("direction must be forward, reverse or bidirectional"), std::string::npos);
  l.direction = "forward";
  l.lengths = {5, 6, 1};
  auto g = layerGraph(l);
  const Tensor x = randomTensor(l.xShape(), 1);
  EXPECT_NE(errorOf([&] { interp::run(*g, {x}); }).find("sequence_lens[1] = 6 is outside [0, 5]"), std::string::npos);
  test::FakeSource source;
  auto model = codegen::compileCpuModel(*g, source, "native only");
  EXPECT_NE(errorOf([&] { model->run({x}); }).find("sequence_lens[1] = 6 is outside [0, 5]"), std::string::npos);
}

}  // namespace
}  // namespace friction
