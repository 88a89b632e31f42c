// NN op family: schemas (inference incl. symbolic batch, errors, FLOPs) and
// interpreter kernels, checked against naive references written here on
// deterministic pseudo-random data.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numeric>

#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/OpRegistry.h"
#include "runtime/interp/Interpreter.h"
#include "runtime/interp/kernels/KernelUtil.h"

using namespace friction;

namespace {

using Attrs = std::map<std::string, Attribute>;
using Ints = std::vector<int64_t>;

// Values in [-1, 1) from a small LCG, so tests are deterministic.
Tensor rnd(Ints shape, uint32_t seed, DType dt = DType::F32) {
  Tensor t(DType::F64, shape);
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.data<double>()[i] = double(s >> 8) / double(1 << 24) * 2.0 - 1.0;
  }
  return t.castTo(dt);
}

Tensor f32(Ints s, std::vector<float> v) { return Tensor::fromVector<float>(DType::F32, std::move(s), v); }
Tensor i64(Ints s, std::vector<int64_t> v) { return Tensor::fromVector<int64_t>(DType::I64, std::move(s), v); }

// One-node graph; inputs in `constIdx` become initializers (e.g. ReduceSum's axes).
std::vector<Tensor> runOp(const std::string& op, const std::vector<Tensor>& in, Attrs attrs = {}, size_t nOut = 1,
                          std::vector<TensorType>* types = nullptr, std::vector<size_t> constIdx = {}) {
  Graph g;
  GraphBuilder b(g);
  std::vector<Value*> vals;
  std::vector<Tensor> feeds;
  for (size_t i = 0; i < in.size(); ++i) {
    bool isConst = std::count(constIdx.begin(), constIdx.end(), i) != 0;
    if (!in[i].defined()) vals.push_back(nullptr);
    else if (isConst) vals.push_back(b.constant(in[i]));
    else {
      vals.push_back(b.input("in" + std::to_string(i), in[i].type()));
      feeds.push_back(in[i]);
    }
  }
  for (Value* v : b.opN(op, vals, nOut, std::move(attrs))) {
    b.output(v);
    if (types) types->push_back(v->type());
  }
  return interp::run(g, feeds);
}
Tensor run1(const std::string& op, const std::vector<Tensor>& in, Attrs attrs = {}) {
  return runOp(op, in, std::move(attrs))[0];
}

// Infers one node over inputs of the given types and returns its output types.
std::vector<TensorType> inferTypes(const std::string& op, const std::vector<TensorType>& in, Attrs attrs = {},
                                   size_t nOut = 1, int64_t* flops = nullptr) {
  Graph g;
  GraphBuilder b(g);
  std::vector<Value*> vals;
  for (size_t i = 0; i < in.size(); ++i) vals.push_back(b.input("in" + std::to_string(i), in[i]));
  std::vector<Value*> outs = b.opN(op, vals, nOut, std::move(attrs));
  if (flops) *flops = nodeFlops(*g.nodes().back());
  std::vector<TensorType> r;
  for (Value* v : outs) r.push_back(v->type());
  return r;
}
TensorType f32t(Shape s) { return {DType::F32, std::move(s)}; }

void expectClose(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_EQ(dtypeName(got.dtype()), dtypeName(want.dtype()));
  std::vector<double> a = got.toDoubleVector(), b = want.toDoubleVector();
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol) << "at flat index " << i;
}

// Row-major multi-index helpers for the N-d references.
Ints unravel(int64_t flat, const Ints& shape) {
  Ints idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) idx[d] = flat % shape[d], flat /= shape[d];
  return idx;
}
int64_t ravel(const Ints& idx, const Ints& shape) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}
int64_t prod(const Ints& v) { return std::accumulate(v.begin(), v.end(), int64_t(1), std::multiplies<>()); }

// Naive N-d grouped convolution: output spatial extents given, pads = begin pads.
Tensor naiveConv(const Tensor& x, const Tensor& w, const Tensor& bias, const Ints& outSp, const Ints& strides,
                 const Ints& dil, const Ints& padsBegin, int64_t group) {
  int64_t n = x.dim(0), c = x.dim(1), m = w.dim(0), cg = w.dim(1), mg = m / group;
  Ints inSp(x.shape().begin() + 2, x.shape().end()), ks(w.shape().begin() + 2, w.shape().end());
  Ints yShape = {n, m};
  yShape.insert(yShape.end(), outSp.begin(), outSp.end());
  Tensor y(DType::F64, yShape);
  std::vector<double> xv = x.toDoubleVector(), wv = w.toDoubleVector();
  size_t nd = inSp.size();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < m; ++oc)
      for (int64_t op = 0; op < prod(outSp); ++op) {
        Ints o = unravel(op, outSp);
        double acc = bias.defined() ? bias.toDoubleVector()[size_t(oc)] : 0.0;
        for (int64_t ic = 0; ic < cg; ++ic)
          for (int64_t kp = 0; kp < prod(ks); ++kp) {
            Ints k = unravel(kp, ks), pos(nd);
            bool inside = true;
            for (size_t d = 0; d < nd; ++d) {
              pos[d] = o[d] * strides[d] - padsBegin[d] + k[d] * dil[d];
              inside = inside && pos[d] >= 0 && pos[d] < inSp[d];
            }
            if (!inside) continue;
            int64_t cin = (oc / mg) * cg + ic;
            acc += xv[size_t((b * c + cin) * prod(inSp) + ravel(pos, inSp))] *
                   wv[size_t((oc * cg + ic) * prod(ks) + kp)];
          }
        y.data<double>()[(b * m + oc) * prod(outSp) + op] = acc;
      }
  return y.castTo(x.dtype());
}

// Naive transposed convolution by scattering each input element.
Tensor naiveConvTranspose(const Tensor& x, const Tensor& w, const Ints& outSp, const Ints& strides, const Ints& dil,
                          const Ints& padsBegin, int64_t group) {
  int64_t n = x.dim(0), c = x.dim(1), mg = w.dim(1), m = mg * group, cg = c / group;
  Ints inSp(x.shape().begin() + 2, x.shape().end()), ks(w.shape().begin() + 2, w.shape().end());
  Ints yShape = {n, m};
  yShape.insert(yShape.end(), outSp.begin(), outSp.end());
  Tensor y(DType::F64, yShape);
  std::vector<double> xv = x.toDoubleVector(), wv = w.toDoubleVector();
  size_t nd = inSp.size();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ic = 0; ic < c; ++ic)
      for (int64_t ip = 0; ip < prod(inSp); ++ip)
        for (int64_t om = 0; om < mg; ++om)
          for (int64_t kp = 0; kp < prod(ks); ++kp) {
            Ints i = unravel(ip, inSp), k = unravel(kp, ks), pos(nd);
            bool inside = true;
            for (size_t d = 0; d < nd; ++d) {
              pos[d] = i[d] * strides[d] - padsBegin[d] + k[d] * dil[d];
              inside = inside && pos[d] >= 0 && pos[d] < outSp[d];
            }
            if (!inside) continue;
            int64_t oc = (ic / cg) * mg + om;
            y.data<double>()[(b * m + oc) * prod(outSp) + ravel(pos, outSp)] +=
                xv[size_t((b * c + ic) * prod(inSp) + ip)] * wv[size_t((ic * mg + om) * prod(ks) + kp)];
          }
  return y.castTo(x.dtype());
}

// Naive pooling over 4-D NCHW with explicit geometry; kind: 0 max, 1 avg (exclude pad), 2 avg (include pad).
Tensor naivePool2d(const Tensor& x, int kind, Ints k, Ints s, Ints d, Ints pads, Ints outSp) {
  int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  Tensor y(DType::F64, {n, c, outSp[0], outSp[1]});
  std::vector<double> xv = x.toDoubleVector();
  for (int64_t p = 0; p < n * c; ++p)
    for (int64_t oh = 0; oh < outSp[0]; ++oh)
      for (int64_t ow = 0; ow < outSp[1]; ++ow) {
        double best = -INFINITY, sum = 0;
        int64_t cnt = 0, padded = 0;
        for (int64_t kh = 0; kh < k[0]; ++kh)
          for (int64_t kw = 0; kw < k[1]; ++kw) {
            int64_t ih = oh * s[0] - pads[0] + kh * d[0], iw = ow * s[1] - pads[1] + kw * d[1];
            if (ih >= -pads[0] && ih < h + pads[2] && iw >= -pads[1] && iw < w + pads[3]) padded++;
            if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
            double v = xv[size_t((p * h + ih) * w + iw)];
            best = std::max(best, v), sum += v, cnt++;
          }
        y.data<double>()[(p * outSp[0] + oh) * outSp[1] + ow] = kind == 0 ? best : sum / double(kind == 1 ? cnt : padded);
      }
  return y.castTo(x.dtype());
}

}  // namespace

// ---------------- Conv ----------------

TEST(NnConv, Grouped2DStridesDilationsPadsBias) {
  Tensor x = rnd({2, 4, 9, 8}, 1), w = rnd({6, 2, 3, 2}, 2), bias = rnd({6}, 3);
  Attrs a = {{"group", int64_t(2)}, {"strides", Ints{2, 1}}, {"dilations", Ints{1, 2}}, {"pads", Ints{1, 0, 2, 1}}};
  Tensor y = run1("Conv", {x, w, bias}, a);
  // out = floor((in + pb + pe - ((k-1)*d+1)) / s) + 1: H (9+3-3)/2+1 = 5, W (8+1-3)/1+1 = 7
  expectClose(y, naiveConv(x, w, bias, {5, 7}, {2, 1}, {1, 2}, {1, 0}, 2), 1e-4);
}

TEST(NnConv, Conv1DAnd3DAndDouble) {
  Tensor x1 = rnd({1, 3, 11}, 4, DType::F64), w1 = rnd({5, 3, 4}, 5, DType::F64);
  expectClose(run1("Conv", {x1, w1}, {{"strides", Ints{3}}, {"pads", Ints{2, 1}}}),
              naiveConv(x1, w1, Tensor(), {4}, {3}, {1}, {2}, 1), 1e-12);
  Tensor x3 = rnd({1, 2, 4, 5, 3}, 6), w3 = rnd({3, 2, 2, 3, 2}, 7);
  expectClose(run1("Conv", {x3, w3}, {{"pads", Ints{1, 1, 0, 0, 1, 1}}}),
              naiveConv(x3, w3, Tensor(), {4, 5, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 0}, 1), 1e-4);
}

TEST(NnConv, LargeEnoughForBlockedGemmAndDepthwise) {
  // 40 output channels x 23*23 positions x K = 16*9 crosses the GEMM's register and cache tiles.
  Tensor x = rnd({1, 16, 23, 23}, 8), w = rnd({40, 16, 3, 3}, 9);
  expectClose(run1("Conv", {x, w}, {{"pads", Ints{1, 1, 1, 1}}}),
              naiveConv(x, w, Tensor(), {23, 23}, {1, 1}, {1, 1}, {1, 1}, 1), 1e-4);
  Tensor dw = rnd({16, 1, 3, 3}, 10);
  expectClose(run1("Conv", {x, dw}, {{"group", int64_t(16)}, {"strides", Ints{2, 2}}}),
              naiveConv(x, dw, Tensor(), {11, 11}, {2, 2}, {1, 1}, {0, 0}, 16), 1e-4);
  Tensor pw = rnd({7, 16, 1, 1}, 11);  // 1x1 path reads the input directly
  expectClose(run1("Conv", {x, pw}), naiveConv(x, pw, Tensor(), {23, 23}, {1, 1}, {1, 1}, {0, 0}, 1), 1e-4);
}

TEST(NnConv, AutoPadVariants) {
  // in 5, k 2, s 2: out ceil(5/2) = 3, total pad (3-1)*2+2-5 = 1.
  Tensor x = rnd({1, 1, 5, 5}, 12), w = rnd({2, 1, 2, 2}, 13);
  Attrs base = {{"strides", Ints{2, 2}}};
  Attrs upper = base, lower = base, valid = base;
  upper["auto_pad"] = std::string("SAME_UPPER");
  lower["auto_pad"] = std::string("SAME_LOWER");
  valid["auto_pad"] = std::string("VALID");
  expectClose(run1("Conv", {x, w}, upper), naiveConv(x, w, Tensor(), {3, 3}, {2, 2}, {1, 1}, {0, 0}, 1), 1e-5);
  expectClose(run1("Conv", {x, w}, lower), naiveConv(x, w, Tensor(), {3, 3}, {2, 2}, {1, 1}, {1, 1}, 1), 1e-5);
  expectClose(run1("Conv", {x, w}, valid), naiveConv(x, w, Tensor(), {2, 2}, {2, 2}, {1, 1}, {0, 0}, 1), 1e-5);
}

TEST(NnConv, InferenceSymbolicBatchErrorsAndFlops) {
  int64_t flops = 0;
  auto t = inferTypes("Conv", {f32t({Dim::sym("N"), 3, 224, 224}), f32t({64, 3, 7, 7}), f32t({64})},
                      {{"strides", Ints{2, 2}}, {"pads", Ints{3, 3, 3, 3}}}, 1, &flops);
  EXPECT_EQ(t[0].shape, Shape({Dim::sym("N"), 64, 112, 112}));
  EXPECT_EQ(flops, 0);  // symbolic shapes have no FLOP count
  t = inferTypes("Conv", {f32t({1, 3, 224, 224}), f32t({64, 3, 7, 7}), f32t({64})},
                 {{"strides", Ints{2, 2}}, {"pads", Ints{3, 3, 3, 3}}}, 1, &flops);
  EXPECT_EQ(flops, 2LL * 64 * 112 * 112 * 3 * 49 + 64LL * 112 * 112);
  // Symbolic spatial dims stay unknown; the static one is computed.
  t = inferTypes("Conv", {f32t({1, 4, Dim::sym("H"), 10}), f32t({8, 2, 3, 3})}, {{"group", int64_t(2)}});
  EXPECT_EQ(t[0].shape, Shape({1, 8, Dim::unknown(), 8}));
  EXPECT_THROW(inferTypes("Conv", {f32t({1, 4, 8, 8}), f32t({8, 3, 3, 3})}), Error);  // 4 != 3*1
  EXPECT_THROW(inferTypes("Conv", {f32t({1, 4, 8, 8}), f32t({9, 2, 3, 3})}, {{"group", int64_t(2)}}), Error);
  EXPECT_THROW(inferTypes("Conv", {f32t({1, 4, 8, 8}), f32t({8, 4, 3, 3})}, {{"bogus", int64_t(1)}}), Error);
}

// ---------------- ConvTranspose ----------------

TEST(NnConvTranspose, GroupedStridedPaddedOutputPadding) {
  Tensor x = rnd({2, 4, 3, 4}, 14), w = rnd({4, 3, 3, 2}, 15), bias = rnd({6}, 16);
  Attrs a = {{"group", int64_t(2)}, {"strides", Ints{2, 3}}, {"pads", Ints{1, 0, 0, 1}}, {"output_padding", Ints{1, 0}},
             {"dilations", Ints{1, 2}}};
  std::vector<TensorType> types;
  Tensor y = runOp("ConvTranspose", {x, w, bias}, a, 1, &types)[0];
  // H: 2*(3-1) + 1 + 3 - 1 - 0 = 7; W: 3*(4-1) + 0 + (2-1)*2+1 - 0 - 1 = 11
  Tensor want = naiveConvTranspose(x, w, {7, 11}, {2, 3}, {1, 2}, {1, 0}, 2);
  std::vector<double> wv = want.toDoubleVector(), bv = bias.toDoubleVector();
  for (size_t i = 0; i < wv.size(); ++i) wv[i] += bv[(i / 77) % 6];
  expectClose(y, Tensor::fromVector<double>(DType::F64, want.shape(), wv).castTo(DType::F32), 1e-4);
  EXPECT_EQ(types[0].shape, Shape({2, 6, 7, 11}));
}

TEST(NnConvTranspose, OutputShapeAndAutoPad) {
  Tensor x = rnd({1, 2, 3, 3}, 17), w = rnd({2, 1, 3, 3}, 18);
  // output_shape 8: full extent 2*2+3 = 7, total pad -1 extends the end.
  Tensor y = run1("ConvTranspose", {x, w}, {{"strides", Ints{2, 2}}, {"output_shape", Ints{8, 7}}});
  expectClose(y, naiveConvTranspose(x, w, {8, 7}, {2, 2}, {1, 1}, {0, 0}, 1), 1e-5);
  // SAME_UPPER: output = in*stride = 6, total pad 1 goes to the end.
  y = run1("ConvTranspose", {x, w}, {{"strides", Ints{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}});
  expectClose(y, naiveConvTranspose(x, w, {6, 6}, {2, 2}, {1, 1}, {0, 0}, 1), 1e-5);
  auto t = inferTypes("ConvTranspose", {f32t({Dim::sym("N"), 2, 3, 3}), f32t({2, 4, 3, 3})}, {{"group", int64_t(1)}});
  EXPECT_EQ(t[0].shape, Shape({Dim::sym("N"), 4, 5, 5}));
  int64_t flops = 0;
  inferTypes("ConvTranspose", {f32t({1, 2, 3, 3}), f32t({2, 4, 3, 3})}, {}, 1, &flops);
  EXPECT_EQ(flops, 2 * 2 * 9 * 4 * 9);
}

// ---------------- MatMul / Gemm ----------------

namespace {
Tensor naiveMatMul(const Tensor& a, const Tensor& b, int64_t M, int64_t K, int64_t N, int64_t batches,
                   std::function<int64_t(int64_t)> offA, std::function<int64_t(int64_t)> offB, Ints yShape) {
  std::vector<double> av = a.toDoubleVector(), bv = b.toDoubleVector(), y(size_t(batches * M * N));
  for (int64_t bt = 0; bt < batches; ++bt)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        for (int64_t k = 0; k < K; ++k)
          y[size_t((bt * M + i) * N + j)] += av[size_t(offA(bt) + i * K + k)] * bv[size_t(offB(bt) + k * N + j)];
  return Tensor::fromVector<double>(DType::F64, yShape, y).castTo(a.dtype());
}
}  // namespace

TEST(NnMatMul, BroadcastBatchesAndVectors) {
  Tensor a = rnd({2, 1, 3, 4}, 19), b = rnd({5, 4, 2}, 20);
  // batch (2,5): A repeats over the 5, B over the 2.
  expectClose(run1("MatMul", {a, b}),
              naiveMatMul(a, b, 3, 4, 2, 10, [](int64_t t) { return (t / 5) * 12; },
                          [](int64_t t) { return (t % 5) * 8; }, {2, 5, 3, 2}),
              1e-5);
  Tensor v = rnd({4}, 21);
  expectClose(run1("MatMul", {v, b}),
              naiveMatMul(v, b, 1, 4, 2, 5, [](int64_t) { return 0; }, [](int64_t t) { return t * 8; }, {5, 2}), 1e-5);
  expectClose(run1("MatMul", {a, v}),
              naiveMatMul(a, v, 3, 4, 1, 2, [](int64_t t) { return t * 12; }, [](int64_t) { return 0; }, {2, 1, 3}),
              1e-5);
  Tensor s = run1("MatMul", {v, v});
  EXPECT_EQ(s.rank(), 0u);
}

TEST(NnMatMul, BlockedSizesIntsAndErrors) {
  // Sizes straddling the GEMM's 6x16 register tile and 96x256x256 cache blocks.
  Tensor a = rnd({131, 300}, 22), b = rnd({300, 270}, 23);
  expectClose(run1("MatMul", {a, b}),
              naiveMatMul(a, b, 131, 300, 270, 1, [](int64_t) { return 0; }, [](int64_t) { return 0; }, {131, 270}),
              2e-4);
  Tensor bi = i64({4, 2}, {1, -2, 3, 4, -5, 6, 7, 8});
  Tensor ai2 = Tensor::fromVector<int64_t>(DType::I64, {2, 3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, -1, -2, -3,
                                                                    -4, 0, 0, 0, 0, 2, 0, 0, 2});
  Tensor yi = run1("MatMul", {ai2, bi});
  EXPECT_EQ(yi.dtype(), DType::I64);
  EXPECT_EQ(yi.toInt64Vector(), (std::vector<int64_t>{20, 56, 44, 120, 68, 184, -20, -56, 0, 0, 16, 12}));
  EXPECT_THROW(inferTypes("MatMul", {f32t({3, 4}), f32t({5, 2})}), Error);
  auto t = inferTypes("MatMul", {f32t({Dim::sym("N"), 8, 16}), f32t({16, 4})});
  EXPECT_EQ(t[0].shape, Shape({Dim::sym("N"), 8, 4}));
  int64_t flops = 0;
  inferTypes("MatMul", {f32t({3, 8, 16}), f32t({16, 4})}, {}, 1, &flops);
  EXPECT_EQ(flops, 2 * 3 * 8 * 4 * 16);
}

TEST(NnGemm, TransposesAlphaBetaAndBroadcastC) {
  Tensor a = rnd({5, 3}, 25), b = rnd({4, 5}, 26), c = rnd({4}, 27);  // A^T (3x5), B^T (5x4)
  Tensor y = run1("Gemm", {a, b, c},
                  {{"transA", int64_t(1)}, {"transB", int64_t(1)}, {"alpha", 0.5f}, {"beta", 2.0f}});
  std::vector<double> av = a.toDoubleVector(), bv = b.toDoubleVector(), cv = c.toDoubleVector(), want(12);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = 0;
      for (int k = 0; k < 5; ++k) s += av[size_t(k * 3 + i)] * bv[size_t(j * 5 + k)];
      want[size_t(i * 4 + j)] = 0.5 * s + 2.0 * cv[size_t(j)];
    }
  expectClose(y, Tensor::fromVector<double>(DType::F64, {3, 4}, want).castTo(DType::F32), 1e-5);
  // Without C.
  Tensor y2 = run1("Gemm", {rnd({3, 5}, 28), rnd({5, 4}, 29)});
  expectClose(y2, naiveMatMul(rnd({3, 5}, 28), rnd({5, 4}, 29), 3, 5, 4, 1, [](int64_t) { return 0; },
                              [](int64_t) { return 0; }, {3, 4}),
              1e-5);
  EXPECT_THROW(inferTypes("Gemm", {f32t({3, 5}), f32t({4, 5})}), Error);  // K 5 vs 4
  int64_t flops = 0;
  inferTypes("Gemm", {f32t({3, 5}), f32t({5, 4}), f32t({4})}, {}, 1, &flops);
  EXPECT_EQ(flops, 2 * 3 * 4 * 5 + 12);
}

// ---------------- Normalizations ----------------

TEST(NnNorm, BatchNormInference) {
  Tensor x = rnd({2, 3, 4}, 30), s = rnd({3}, 31), b = rnd({3}, 32), m = rnd({3}, 33);
  Tensor v = f32({3}, {0.5f, 1.0f, 2.0f});
  Tensor y = run1("BatchNormalization", {x, s, b, m, v}, {{"epsilon", 1e-3f}, {"momentum", 0.9f}});
  std::vector<double> xv = x.toDoubleVector(), want(24);
  for (size_t i = 0; i < 24; ++i) {
    size_t c = (i / 4) % 3;
    want[i] = (xv[i] - m.toDoubleVector()[c]) / std::sqrt(v.toDoubleVector()[c] + 1e-3) * s.toDoubleVector()[c] +
              b.toDoubleVector()[c];
  }
  expectClose(y, Tensor::fromVector<double>(DType::F64, {2, 3, 4}, want).castTo(DType::F32), 1e-5);
  // Training mode: batch statistics (biased variance) and running-stat outputs.
  Tensor xt = f32({2, 2, 1}, {1, 10, 3, 20});
  auto outs = runOp("BatchNormalization", {xt, f32({2}, {1, 1}), f32({2}, {0, 0}), f32({2}, {0, 0}), f32({2}, {1, 1})},
                    {{"training_mode", int64_t(1)}, {"epsilon", 0.0f}, {"momentum", 0.5f}}, 3);
  expectClose(outs[0], f32({2, 2, 1}, {-1, -1, 1, 1}), 1e-6);
  expectClose(outs[1], f32({2}, {1, 7.5f}), 1e-6);      // 0.5*0 + 0.5*mean(2, 15)
  expectClose(outs[2], f32({2}, {1, 13}), 1e-6);        // 0.5*1 + 0.5*var(1, 25)
  EXPECT_THROW(inferTypes("BatchNormalization", {f32t({2, 3}), f32t({3}), f32t({3}), f32t({3}), f32t({3})}, {}, 3),
               Error);
}

TEST(NnNorm, LayerNormWithStatsAndInstanceNorm) {
  Tensor x = rnd({2, 3, 4}, 34), s = rnd({3, 4}, 35), b = rnd({4}, 36);
  std::vector<TensorType> types;
  auto outs = runOp("LayerNormalization", {x, s, b}, {{"axis", int64_t(1)}, {"epsilon", 1e-4f}}, 3, &types);
  EXPECT_EQ(types[1].shape, Shape({2, 1, 1}));
  std::vector<double> xv = x.toDoubleVector(), sv = s.toDoubleVector(), bv = b.toDoubleVector(), want(24);
  for (int g = 0; g < 2; ++g) {
    double mean = 0, var = 0;
    for (int i = 0; i < 12; ++i) mean += xv[size_t(g * 12 + i)] / 12;
    for (int i = 0; i < 12; ++i) var += std::pow(xv[size_t(g * 12 + i)] - mean, 2) / 12;
    for (int i = 0; i < 12; ++i)
      want[size_t(g * 12 + i)] = (xv[size_t(g * 12 + i)] - mean) / std::sqrt(var + 1e-4) * sv[size_t(i)] + bv[size_t(i % 4)];
    EXPECT_NEAR(outs[1].toDoubleVector()[size_t(g)], mean, 1e-6);
    EXPECT_NEAR(outs[2].toDoubleVector()[size_t(g)], 1 / std::sqrt(var + 1e-4), 1e-4);
  }
  expectClose(outs[0], Tensor::fromVector<double>(DType::F64, {2, 3, 4}, want).castTo(DType::F32), 1e-5);

  // InstanceNorm: per (n, c) over the spatial dims.
  Tensor xi = rnd({2, 2, 3, 2}, 37), si = f32({2}, {1.5f, -1.0f}), bi = f32({2}, {0.25f, 0.5f});
  Tensor yi = run1("InstanceNormalization", {xi, si, bi}, {{"epsilon", 1e-5f}});
  std::vector<double> iv = xi.toDoubleVector(), wi(24);
  for (int p = 0; p < 4; ++p) {
    double mean = 0, var = 0;
    for (int i = 0; i < 6; ++i) mean += iv[size_t(p * 6 + i)] / 6;
    for (int i = 0; i < 6; ++i) var += std::pow(iv[size_t(p * 6 + i)] - mean, 2) / 6;
    for (int i = 0; i < 6; ++i)
      wi[size_t(p * 6 + i)] = (iv[size_t(p * 6 + i)] - mean) / std::sqrt(var + 1e-5) * (p % 2 ? -1.0 : 1.5) + (p % 2 ? 0.5 : 0.25);
  }
  expectClose(yi, Tensor::fromVector<double>(DType::F64, {2, 2, 3, 2}, wi).castTo(DType::F32), 1e-5);
}

TEST(NnNorm, LpNormalizationAndLRN) {
  Tensor x = f32({2, 2}, {3, 4, -1, 1});
  expectClose(run1("LpNormalization", {x}, {{"axis", int64_t(1)}}), f32({2, 2}, {0.6f, 0.8f, -0.70710678f, 0.70710678f}), 1e-6);
  expectClose(run1("LpNormalization", {x}, {{"axis", int64_t(0)}, {"p", int64_t(1)}}), f32({2, 2}, {0.75f, 0.8f, -0.25f, 0.2f}), 1e-6);
  Tensor xl = rnd({1, 5, 2, 2}, 38);
  Tensor y = run1("LRN", {xl}, {{"size", int64_t(3)}, {"alpha", 0.2f}, {"beta", 0.5f}, {"bias", 2.0f}});
  std::vector<double> xv = xl.toDoubleVector(), want(20);
  for (int c = 0; c < 5; ++c)
    for (int i = 0; i < 4; ++i) {
      double sq = 0;
      for (int k = std::max(0, c - 1); k <= std::min(4, c + 1); ++k) sq += xv[size_t(k * 4 + i)] * xv[size_t(k * 4 + i)];
      want[size_t(c * 4 + i)] = xv[size_t(c * 4 + i)] / std::pow(2.0 + 0.2 / 3 * sq, 0.5);
    }
  expectClose(y, Tensor::fromVector<double>(DType::F64, {1, 5, 2, 2}, want).castTo(DType::F32), 1e-6);
}

// ---------------- Softmax family / Arg ----------------

TEST(NnSoftmax, SoftmaxLogSoftmaxHardmax) {
  Tensor x = f32({2, 3}, {1, 2, 3, 1000, 1000, 0});
  expectClose(run1("Softmax", {x}), f32({2, 3}, {0.09003057f, 0.24472847f, 0.66524096f, 0.5f, 0.5f, 0}), 1e-6);
  expectClose(run1("LogSoftmax", {x}), f32({2, 3}, {-2.40760596f, -1.40760596f, -0.40760596f, -0.69314718f, -0.69314718f, -1000.69314718f}), 1e-4);
  expectClose(run1("Hardmax", {x}), f32({2, 3}, {0, 0, 1, 1, 0, 0}), 0);
  expectClose(run1("Softmax", {x}, {{"axis", int64_t(0)}}), f32({2, 3}, {0, 0, 0.95257413f, 1, 1, 0.04742587f}), 1e-6);
  EXPECT_THROW(inferTypes("Softmax", {f32t({2, 3})}, {{"axis", int64_t(2)}}), Error);
}

TEST(NnArg, ArgMaxArgMinSelectLastKeepdims) {
  Tensor x = f32({2, 3}, {1, 5, 5, 2, 0, 2});
  EXPECT_EQ(run1("ArgMax", {x}, {{"axis", int64_t(1)}}).toInt64Vector(), (std::vector<int64_t>{1, 0}));
  Tensor y = run1("ArgMax", {x}, {{"axis", int64_t(1)}, {"select_last_index", int64_t(1)}, {"keepdims", int64_t(0)}});
  EXPECT_EQ(y.shape(), Ints{2});
  EXPECT_EQ(y.toInt64Vector(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(run1("ArgMin", {x}, {{"axis", int64_t(-2)}}).toInt64Vector(), (std::vector<int64_t>{0, 1, 1}));
  Tensor xi = i64({4}, {3, -7, 9, -7});
  Tensor yi = run1("ArgMin", {xi}, {{"select_last_index", int64_t(1)}});
  EXPECT_EQ(yi.dtype(), DType::I64);
  EXPECT_EQ(yi.toInt64Vector(), (std::vector<int64_t>{3}));
}

// ---------------- Pools ----------------

TEST(NnPool, MaxPoolCeilPadsDilationsAndIndices) {
  Tensor x = rnd({1, 2, 7, 6}, 39);
  Attrs a = {{"kernel_shape", Ints{3, 2}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 0, 1, 1}},
             {"dilations", Ints{1, 2}}, {"ceil_mode", int64_t(1)}};
  // H: ceil((7+2-3)/2)+1 = 4; W: ceil((6+1-3)/2)+1 = 3.
  std::vector<TensorType> types;
  auto outs = runOp("MaxPool", {x}, a, 2, &types);
  expectClose(outs[0], naivePool2d(x, 0, {3, 2}, {2, 2}, {1, 2}, {1, 0, 1, 1}, {4, 3}), 0);
  EXPECT_EQ(types[1].dtype, DType::I64);
  // Indices point at the max in the flattened NCHW input.
  std::vector<double> xv = x.toDoubleVector(), yv = outs[0].toDoubleVector();
  std::vector<int64_t> idx = outs[1].toInt64Vector();
  for (size_t i = 0; i < idx.size(); ++i) EXPECT_EQ(xv[size_t(idx[i])], yv[i]);
  EXPECT_GE(idx[12], 42);  // second channel's plane starts at 42
  // storage_order=1: column-major within the plane.
  Tensor xs = f32({1, 1, 2, 3}, {1, 2, 3, 4, 9, 6});
  auto so = runOp("MaxPool", {xs}, {{"kernel_shape", Ints{2, 3}}, {"storage_order", int64_t(1)}}, 2);
  EXPECT_EQ(so[1].toInt64Vector(), (std::vector<int64_t>{3}));  // (h=1, w=1) -> 1*2 + 1
}

TEST(NnPool, AveragePoolCountIncludePadAndSame) {
  Tensor x = rnd({2, 1, 5, 5}, 40);
  Attrs a = {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}};
  expectClose(run1("AveragePool", {x}, a), naivePool2d(x, 1, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, {3, 3}), 1e-6);
  a["count_include_pad"] = int64_t(1);
  expectClose(run1("AveragePool", {x}, a), naivePool2d(x, 2, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, {3, 3}), 1e-6);
  // SAME_LOWER with k 2: total pad 1, at the beginning.
  Tensor y = run1("AveragePool", {x}, {{"kernel_shape", Ints{2, 2}}, {"auto_pad", std::string("SAME_LOWER")}});
  expectClose(y, naivePool2d(x, 1, {2, 2}, {1, 1}, {1, 1}, {1, 1, 0, 0}, {5, 5}), 1e-6);
  auto t = inferTypes("MaxPool", {f32t({Dim::sym("N"), 64, 112, 112})},
                      {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
  EXPECT_EQ(t[0].shape, Shape({Dim::sym("N"), 64, 56, 56}));
  int64_t flops = 0;
  inferTypes("AveragePool", {f32t({1, 2, 8, 8})}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}}, 1, &flops);
  EXPECT_EQ(flops, 2 * 16 * 4);
}

TEST(NnPool, GlobalPoolsAndLpPool) {
  Tensor x = f32({1, 2, 2, 2}, {1, -2, 3, 4, 5, 6, -7, 8});
  expectClose(run1("GlobalAveragePool", {x}), f32({1, 2, 1, 1}, {1.5f, 3.0f}), 1e-6);
  expectClose(run1("GlobalMaxPool", {x}), f32({1, 2, 1, 1}, {4, 8}), 0);
  expectClose(run1("LpPool", {x}, {{"kernel_shape", Ints{2, 2}}, {"p", int64_t(1)}}), f32({1, 2, 1, 1}, {10, 26}), 1e-5);
  expectClose(run1("LpPool", {x}, {{"kernel_shape", Ints{1, 2}}}),
              f32({1, 2, 2, 1}, {std::sqrt(5.0f), 5, std::sqrt(61.0f), std::sqrt(113.0f)}), 1e-5);
  auto t = inferTypes("GlobalAveragePool", {f32t({Dim::sym("N"), 8, 7, 7})});
  EXPECT_EQ(t[0].shape, Shape({Dim::sym("N"), 8, 1, 1}));
}

// ---------------- Reductions ----------------

TEST(NnReduce, AllReducersOnOneTensor) {
  Tensor x = f32({2, 3}, {1, -2, 3, 4, 5, -6});
  Attrs ax1 = {{"axes", Ints{1}}, {"keepdims", int64_t(0)}};
  expectClose(run1("ReduceMean", {x}, ax1), f32({2}, {2.0f / 3, 1}), 1e-6);
  expectClose(run1("ReduceMax", {x}, ax1), f32({2}, {3, 5}), 0);
  expectClose(run1("ReduceMin", {x}, ax1), f32({2}, {-2, -6}), 0);
  expectClose(run1("ReduceProd", {x}, ax1), f32({2}, {-6, -120}), 0);
  expectClose(run1("ReduceL1", {x}, ax1), f32({2}, {6, 15}), 0);
  expectClose(run1("ReduceL2", {x}, ax1), f32({2}, {std::sqrt(14.0f), std::sqrt(77.0f)}), 1e-5);
  expectClose(run1("ReduceSumSquare", {x}, ax1), f32({2}, {14, 77}), 0);
  expectClose(run1("ReduceLogSum", {f32({2}, {1, 2})}), f32({1}, {std::log(3.0f)}), 1e-6);
  expectClose(run1("ReduceLogSumExp", {x}, ax1),
              f32({2}, {float(std::log(std::exp(1.0) + std::exp(-2.0) + std::exp(3.0))),
                        float(std::log(std::exp(4.0) + std::exp(5.0) + std::exp(-6.0)))}),
              1e-5);
  // Default: all axes, keepdims=1.
  expectClose(run1("ReduceMean", {x}), f32({1, 1}, {0.8333333f}), 1e-6);
  expectClose(run1("ReduceMax", {x}, {{"axes", Ints{-2}}}), f32({1, 3}, {4, 5, 3}), 0);
  Tensor xi = i64({2, 2}, {5, -9, 7, 2});
  Tensor yi = run1("ReduceMax", {xi}, {{"axes", Ints{0}}});
  EXPECT_EQ(yi.dtype(), DType::I64);
  EXPECT_EQ(yi.toInt64Vector(), (std::vector<int64_t>{7, 2}));
}

TEST(NnReduce, ReduceSumAxesInputAndNoop) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<TensorType> types;
  Tensor y = runOp("ReduceSum", {x, i64({1}, {0})}, {{"keepdims", int64_t(0)}}, 1, &types, {1})[0];
  expectClose(y, f32({3}, {5, 7, 9}), 0);
  EXPECT_EQ(types[0].shape, Shape({3}));
  // Axes as a runtime input: rank known with keepdims.
  y = runOp("ReduceSum", {x, i64({1}, {1})}, {}, 1, &types)[0];
  expectClose(y, f32({2, 1}, {6, 15}), 0);
  expectClose(run1("ReduceSum", {x}), f32({1, 1}, {21}), 0);
  expectClose(runOp("ReduceSum", {x, i64({0}, {})}, {{"noop_with_empty_axes", int64_t(1)}}, 1, nullptr, {1})[0], x, 0);
  Tensor xi = Tensor::fromVector<int32_t>(DType::I32, {3}, {1, 2, 3});
  EXPECT_EQ(run1("ReduceSum", {xi}).toInt64Vector(), (std::vector<int64_t>{6}));
  auto t = inferTypes("ReduceMean", {f32t({Dim::sym("N"), 8, 7, 7})}, {{"axes", Ints{2, 3}}});
  EXPECT_EQ(t[0].shape, Shape({Dim::sym("N"), 8, 1, 1}));
  EXPECT_THROW(inferTypes("ReduceMean", {f32t({2, 3})}, {{"axes", Ints{2}}}), Error);
}

// ---------------- Einsum ----------------

TEST(NnEinsum, MatmulTraceTransposeEllipsisImplicit) {
  Tensor a = rnd({3, 4}, 41), b = rnd({4, 5}, 42);
  Tensor want = naiveMatMul(a, b, 3, 4, 5, 1, [](int64_t) { return 0; }, [](int64_t) { return 0; }, {3, 5});
  expectClose(run1("Einsum", {a, b}, {{"equation", std::string("ij,jk->ik")}}), want, 1e-5);
  expectClose(run1("Einsum", {a, b}, {{"equation", std::string("ij, jk")}}), want, 1e-5);  // implicit output "ik"
  Tensor sq = f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  expectClose(run1("Einsum", {sq}, {{"equation", std::string("ii->i")}}), f32({3}, {1, 5, 9}), 0);
  expectClose(run1("Einsum", {sq}, {{"equation", std::string("ii")}}), f32({}, {15}), 0);
  Tensor c = rnd({2, 3, 4}, 43);
  Tensor t = run1("Einsum", {c}, {{"equation", std::string("...ij->...ji")}});
  ASSERT_EQ(t.shape(), (Ints{2, 4, 3}));
  EXPECT_EQ(t.toDoubleVector()[size_t(1 * 12 + 2 * 3 + 1)], c.toDoubleVector()[size_t(1 * 12 + 1 * 4 + 2)]);
  // Batched matmul with a broadcast ellipsis.
  Tensor d = rnd({4, 2}, 44);
  Tensor bm = run1("Einsum", {c, d}, {{"equation", std::string("...ij,...jk->...ik")}});
  expectClose(bm, naiveMatMul(c, d, 3, 4, 2, 2, [](int64_t t) { return t * 12; }, [](int64_t) { return 0; }, {2, 3, 2}), 1e-5);
  auto types = inferTypes("Einsum", {f32t({Dim::sym("N"), 3, 4}), f32t({4, 5})}, {{"equation", std::string("bij,jk->bik")}});
  EXPECT_EQ(types[0].shape, Shape({Dim::sym("N"), 3, 5}));
  EXPECT_THROW(inferTypes("Einsum", {f32t({3, 4}), f32t({5, 2})}, {{"equation", std::string("ij,jk->ik")}}), Error);
}

TEST(NnHalf, ConvAndMatMulOnF16) {
  // Half inputs compute in float and round back to f16 (~1e-3 relative).
  Tensor x = rnd({1, 2, 5, 5}, 45, DType::F16), w = rnd({3, 2, 3, 3}, 46, DType::F16);
  Tensor y = run1("Conv", {x, w});
  EXPECT_EQ(y.dtype(), DType::F16);
  expectClose(y.castTo(DType::F32), naiveConv(x.castTo(DType::F32), w.castTo(DType::F32), Tensor(), {3, 3}, {1, 1},
                                              {1, 1}, {0, 0}, 1), 1e-2);
  Tensor a = rnd({4, 8}, 47, DType::BF16), b = rnd({8, 3}, 48, DType::BF16);
  Tensor m = run1("MatMul", {a, b});
  EXPECT_EQ(m.dtype(), DType::BF16);
  expectClose(m.castTo(DType::F32), naiveMatMul(a.castTo(DType::F32), b.castTo(DType::F32), 4, 8, 3, 1,
                                                [](int64_t) { return 0; }, [](int64_t) { return 0; }, {4, 3}), 5e-2);
}
