// runtime/ukernels against naive loops: SGEMM over tile edges (every M, N
// remainder of the register tiles, K across the KC block), transposes,
// alpha/beta, epilogue blocks; convolutions with every ConvEpilogue part;
// strided copies that are transposes (the tiled path) over tile edges; the
// loop sharing of Parallel.h.
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "ir/DType.h"
#include "runtime/ukernels/Conv.h"
#include "runtime/ukernels/Copy.h"
#include "runtime/ukernels/Multiversion.h"
#include "runtime/ukernels/Parallel.h"
#include "runtime/ukernels/Rows.h"
#include "runtime/ukernels/Sgemm.h"

namespace friction::ukernels {
namespace {

std::vector<float> randoms(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Relative to the largest |reference| value, which the float sums can lose.
void expectNear(const std::vector<float>& got, const std::vector<double>& want, double rtol, const std::string& what) {
  double scale = 1e-30, worst = 0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - want[i]) / scale);
  EXPECT_LE(worst, rtol) << what;
}

// Caps the kernels' vector width (the direct kernels' copies, the SGEMM's instruction set) while in scope.
struct LanesLimit {
  explicit LanesLimit(int lanes) : previous(limitVectorLanes(lanes)) {}
  ~LanesLimit() { limitVectorLanes(previous); }
  int previous;
};

// The vector widths the machine can run: 4 (SSE), 8 (AVX2), 16 (AVX-512), up to its own.
std::vector<int> machineWidths() {
  std::vector<int> widths;
  for (int lanes : {4, 8, 16})
    if (lanes <= nativeFloatLanes()) widths.push_back(lanes);
  return widths;
}

TEST(Sgemm, MatchesNaiveOverTileEdgesTransposesAndBeta) {
  // Sizes around the register tiles (AVX-512 12x32, 6x64, 8x48 and 24x16, AVX2 6x16, portable 4x8; N = 64,
  // 120 and 200 take 6x64, the last two with a partial last panel of several vectors and of one), the row
  // counts of the partial tiles (1, 2, 4, 8 rows), K steps in fours with a remainder (7), and K = 385 in two to
  // four K blocks (KC is 128 to 384 by the tile's width: 6x64 takes four of 97, 97, 97 and 94 steps).
  // N = 576 (nine 6x64 panels) over few rows deals its panels to the threads' tasks unevenly (eight splits).
  // M = 8 and 16 take 8x48 tiles whatever N (a recurrent layer's batch).
  const std::vector<int64_t> ms = {1, 2, 3, 5, 6, 7, 8, 12, 13, 16, 22, 37},
                             ns = {1, 8, 16, 17, 24, 33, 48, 64, 70, 120, 200, 576}, ks = {1, 7, 16, 385};
  int cases = 0;
  for (int lanes : machineWidths()) {
    LanesLimit limit(lanes);
    for (int64_t M : ms)
      for (int64_t N : ns)
        for (int64_t K : ks)
          for (int t = 0; t < 4; ++t) {
            bool ta = t & 1, tb = t & 2;
            float alpha = t == 3 ? 0.5f : 1.f, beta = t == 1 ? 0.f : t == 2 ? 1.f : 0.25f;
            int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 2, ldc = N + 5;  // padded rows: strides matter
            auto A = randoms(size_t((ta ? K : M) * lda), 1), B = randoms(size_t((tb ? N : K) * ldb), 2);
            auto C = randoms(size_t(M * ldc), 3);
            std::vector<double> want(C.begin(), C.end());
            for (int64_t i = 0; i < M; ++i)
              for (int64_t j = 0; j < N; ++j) {
                double acc = 0;
                for (int64_t k = 0; k < K; ++k)
                  acc += double(ta ? A[k * lda + i] : A[i * lda + k]) * double(tb ? B[j * ldb + k] : B[k * ldb + j]);
                want[size_t(i * ldc + j)] = alpha * acc + (beta == 0.f ? 0.0 : beta * double(C[size_t(i * ldc + j)]));
              }
            sgemm(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
            expectNear(C, want, 1e-5, "M " + std::to_string(M) + " N " + std::to_string(N) + " K " + std::to_string(K) +
                                           " transA " + std::to_string(ta) + " transB " + std::to_string(tb) +
                                           " on " + sgemmIsa());
            ++cases;
          }
  }
  EXPECT_EQ(cases, int(machineWidths().size()) * 12 * 12 * 4 * 4);
}

TEST(Sgemm, RowsOfAStreamedFromMemoryMatchNaive) {
  // An A of more than 1 MB read in place takes the k loop that prefetches the next tile's rows: every row
  // count a tile can have (M = 12k + 7), several K blocks, each with a tail of fewer than 16 steps (AVX-512's
  // 6x64 tile: four of 100, 100, 100 and 97 steps; narrower machines' tiles: two), and several column panels
  // (only the first one prefetches).
  const int64_t M = 703, N = 70, K = 397, lda = K + 3, ldc = N + 1;
  ASSERT_GT(M * lda * int64_t(sizeof(float)), int64_t(1) << 20);
  for (int lanes : machineWidths()) {
    LanesLimit limit(lanes);
    auto A = randoms(size_t(M * lda), 4), B = randoms(size_t(K * N), 5);
    std::vector<float> C(size_t(M * ldc), 0.f);
    std::vector<double> want(C.size(), 0.0);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += double(A[size_t(i * lda + k)]) * double(B[size_t(k * N + j)]);
        want[size_t(i * ldc + j)] = acc;
      }
    sgemm(false, false, M, N, K, 1.f, A.data(), lda, B.data(), N, 0.f, C.data(), ldc);
    expectNear(C, want, 1e-5, std::string("streamed rows on ") + sgemmIsa());
  }
}

TEST(Sgemm, EpilogueSeesEveryElementOnceAfterTheLastKStep) {
  const int64_t M = 101, N = 77, K = 500;  // several K blocks, edge tiles, several threads' blocks
  auto A = randoms(size_t(M * K), 4), B = randoms(size_t(K * N), 5);
  std::vector<float> C(size_t(M * N), 0.f), plain(size_t(M * N), 0.f);
  std::vector<int> seen(size_t(M * N), 0);
  struct Ctx {
    std::vector<int>* seen;
  } ctx{&seen};
  GemmEpilogue e{[](void* p, float* c, int64_t ldc, int64_t i0, int64_t j0, int64_t rows, int64_t cols) {
                   auto& s = *static_cast<Ctx*>(p)->seen;
                   for (int64_t i = i0; i < i0 + rows; ++i)
                     for (int64_t j = j0; j < j0 + cols; ++j) {
#pragma omp atomic
                       s[size_t(i * ldc + j)]++;
                       c[i * ldc + j] = -c[i * ldc + j];
                     }
                 },
                 &ctx};
  sgemm(false, false, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, C.data(), N, &e);
  sgemm(false, false, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, plain.data(), N);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), M * N);
  for (size_t i = 0; i < C.size(); ++i) ASSERT_EQ(C[i], -plain[i]) << i;
}

// The epilogue applied in the register tile (biases per column and per row, a residual laid out like C, the
// clamp), with and without a block hook after it and with each part alone, against the plain GEMM finished by
// a loop: over every tile width (N up to 70), row-tile edges, K = 0, steps of four with a remainder, and two K blocks.
TEST(Sgemm, InTileEpilogueMatchesTheGemmFinishedAfterwards) {
  int cases = 0;
  for (int lanes : machineWidths()) {
    LanesLimit limit(lanes);
    for (int64_t M : {1, 7, 13, 37})
      for (int64_t N : {1, 16, 17, 33, 48, 70})
        for (int64_t K : {0, 7, 385})
          for (int parts = 1; parts < 32; ++parts) {
            const bool bias = parts & 1, residual = parts & 2, clamp = parts & 4, hook = parts & 8;
            const bool rowBias = parts & 16;
            const int64_t ldc = N + 3;
            auto A = randoms(size_t(M * std::max<int64_t>(K, 1)), 6), B = randoms(size_t(K * N), 7);
            auto b = randoms(size_t(N), 8), r = randoms(size_t(M * ldc), 9), rb = randoms(size_t(M), 10);
            std::vector<float> C(size_t(M * ldc), 0.f), want(size_t(M * ldc), 0.f);
            sgemm(false, false, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, want.data(), ldc);
            const float lo = clamp ? -0.5f : -std::numeric_limits<float>::infinity();
            const float hi = clamp ? 0.75f : std::numeric_limits<float>::infinity();
            for (int64_t i = 0; i < M; ++i)
              for (int64_t j = 0; j < N; ++j) {
                float& w = want[size_t(i * ldc + j)];
                const float sum = w + (bias ? b[size_t(j)] : 0.f) + (rowBias ? rb[size_t(i)] : 0.f) +
                                  (residual ? r[size_t(i * ldc + j)] : 0.f);
                w = std::min(std::max(sum, lo), hi);
                if (hook) w *= 2.f;
              }
            GemmEpilogue e;
            if (hook)
              e.fn = [](void*, float* c, int64_t ldc, int64_t i0, int64_t j0, int64_t rows, int64_t cols) {
                for (int64_t i = i0; i < i0 + rows; ++i)
                  for (int64_t j = j0; j < j0 + cols; ++j) c[i * ldc + j] *= 2.f;
              };
            e.bias = bias ? b.data() : nullptr;
            e.rowBias = rowBias ? rb.data() : nullptr;
            e.residual = residual ? r.data() : nullptr;
            e.lo = lo;
            e.hi = hi;
            sgemm(false, false, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, C.data(), ldc, &e);
            const std::string what = "M " + std::to_string(M) + " N " + std::to_string(N) + " K " + std::to_string(K) +
                                     " parts " + std::to_string(parts) + " on " + sgemmIsa();
            for (int64_t i = 0; i < M; ++i)
              for (int64_t j = 0; j < N; ++j)
                ASSERT_NEAR(C[size_t(i * ldc + j)], want[size_t(i * ldc + j)], 1e-5)
                    << what << " at " << i << ", " << j;
            ++cases;
          }
  }
  EXPECT_EQ(cases, int(machineWidths().size()) * 4 * 6 * 3 * 31);
}

// A registered B is packed once and its packed copy reused: while registered, a GEMM reads the copy, not B
// (so a B changed in place -- which the contract forbids -- shows it). Two holders of one range (two programs
// built from one graph's weights): undoing one registration keeps the range and its copy; undoing the last
// drops both, and the next GEMM reads B itself.
// Wider than one column block (NR x 16 columns), which the SGEMM evens out in whole panels: 1100, 1152 and 1280
// (6x64 tiles: 576 + 524, 576 + 576, 640 + 640, not 1024 and the rest), 560 (12x32: 288 + 272, not 512 + 48),
// with B read from memory and B registered as a constant (packed once, in the same blocks).
TEST(Sgemm, ColumnBlocksEvenedOutMatchNaive) {
  for (int lanes : machineWidths()) {
    LanesLimit limit(lanes);
    for (int64_t N : {560, 1100, 1152, 1280})
      for (int64_t M : {7, 50})
        for (bool constant : {false, true}) {
          const int64_t K = 45;
          auto A = randoms(size_t(M * K), 31), B = randoms(size_t(K * N), 32);
          std::vector<double> want(size_t(M * N));
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j)
              for (int64_t k = 0; k < K; ++k) want[size_t(i * N + j)] += double(A[i * K + k]) * double(B[k * N + j]);
          if (constant) registerConstant(B.data(), B.size() * sizeof(float));
          std::vector<float> C(size_t(M * N), 1.f);
          sgemm(false, false, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, C.data(), N);
          if (constant) unregisterConstant(B.data());
          expectNear(C, want, 1e-5, "M " + std::to_string(M) + " N " + std::to_string(N) +
                                        (constant ? " constant B" : "") + " on " + sgemmIsa());
        }
  }
}

TEST(Sgemm, ARangeRegisteredTwiceKeepsItsPackedCopyUntilBothAreUndone) {
  const int64_t M = 3, N = 40, K = 50;
  auto A = randoms(size_t(M * K), 21), B = randoms(size_t(K * N), 22);
  auto product = [&] {
    std::vector<float> C(size_t(M * N));
    sgemm(false, false, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, C.data(), N);
    return C;
  };
  registerConstant(B.data(), B.size() * sizeof(float));
  registerConstant(B.data(), B.size() * sizeof(float));
  const std::vector<float> original = product();
  unregisterConstant(B.data());
  EXPECT_TRUE(isRegisteredConstant(B.data() + B.size() / 2));
  for (float& b : B) b = -b;
  EXPECT_EQ(product(), original) << "the packed copy went with the first of two registrations";
  unregisterConstant(B.data());
  EXPECT_FALSE(isRegisteredConstant(B.data()));
  std::vector<float> negated = product();
  for (size_t i = 0; i < negated.size(); ++i) ASSERT_EQ(negated[i], -original[i]) << "a stale packed copy at " << i;
}

// B made by a GemmPanelSource gives what the same B read from memory gives, bit for bit: one row block (each
// task makes its own panels), several (the source made once, whole, up front) and several with a B past the
// up-front bound (made per task again), over the tiles' column edges, K blocks and the panel chunks of a task;
// the source is asked only for columns inside B.
TEST(Sgemm, PanelSourceGivesWhatTheMatrixGives) {
  struct Matrix {
    const float* B;
    int64_t N;
  };
  auto pack = [](const void* ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int64_t nr, float* out) {
    const auto& m = *static_cast<const Matrix*>(ctx);
    EXPECT_TRUE(j0 >= 0 && nc > 0 && j0 + nc <= m.N) << "columns " << j0 << " + " << nc;
    for (int64_t q = 0; q * nr < nc; ++q)
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t l = 0; l < nr; ++l) {
          const int64_t j = j0 + q * nr + l;
          out[(q * kc + k) * nr + l] = j < j0 + nc ? m.B[(k0 + k) * m.N + j] : 0.f;
        }
  };
  std::vector<std::tuple<int64_t, int64_t, int64_t>> shapes = {{200, 4200, 4000}};  // past 16 MB: made per task
  for (int64_t M : {5, 40, 300})
    for (int64_t N : {17, 70, 600})
      for (int64_t K : {9, 385}) shapes.emplace_back(M, N, K);
  for (auto [M, N, K] : shapes) {
    auto A = randoms(size_t(M * K), 11), B = randoms(size_t(K * N), 12);
    std::vector<float> fromMemory(size_t(M * N)), fromSource(size_t(M * N));
    sgemm(false, false, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, fromMemory.data(), N);
    const Matrix m{B.data(), N};
    sgemmFromPanels(M, N, K, A.data(), K, GemmPanelSource{pack, &m}, fromSource.data(), N);
    ASSERT_EQ(fromSource, fromMemory) << "M " << M << " N " << N << " K " << K;
  }
}

// An A read through a table of runs (sgemmIndirect: an NHWC conv's input pixels under each window cell, zeros
// for padding) gives what sgemm gives on the matrix it describes: runs shorter and longer than a K block and than
// a vector, rows in full and partial tiles, every tile width, at every vector width the machine has.
TEST(Sgemm, IndirectAGivesWhatTheGatheredMatrixGives) {
  int cases = 0;
  for (int lanes : machineWidths()) {
    LanesLimit limit(lanes);
    for (int64_t cellDepth : {1, 5, 64, 200})
      for (int64_t cells : {1, 3, 9})
        for (int64_t M : {1, 7, 30, 101})
          for (int64_t N : {8, 16, 40, 64, 200}) {
            const int64_t K = cells * cellDepth, pixels = 11;
            auto base = randoms(size_t(pixels * cellDepth), 14), B = randoms(size_t(K * N), 15);
            auto zeros = std::vector<float>(size_t(cellDepth), 0.f);
            std::vector<int64_t> offsets(size_t(M * cells));
            for (size_t i = 0; i < offsets.size(); ++i)  // every fourth a padding run
              offsets[i] = i % 4 == 3 ? -1 : int64_t(i * 7 % pixels) * cellDepth;
            std::vector<float> A(size_t(M * K));
            for (int64_t i = 0; i < M; ++i)
              for (int64_t t = 0; t < cells; ++t)
                for (int64_t c = 0; c < cellDepth; ++c) {
                  const int64_t offset = offsets[size_t(i * cells + t)];
                  A[size_t(i * K + t * cellDepth + c)] = offset < 0 ? 0.f : base[size_t(offset + c)];
                }
            std::vector<float> fromMatrix(size_t(M * N)), indirect(size_t(M * N));
            sgemm(false, false, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, fromMatrix.data(), N);
            sgemmIndirect(M, N, GemmIndirectA{base.data(), offsets.data(), zeros.data(), cells, cellDepth}, B.data(),
                          N, indirect.data(), N);
            ASSERT_EQ(indirect, fromMatrix) << "M " << M << " N " << N << " cells " << cells << " x " << cellDepth
                                            << " on " << sgemmIsa();
            ++cases;
          }
  }
  EXPECT_EQ(cases, int(machineWidths().size()) * 4 * 3 * 4 * 5);
}

// A source that several row blocks share is asked for each block of its panels once, however many row blocks
// there are (an NCHW conv's im2col, gathered again for each row block, ran 2x slow); here the 49 columns of a
// 512-channel 3x3 conv over a 7x7 image, 4608 deep, whose panels are made into the thread's kept scratch.
TEST(Sgemm, PanelSourceAskedOnceWhateverTheRowBlocks) {
  struct Counted {
    std::atomic<int64_t> calls{0};
  };
  auto pack = [](const void* ctx, int64_t, int64_t kc, int64_t, int64_t nc, int64_t nr, float* out) {
    ++static_cast<Counted*>(const_cast<void*>(ctx))->calls;
    std::fill(out, out + (nc + nr - 1) / nr * nr * kc, 1.f);
  };
  const int64_t N = 49, K = 4608;
  std::vector<int64_t> calls;
  for (int64_t M : {512, 4096}) {
    auto A = randoms(size_t(M * K), 13);
    std::vector<float> C(size_t(M * N));
    Counted counted;
    sgemmFromPanels(M, N, K, A.data(), K, GemmPanelSource{pack, &counted}, C.data(), N);
    calls.push_back(counted.calls);
    double row0 = 0;
    for (int64_t k = 0; k < K; ++k) row0 += A[size_t(k)];
    EXPECT_NEAR(C[0], row0, 1e-2 * std::abs(row0) + 1e-2) << "M " << M;
  }
  EXPECT_EQ(calls[0], calls[1]) << "the panels were made per row block: " << calls[0] << " then " << calls[1];
}

// Naive convolution with the epilogue, in double, NHWC or NCHW (NDHWC or NCDHW for a 3-D window).
std::vector<double> naiveConv(const ConvGeometry& g, const std::vector<float>& x, const std::vector<float>& oihw,
                              const ConvEpilogue& e, bool nchw = false) {
  std::vector<double> y(size_t(g.N * g.outputPixels() * g.K));
  const int64_t cpg = g.C / g.group, kpg = g.K / g.group;
  auto xAt = [&](int64_t n, int64_t id, int64_t ih, int64_t iw, int64_t c) {
    return size_t(nchw ? (((n * g.C + c) * g.D + id) * g.H + ih) * g.W + iw
                       : (((n * g.D + id) * g.H + ih) * g.W + iw) * g.C + c);
  };
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t p = 0; p < g.outputPixels(); ++p)
      for (int64_t k = 0; k < g.K; ++k) {
        const int64_t od = p / (g.OH * g.OW), oh = p / g.OW % g.OH, ow = p % g.OW;
        size_t at = size_t(nchw ? (n * g.K + k) * g.outputPixels() + p : (n * g.outputPixels() + p) * g.K + k);
        double acc = e.bias ? e.bias[k] : 0.0;
        for (int64_t c = 0; c < cpg; ++c)
          for (int64_t t = 0; t < g.T; ++t)
            for (int64_t r = 0; r < g.R; ++r)
              for (int64_t s = 0; s < g.S; ++s) {
                int64_t id = od * g.strideD - g.padFront + t * g.dilD;
                int64_t ih = oh * g.strideH - g.padTop + r * g.dilH, iw = ow * g.strideW - g.padLeft + s * g.dilW;
                if (id < 0 || id >= g.D || ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                int64_t ci = k / kpg * cpg + c;
                acc += double(x[xAt(n, id, ih, iw, ci)]) *
                       double(oihw[size_t((((k * cpg + c) * g.T + t) * g.R + r) * g.S + s)]);
              }
        if (e.residual) acc += e.residual[at];
        acc = std::min(std::max(acc, double(e.lo)), double(e.hi));
        acc = roundedTo(e.rounding, float(acc));  // to half precision, in f32 (none: unchanged)
        const double hard = std::min(std::max(double(e.alpha) * acc + double(e.beta), 0.0), 1.0);
        const double logistic = 1.0 / (1.0 + std::exp(-acc));
        switch (e.activation) {
          case Activation::None: break;
          case Activation::HardSigmoid: acc = hard; break;
          case Activation::HardSwish: acc *= hard; break;
          case Activation::Sigmoid: acc = logistic; break;
          case Activation::Silu: acc *= logistic; break;
          case Activation::SiluRoundedGate: acc *= roundedTo(e.rounding, float(logistic)); break;
          case Activation::Gelu: acc *= 0.5 * std::erfc(-acc / std::sqrt(2.0)); break;
        }
        y[at] = e.rounding == Rounding::None ? acc : roundedTo(e.rounding, float(acc));
      }
  return y;
}


// g in both layouts at every vector width the machine has (the direct
// kernels' copies), with each epilogue: none, bias, bias + clamp, bias +
// clamp + residual, bias + HardSwish, bias + residual + HardSigmoid, bias +
// Sigmoid, bias + residual + clamp + SiLU, bias + GELU, bias + clamp rounded to f16, bias + Sigmoid rounded
// to bf16, bias + SiLU rounded to f16 with its gate rounded (within a unit of the half type's last place: a
// sum one f32 ulp apart may round the other way); against naiveConv.
void expectConvMatchesNaive(ConvGeometry g, const std::string& name) {
  auto x = randoms(size_t(g.N * g.inputPixels() * g.C), 6), w = randoms(size_t(g.K * (g.C / g.group) * g.cells()), 7);
  auto bias = randoms(size_t(g.K), 8), residual = randoms(size_t(g.N * g.outputPixels() * g.K), 9);
  std::vector<float> packed = packConvWeights(g, w.data());
  const std::vector<int64_t> table = convInputTable(g);
  constexpr int kParts = 12;
  for (int lanes : machineWidths())
    for (int part = 0; part < 2 * kParts; ++part) {
      const bool nchw = part >= kParts;
      const LanesLimit limit(lanes);
      ConvEpilogue e;
      switch (part % kParts) {
        case 3: e.residual = residual.data(); [[fallthrough]];
        case 2: e.lo = 0.f, e.hi = 0.75f; [[fallthrough]];
        case 1: e.bias = bias.data(); break;
        case 4: e.bias = bias.data(), e.activation = Activation::HardSwish, e.alpha = 1.f / 6, e.beta = 0.5f; break;
        case 5:
          e.bias = bias.data(), e.residual = residual.data();
          e.activation = Activation::HardSigmoid, e.alpha = 0.2f, e.beta = 0.5f;
          break;
        case 6: e.bias = bias.data(), e.activation = Activation::Sigmoid; break;
        case 7:
          e.bias = bias.data(), e.residual = residual.data(), e.lo = -1.5f, e.hi = 2.f;
          e.activation = Activation::Silu;
          break;
        case 8: e.bias = bias.data(), e.activation = Activation::Gelu; break;
        case 9: e.bias = bias.data(), e.lo = 0.f, e.hi = 6.f, e.rounding = Rounding::F16; break;
        case 10: e.bias = bias.data(), e.activation = Activation::Sigmoid, e.rounding = Rounding::BF16; break;
        case 11: e.bias = bias.data(), e.activation = Activation::SiluRoundedGate, e.rounding = Rounding::F16; break;
        default: break;
      }
      std::vector<float> y(residual.size());
      if (nchw)
        convNchw(g, x.data(), convPacksWeights(g, false) ? packed.data() : w.data(), e, y.data());
      else
        convNhwc(g, x.data(), packed.data(), e, y.data());
      const std::string what = std::string(nchw ? "nchw " : "nhwc ") + name + " epilogue part " +
                               std::to_string(part % kParts) + " vector lanes " + std::to_string(lanes);
      const double tolerance = e.rounding == Rounding::F16 ? 0x1p-10 : e.rounding == Rounding::BF16 ? 0x1p-7 : 1e-5;
      expectNear(y, naiveConv(g, x, w, e, nchw), tolerance, what);
      if (nchw) continue;
      // The same through the input table built once, as a compiled conv reads it.
      std::vector<float> fromTable(y.size());
      convNhwc(g, x.data(), packed.data(), e, fromTable.data(), table.empty() ? nullptr : table.data());
      EXPECT_EQ(fromTable, y) << what << ", input table built once";
    }
}

// Output extent of a window over `extent` inputs padded by `pad` on both sides.
int64_t outputExtent(int64_t extent, int64_t window, int64_t stride, int64_t pad, int64_t dilation) {
  return (extent + 2 * pad - dilation * (window - 1) - 1) / stride + 1;
}

// Both layouts, every group count (1, grouped, grouped 1x1, depthwise,
// depthwise with a channel multiplier), strides, pads and dilations.
TEST(Conv, BothLayoutsAnyGroupWithEpiloguesOfBiasResidualAndClamp) {
  struct Case {
    int64_t C, K, R, stride, pad, group, dil;
  };
  for (const Case& c : std::vector<Case>{{8, 40, 1, 1, 0, 1, 1},  {5, 19, 3, 2, 1, 1, 1},  {35, 35, 3, 1, 1, 35, 1},
                                         {48, 48, 5, 2, 2, 48, 1}, {12, 18, 3, 1, 1, 3, 1},  {16, 8, 1, 1, 0, 4, 1},
                                         {6, 12, 3, 2, 1, 6, 1},   {8, 8, 3, 1, 2, 8, 2},    {6, 10, 3, 1, 2, 2, 2},
                                         // grouped, direct: 16-lane blocks over 2 groups (width 8), a partial last
                                         // block (104 = 6.5 x 16), groups of 24 that straddle blocks, width 32,
                                         // width 16 (one group a block)
                                         {48, 48, 3, 1, 1, 6, 1},  {104, 104, 3, 2, 1, 13, 1}, {72, 72, 3, 1, 1, 3, 1},
                                         {64, 64, 3, 1, 1, 2, 1},  {40, 80, 1, 1, 0, 5, 1},    {48, 48, 3, 2, 1, 3, 1},
                                         // depthwise blocks of 16, then 8, 4 and 1 channels
                                         {24, 24, 3, 1, 1, 24, 1}, {31, 31, 3, 2, 1, 31, 1},
                                         // dense over <= 4 channels, direct (on AVX-512 in blocks of 32 where
                                         // K is a multiple of 32): RGB stems, partial blocks, dilated, grayscale
                                         {3, 16, 3, 2, 1, 1, 1},   {3, 64, 7, 2, 3, 1, 1},   {4, 19, 3, 1, 1, 1, 1},
                                         {3, 24, 3, 2, 1, 1, 1},   {2, 5, 3, 1, 2, 1, 2},    {1, 32, 3, 1, 1, 1, 1}}) {
    ConvGeometry g;
    g.N = 2, g.H = 9, g.W = 13, g.C = c.C, g.K = c.K, g.R = g.S = c.R, g.strideH = g.strideW = c.stride;
    g.padTop = g.padLeft = c.pad, g.group = c.group, g.dilH = g.dilW = c.dil;
    g.OH = outputExtent(g.H, c.R, c.stride, c.pad, c.dil), g.OW = outputExtent(g.W, c.R, c.stride, c.pad, c.dil);
    expectConvMatchesNaive(g, "C " + std::to_string(c.C) + " K " + std::to_string(c.K) + " R " + std::to_string(c.R) +
                                  " group " + std::to_string(c.group) + " dilation " + std::to_string(c.dil));
  }
}

// 3-D windows (video models' Conv3d), group 1, in both layouts: the 3x3x3 block conv, the 3x7x7 stem over RGB
// at stride (1, 2, 2) (which a 2-D conv over 3 channels runs direct), a strided 1x1x1 shortcut, R(2+1)D's
// temporal 3x1x1, a depth dilation, and a window deeper than the clip with its depth padding.
TEST(Conv, ThreeDimensionalWindowsInBothLayouts) {
  struct Case {
    int64_t C, K, T, R, strideD, strideH, padD, padH, dilD;
    int64_t D = 5;
  };
  for (const Case& c : std::vector<Case>{{8, 24, 3, 3, 1, 1, 1, 1, 1},
                                         {3, 16, 3, 7, 1, 2, 1, 3, 1},
                                         {16, 32, 1, 1, 2, 2, 0, 0, 1},
                                         {12, 20, 3, 1, 1, 1, 1, 0, 1},
                                         {6, 10, 3, 3, 1, 1, 2, 1, 2},
                                         {5, 7, 5, 3, 2, 1, 2, 1, 1, 3}}) {
    ConvGeometry g;
    g.N = 2, g.D = c.D, g.H = 7, g.W = 9, g.C = c.C, g.K = c.K;
    g.T = c.T, g.R = g.S = c.R, g.strideD = c.strideD, g.strideH = g.strideW = c.strideH;
    g.padFront = c.padD, g.padTop = g.padLeft = c.padH, g.dilD = c.dilD;
    g.OD = outputExtent(g.D, c.T, c.strideD, c.padD, c.dilD);
    g.OH = outputExtent(g.H, c.R, c.strideH, c.padH, 1), g.OW = outputExtent(g.W, c.R, c.strideH, c.padH, 1);
    ASSERT_FALSE(g.planar());
    expectConvMatchesNaive(g, "3-D C " + std::to_string(c.C) + " K " + std::to_string(c.K) + " window " +
                                  std::to_string(c.T) + "x" + std::to_string(c.R) + "x" + std::to_string(c.R));
  }
}

// The pixel under each window cell, in floats from the input's start, -1 in the padding: a 3x3 window, pad 1,
// stride 2 over two 3x4 images of 5 channels (2x2 outputs each). None for the convs that read no table.
TEST(Conv, InputTableNamesThePixelUnderEachWindowCell) {
  ConvGeometry g;
  g.N = 2, g.H = 3, g.W = 4, g.C = 5, g.K = 8, g.R = g.S = 3, g.strideH = g.strideW = 2, g.padTop = g.padLeft = 1;
  g.OH = outputExtent(g.H, 3, 2, 1, 1), g.OW = outputExtent(g.W, 3, 2, 1, 1);
  ASSERT_EQ(g.OH, 2);
  ASSERT_EQ(g.OW, 2);
  const std::vector<int64_t> table = convInputTable(g);
  ASSERT_EQ(table.size(), size_t(2 * 2 * 2 * 9));
  auto pixel = [&](int64_t n, int64_t h, int64_t w) { return ((n * g.H + h) * g.W + w) * g.C; };
  // Image 0, output (0, 0): the window's top row and left column lie in the padding.
  EXPECT_EQ(std::vector<int64_t>(table.begin(), table.begin() + 9),
            (std::vector<int64_t>{-1, -1, -1, -1, pixel(0, 0, 0), pixel(0, 0, 1), -1, pixel(0, 1, 0), pixel(0, 1, 1)}));
  // Image 1, output (1, 1) (the last row of the table): rows 1-3, columns 1-3, row 3 below the image.
  EXPECT_EQ(std::vector<int64_t>(table.end() - 9, table.end()),
            (std::vector<int64_t>{pixel(1, 1, 1), pixel(1, 1, 2), pixel(1, 1, 3), pixel(1, 2, 1), pixel(1, 2, 2),
                                  pixel(1, 2, 3), -1, -1, -1}));
  ConvGeometry pointwise = g;
  pointwise.R = pointwise.S = 1, pointwise.strideH = pointwise.strideW = 1, pointwise.padTop = pointwise.padLeft = 0;
  pointwise.OH = g.H, pointwise.OW = g.W;
  EXPECT_TRUE(convInputTable(pointwise).empty()) << "a 1x1 conv reads its input as the GEMM's A";
  ConvGeometry depthwise = g;
  depthwise.K = depthwise.group = g.C;
  EXPECT_TRUE(convInputTable(depthwise).empty()) << "a depthwise conv runs direct";
}

// Images of many SGEMM row blocks (784 output pixels; convNhwc reads its input through a table of them), at
// stride 1 and 2; the NCHW side as in every case.
TEST(Conv, LargerImagesOverManyRowBlocks) {
  for (int64_t stride : {1, 2}) {
    ConvGeometry g;
    g.N = 2, g.H = g.W = 28 * stride, g.C = 20, g.K = 24, g.R = g.S = 3, g.strideH = g.strideW = stride;
    g.padTop = g.padLeft = 1;
    g.OH = outputExtent(g.H, 3, stride, 1, 1), g.OW = outputExtent(g.W, 3, stride, 1, 1);
    expectConvMatchesNaive(g, "28x28 output, stride " + std::to_string(stride));
  }
}

// Dilated windows that reach past a small image (DeepLab's ASPP): tiles whose every pixel has a window cell in
// the padding skip that cell's steps in the indirect SGEMM. Dilation 3 over 6x6 (some cells inside for some
// pixels), 12 over 8x8 (only the centre inside), at strides 1 and 2.
TEST(Conv, DilatedWindowsWhoseCellsLieInThePaddingForWholeTiles) {
  for (auto [dilation, H] : {std::pair<int64_t, int64_t>{3, 6}, {12, 8}})
    for (int64_t stride : {1, 2}) {
      ConvGeometry g;
      g.N = 2, g.H = g.W = H, g.C = 20, g.K = 24, g.R = g.S = 3, g.strideH = g.strideW = stride;
      g.padTop = g.padLeft = dilation, g.dilH = g.dilW = dilation;
      g.OH = g.OW = outputExtent(H, 3, stride, dilation, dilation);
      expectConvMatchesNaive(g, "dilation " + std::to_string(dilation) + " over " + std::to_string(H) + "x" +
                                    std::to_string(H) + ", stride " + std::to_string(stride));
    }
}

// What the square cases miss: a 3x5 window with strides 2/1, pads 0/2 and
// dilations 1/2 (H and W parameters never mixed up); rows wide enough for
// the NCHW depthwise kernel's 4-vector tiles and its overlapping last tile at
// every width (83 and 70 columns); strided rows over stride-1 columns; a 5x5
// window wider than a 3x3 image (pad 4). Depthwise, with a channel
// multiplier, and grouped.
TEST(Conv, AsymmetricWindowsWideRowsAndWindowsWiderThanTheImage) {
  struct Geometry {
    int64_t H, W, R, S, strideH, strideW, padTop, padLeft, dilH, dilW;
  };
  for (const Geometry& q : std::vector<Geometry>{{9, 13, 3, 5, 2, 1, 0, 2, 1, 2}, {5, 83, 3, 3, 1, 1, 1, 1, 1, 1},
                                                 {4, 70, 3, 5, 2, 1, 1, 2, 1, 1}, {3, 3, 5, 5, 1, 1, 4, 4, 1, 1}})
    for (auto [C, K, group] : {std::tuple{20, 20, 20}, std::tuple{6, 12, 6}, std::tuple{24, 24, 6}}) {
      ConvGeometry g;
      g.N = 1, g.H = q.H, g.W = q.W, g.C = C, g.K = K, g.group = group, g.R = q.R, g.S = q.S;
      g.strideH = q.strideH, g.strideW = q.strideW, g.padTop = q.padTop, g.padLeft = q.padLeft;
      g.dilH = q.dilH, g.dilW = q.dilW;
      g.OH = outputExtent(q.H, q.R, q.strideH, q.padTop, q.dilH);
      g.OW = outputExtent(q.W, q.S, q.strideW, q.padLeft, q.dilW);
      expectConvMatchesNaive(g, std::to_string(q.H) + "x" + std::to_string(q.W) + " window " + std::to_string(q.R) +
                                    "x" + std::to_string(q.S) + " group " + std::to_string(group) + " C " +
                                    std::to_string(C) + " K " + std::to_string(K));
    }
}

// The depthwise NHWC row kernel's paths: 29 channels (one block each of 16, 8,
// 4 and 1 lanes); rows wide enough for whole 8-pixel tiles at stride 2 with
// 3x3 and 5x5 windows (the input-reuse loop at its longest); a 7x7 and a 1x7
// window (width not fixed at compile time), a 3x3 at stride 3 (fixed width,
// stride not); 72 channels over 4 output rows (a run of four 16-lane blocks,
// computed pixel by pixel, then one of 8), 35 (a run of three 1-lane blocks),
// 200 over 2 rows and 29 over one (a row split into chunks of blocks, the runs
// cut at the chunks' ends), 176 over 10 rows of 7 pixels (5x5: rows cut
// into two chunks whose weights fit L1, runs of six and five 16-lane blocks
// that the one-pixel tiles and the border pixels take in groups, then one by
// one). With pad 3, the 1x7 window has output rows whose
// window lies wholly in the padding. The last four: the row's edges in the
// input-reuse loop (depthwiseEdgeTiles).
TEST(Conv, DepthwiseRowsOfEveryBlockWidthStrideAndWindow) {
  struct Case {
    int64_t N, H, W, C, R, S, stride, pad;
  };
  for (const Case& c : std::vector<Case>{{1, 5, 40, 29, 3, 3, 2, 1},
                                         {1, 5, 40, 29, 5, 5, 2, 2},
                                         {1, 4, 70, 29, 5, 5, 1, 2},
                                         {1, 9, 20, 29, 7, 7, 1, 3},
                                         {1, 3, 33, 29, 1, 7, 2, 3},
                                         {2, 5, 31, 29, 3, 3, 3, 1},
                                         {1, 4, 16, 72, 3, 3, 1, 1},
                                         {1, 6, 20, 35, 3, 3, 1, 1},
                                         {1, 2, 9, 200, 3, 3, 1, 1},
                                         {2, 5, 7, 176, 5, 5, 1, 2},
                                         {1, 1, 1, 29, 3, 3, 1, 1},
                                         // edges in tiles that check the columns: 14 wide (8 checked, 4 inside,
                                         // 2 checked), rows narrower than a tile, stride 2, 5x5 over 2 columns
                                         {1, 3, 14, 29, 5, 5, 1, 2},
                                         {1, 3, 3, 29, 3, 3, 1, 1},
                                         {2, 7, 7, 40, 5, 5, 2, 2},
                                         {1, 2, 2, 29, 5, 5, 1, 2}}) {
    ConvGeometry g;
    g.N = c.N, g.H = c.H, g.W = c.W, g.C = g.K = g.group = c.C, g.R = c.R, g.S = c.S;
    g.strideH = g.strideW = c.stride, g.padTop = g.padLeft = c.pad;  // 1x7 pad 3: rows all padding
    g.OH = outputExtent(g.H, c.R, c.stride, c.pad, 1), g.OW = outputExtent(g.W, c.S, c.stride, c.pad, 1);
    expectConvMatchesNaive(g, std::to_string(c.H) + "x" + std::to_string(c.W) + " window " + std::to_string(c.R) +
                                  "x" + std::to_string(c.S) + " stride " + std::to_string(c.stride) + " C " +
                                  std::to_string(c.C));
  }
}

// An NCHW convolution's implicit im2col: columns over several K blocks (9216 and 864 deep), 24-pixel output
// rows that the SGEMM's panels straddle; with 3 output channels each task gathers its own panels, with 200
// (several row blocks) they are gathered once, up front.
TEST(Conv, NchwImplicitIm2colOverKBlocksRowsAndRowBlocks) {
  for (auto [C, K] : {std::pair<int64_t, int64_t>{1024, 3}, {96, 200}}) {
    ConvGeometry g;
    g.N = 1, g.C = C, g.K = K, g.H = g.W = 24, g.R = g.S = 3, g.padTop = g.padLeft = 1, g.OH = g.OW = 24;
    auto x = randoms(size_t(g.C * g.H * g.W), 16), w = randoms(size_t(g.K * g.C * 9), 17);
    std::vector<float> y(size_t(g.K * g.OH * g.OW));
    convNchw(g, x.data(), w.data(), ConvEpilogue{}, y.data());
    expectNear(y, naiveConv(g, x, w, ConvEpilogue{}, /*nchw=*/true), 1e-4, "nchw im2col, K " + std::to_string(K));
  }
}

// Naive pooling in double, NCHW: the window cells inside the input only; Average divides by their count,
// AverageCountPad by the whole window.
std::vector<double> naivePoolNchw(const ConvGeometry& g, PoolKind kind, const std::vector<float>& x) {
  std::vector<double> y(size_t(g.N * g.C * g.OH * g.OW));
  for (int64_t nc = 0; nc < g.N * g.C; ++nc)
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        double acc = kind == PoolKind::Max ? -INFINITY : 0.0;
        int64_t cells = 0;
        for (int64_t r = 0; r < g.R; ++r)
          for (int64_t s = 0; s < g.S; ++s) {
            int64_t ih = oh * g.strideH - g.padTop + r * g.dilH, iw = ow * g.strideW - g.padLeft + s * g.dilW;
            if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
            const double v = x[size_t((nc * g.H + ih) * g.W + iw)];
            acc = kind == PoolKind::Max ? std::max(acc, v) : acc + v;
            ++cells;
          }
        if (kind == PoolKind::Average) acc /= double(std::max<int64_t>(cells, 1));
        if (kind == PoolKind::AverageCountPad) acc /= double(g.R * g.S);
        y[size_t((nc * g.OH + oh) * g.OW + ow)] = acc;
      }
  return y;
}

// x [N, C, HW] as [N, HW, C] (toChannelsLast), or back (toChannelsLast false: x is [N, HW, C]).
std::vector<float> swapChannels(const std::vector<float>& x, int64_t N, int64_t C, int64_t HW, bool toChannelsLast) {
  std::vector<float> y(x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < HW; ++p) {
        const size_t planar = size_t((n * C + c) * HW + p), last = size_t((n * HW + p) * C + c);
        (toChannelsLast ? y[last] : y[planar]) = toChannelsLast ? x[planar] : x[last];
      }
  return y;
}

// g pooled in both layouts against naivePoolNchw (NHWC: the same values transposed in and out).
void expectPoolMatchesNaive(const ConvGeometry& g, PoolKind kind, const std::string& what) {
  const auto x = randoms(size_t(g.N * g.C * g.H * g.W), 21);
  const std::vector<double> want = naivePoolNchw(g, kind, x);
  std::vector<float> y(want.size());
  poolNchw(g, kind, x.data(), y.data());
  expectNear(y, want, 1e-6, "nchw " + what);
  const std::vector<float> xt = swapChannels(x, g.N, g.C, g.H * g.W, true);
  poolNhwc(g, kind, xt.data(), y.data());
  expectNear(swapChannels(y, g.N, g.C, g.OH * g.OW, false), want, 1e-6, "nhwc " + what);
}

// Pooling in both layouts, every kind: strides 1, 2 and 3 (the NCHW rows' fixed and runtime strides), pads, a
// ceil-mode extent whose last windows hang past the input, a 3x5 window with strides 2/1, pads 0/2 and dilations
// 1/2, a window wider than the image; 5 channels and 83 (the NHWC kernel's blocks of four vectors, single vectors
// and a partial one), at each vector width of the machine.
TEST(Pool, BothLayoutsMatchNaiveForEveryKindStrideAndPad) {
  struct Geometry {
    int64_t H, W, R, S, strideH, strideW, padTop, padLeft, dilH, dilW, OH, OW;
  };
  for (const Geometry& q : std::vector<Geometry>{{10, 11, 3, 3, 2, 2, 0, 0, 1, 1, 5, 5},
                                                 {9, 13, 3, 3, 1, 1, 1, 1, 1, 1, 9, 13},
                                                 {8, 8, 2, 2, 2, 2, 0, 0, 1, 1, 4, 4},
                                                 {9, 13, 3, 5, 2, 1, 0, 2, 1, 2, 4, 13},
                                                 {11, 12, 3, 3, 3, 3, 1, 1, 1, 1, 4, 4},
                                                 {3, 3, 5, 5, 1, 1, 2, 2, 1, 1, 3, 3}})
    for (PoolKind kind : {PoolKind::Max, PoolKind::Average, PoolKind::AverageCountPad})
      for (int64_t channels : {5, 83})
        for (int lanes : machineWidths()) {
          const LanesLimit limit(lanes);
          ConvGeometry g;
          g.N = 2, g.C = g.K = channels, g.H = q.H, g.W = q.W, g.R = q.R, g.S = q.S, g.strideH = q.strideH;
          g.strideW = q.strideW, g.padTop = q.padTop, g.padLeft = q.padLeft, g.dilH = q.dilH, g.dilW = q.dilW;
          g.OH = q.OH, g.OW = q.OW;
          expectPoolMatchesNaive(g, kind,
                                 std::to_string(q.H) + "x" + std::to_string(q.W) + " window " + std::to_string(q.R) +
                                     "x" + std::to_string(q.S) + " stride " + std::to_string(q.strideH) + "/" +
                                     std::to_string(q.strideW) + " kind " + std::to_string(int(kind)) + " channels " +
                                     std::to_string(channels) + " lanes " + std::to_string(lanes));
        }
}

// Global average pooling in both layouts against naivePoolNchw's whole-image window: 83 channels (not a whole
// number of vectors), an image of one pixel, one of 7x9, and one of 23x31 (the NHWC kernel's pixels in two
// chunks, the last shorter), at each vector width of the machine.
TEST(Pool, GlobalAverageMatchesWholeImageWindow) {
  for (auto [H, W] : {std::pair<int64_t, int64_t>{1, 1}, {7, 9}, {23, 31}})
    for (int lanes : machineWidths()) {
      const LanesLimit limit(lanes);
      ConvGeometry g;
      g.N = 3, g.C = g.K = 83, g.H = g.R = H, g.W = g.S = W;
      const auto x = randoms(size_t(g.N * g.C * H * W), 5);
      const std::vector<double> want = naivePoolNchw(g, PoolKind::Average, x);
      const std::string what = std::to_string(H) + "x" + std::to_string(W) + " lanes " + std::to_string(lanes);
      std::vector<float> y(want.size());
      globalAveragePoolNchw(g.N, g.C, H * W, x.data(), y.data());
      expectNear(y, want, 1e-6, "nchw " + what);
      // NHWC [N, H*W, C]: the same values transposed.
      const std::vector<float> xt = swapChannels(x, g.N, g.C, H * W, true);
      globalAveragePoolNhwc(g.N, H * W, g.C, xt.data(), y.data());
      expectNear(y, want, 1e-6, "nhwc " + what);
    }
}

TEST(Pack, SigmoidAndSiluOverTheWholeFloatRange) {
  // Past the exponential's range (0 below -87.3, +inf above 88.72, as expf) the sigmoid is exactly 0 or 1;
  // NaN stays NaN. Four-lane vectors: every build has them.
  using P = Pack<4, 1>;
  const float inf = std::numeric_limits<float>::infinity();
  for (bool silu : {false, true}) {
    for (float x : {-1e30f, -200.f, -100.f, -88.5f, -87.4f, -87.3f, -30.f, -5.f, -1.f, -1e-3f, 0.f, 1e-3f, 0.5f, 1.f,
                    5.f, 30.f, 87.3f, 88.5f, 100.f, 1e30f}) {
      P p = P::splat(x);
      p.sigmoid(silu);
      double want = 1.0 / (1.0 + std::exp(-double(x)));
      if (silu) want *= double(x);
      for (int lane = 0; lane < 4; ++lane)
        EXPECT_NEAR(p.v[0][lane], want, 1e-6 * std::max(1.0, std::fabs(want))) << (silu ? "silu " : "sigmoid ") << x;
    }
    P nan = P::splat(std::numeric_limits<float>::quiet_NaN());
    nan.sigmoid(silu);
    EXPECT_TRUE(std::isnan(nan.v[0][0]));
  }
  P low = P::splat(-inf), high = P::splat(inf);
  low.sigmoid(false);
  high.sigmoid(false);
  EXPECT_EQ(low.v[0][0], 0.f);
  EXPECT_EQ(high.v[0][0], 1.f);
}

// Pack::round and roundedTo against the interpreter's conversions (ir/DType.h) there and back: ties to even,
// f16's subnormals and overflow, bf16's, zeros, infinities and NaN, and many random bit patterns.
TEST(Pack, RoundsToHalfAndBfloat16AsTheConversionsThereAndBack) {
  std::vector<float> xs = {0.f, -0.f, 1.f, -1.f, 65504.f, 65519.f, 65520.f, -65520.f, 1e9f, 0x1p-14f, 0x1.ffcp-15f,
                           0x1p-24f, 0x1p-25f, 0x1.8p-24f, 0x1p-26f, 1.f + 0x1p-11f, 1.f + 0x3p-11f, 3.4e38f,
                           std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::denorm_min()};
  std::mt19937 rng(3);
  for (int i = 0; i < 100000; ++i) {
    uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    xs.push_back(i % 2 ? f : std::ldexp(float(rng() % 100000) / 1e5f, int(rng() % 60) - 30));
  }
  xs.resize(xs.size() / 16 * 16);
  for (Rounding r : {Rounding::F16, Rounding::BF16}) {
    for (int lanes : machineWidths()) {  // each copy's vectors: the F16C conversions at 8 and 16 lanes
      const LanesLimit limit(lanes);
      std::vector<float> got(xs.size());
      withNativeWidth([&]<int W>() FRICTION_LAMBDA_INLINE {
        for (size_t i = 0; i < xs.size(); i += W) {
          Pack<W, 1> p = Pack<W, 1>::load(xs.data() + i);
          p.round(r);
          p.store(got.data() + i);
        }
      });
      for (size_t i = 0; i < xs.size(); ++i) {
        const float x = xs[i], want = r == Rounding::F16 ? halfToFloat(floatToHalf(x)) : bf16ToFloat(floatToBf16(x));
        const float scalar = roundedTo(r, x);
        const std::string what = std::string(r == Rounding::F16 ? "f16 " : "bf16 ") + std::to_string(lanes) + " lanes";
        if (std::isnan(want)) {
          ASSERT_TRUE(std::isnan(got[i]) && std::isnan(scalar)) << what << " " << x;
          continue;
        }
        ASSERT_EQ(got[i], want) << what << " " << std::hexfloat << x;
        ASSERT_EQ(scalar, want) << what << " " << std::hexfloat << x;
      }
    }
  }
}

TEST(Pack, GeluOverTheWholeFloatRange) {
  // Against x/2 erfc(-x/sqrt 2) in doubles: relative error within 1e-6 where the result is a normal float, plus
  // on the negative side the rounding of the exponential's argument (about x^2/2) to a float; so the tail,
  // where x/2 (1 + erf) cancels to 0 in floats, keeps its sign and magnitude. +inf stays +inf; -inf and NaN
  // give NaN (as x/2 (1 + erf(x/sqrt 2)) does).
  using P = Pack<4, 1>;
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {-1e30f, -200.f, -14.f, -12.f, -9.f, -6.f, -4.f, -3.f, -2.f, -1.f, -0.5f, -1e-3f, -1e-30f, 0.f,
                  1e-30f, 1e-3f, 0.5f, 1.f, 2.f, 3.f, 4.f, 6.f, 9.f, 30.f, 1e30f}) {
    P p = P::splat(x);
    p.gelu();
    const double want = 0.5 * double(x) * std::erfc(-double(x) / std::sqrt(2.0));
    const double tolerance =
        std::fabs(want) < std::numeric_limits<float>::min() ? 1e-38 : (1e-6 + (x < 0 ? 1.5e-7 * x * x : 0.0)) * std::fabs(want);
    for (int lane = 0; lane < 4; ++lane) EXPECT_NEAR(p.v[0][lane], want, tolerance) << "gelu " << x;
    if (x < -1e-30f && want < -std::numeric_limits<float>::min()) {
      EXPECT_LT(p.v[0][0], 0.f) << x;
    }
  }
  for (float x : {-inf, std::numeric_limits<float>::quiet_NaN()}) {
    P p = P::splat(x);
    p.gelu();
    EXPECT_TRUE(std::isnan(p.v[0][0])) << x;
  }
  P high = P::splat(inf);
  high.gelu();
  EXPECT_EQ(high.v[0][0], inf);
}

// The recurrent layers' gates: sigmoid and tanh in vectors against the double-precision functions over
// [-30, 30] (both saturated ends, and tanh near 0, where 1 - 2 / (e^2x + 1) would cancel), a row length that
// leaves a partial vector, NaN kept, and the clip applied before the function.
TEST(GateRow, SigmoidAndTanhWithinAFewUlpsOfDouble) {
  const int64_t n = 100003;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = -30.f + 60.f * float(i) / float(n - 1);
  x[7] = 1e-6f, x[8] = -3e-4f, x[9] = std::numeric_limits<float>::quiet_NaN();
  for (GateFunction f : {GateFunction::Sigmoid, GateFunction::Tanh}) {
    std::vector<float> y = x;
    gateRow(f, std::numeric_limits<float>::infinity(), y.data(), n);
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (i == 9) {
        EXPECT_TRUE(std::isnan(y[size_t(i)]));
        continue;
      }
      const double v = x[size_t(i)], want = f == GateFunction::Sigmoid ? 1 / (1 + std::exp(-v)) : std::tanh(v);
      worst = std::max(worst, std::abs(y[size_t(i)] - want) / std::max(std::abs(want), 1e-30));
    }
    EXPECT_LT(worst, 4e-7) << (f == GateFunction::Sigmoid ? "sigmoid" : "tanh");
  }
  std::vector<float> clipped = {-3.f, -0.5f, 0.25f, 3.f};
  gateRow(GateFunction::Tanh, 1.f, clipped.data(), 4);
  EXPECT_FLOAT_EQ(clipped[0], std::tanh(-1.f));
  EXPECT_FLOAT_EQ(clipped[1], std::tanh(-0.5f));
  EXPECT_FLOAT_EQ(clipped[2], std::tanh(0.25f));
  EXPECT_FLOAT_EQ(clipped[3], std::tanh(1.f));
}

TEST(SoftmaxRows, MatchesDoubleExpIncludingMaskedAndUnderflowingEntries) {
  // Row lengths around the vector bodies (4, 8, 16 lanes); masked (-inf) entries, entries 100 below the row max
  // (their exp underflows to 0), and a fully masked row (NaN, as exp(-inf - -inf) is).
  for (int64_t cols : {1, 15, 16, 17, 197}) {
    const int64_t rows = 4;
    auto x = randoms(size_t(rows * cols), 10);
    for (int64_t i = 0; i < cols; i += 3) x[size_t(cols + i)] = -INFINITY;
    for (int64_t i = 1; i < cols; i += 4) x[size_t(2 * cols + i)] = -100.f;
    for (int64_t i = 0; i < cols; ++i) x[size_t(3 * cols + i)] = -INFINITY;
    for (int lanes : machineWidths())
      for (bool logSoftmax : {false, true}) {
        const LanesLimit limit(lanes);
        std::vector<float> y(x.size());
        softmaxRows(rows, cols, x.data(), y.data(), logSoftmax);
        for (int64_t r = 0; r < rows; ++r) {
          const float* in = x.data() + r * cols;
          double mx = -INFINITY, sum = 0;
          for (int64_t i = 0; i < cols; ++i) mx = std::max(mx, double(in[i]));
          for (int64_t i = 0; i < cols; ++i) sum += std::exp(double(in[i]) - mx);
          for (int64_t i = 0; i < cols; ++i) {
            double want = logSoftmax ? double(in[i]) - mx - std::log(sum) : std::exp(double(in[i]) - mx) / sum;
            float got = y[size_t(r * cols + i)];
            std::string at = "cols " + std::to_string(cols) + " row " + std::to_string(r) + " col " + std::to_string(i) +
                             (logSoftmax ? " log" : "") + " lanes " + std::to_string(nativeFloatLanes());
            if (std::isnan(want)) {
              EXPECT_TRUE(std::isnan(got)) << at;
            } else if (std::isinf(want)) {
              EXPECT_EQ(double(got), want) << at;
            } else {
              EXPECT_NEAR(got, want, 2e-6 * std::max(1.0, std::fabs(want))) << at;
            }
          }
        }
      }
  }
}

// Every Reduce* kind over [outer, reduced, inner] in each way the kernel splits
// the work: rows of outputs (NCHW's many rows of one element, NHWC's one row of
// many), and stretches of a long reduced axis when there are few outputs.
TEST(ReduceMiddle, EveryKindMatchesDoubleSumsInEverySplit) {
  using K = ReduceKind;
  struct Shape3 {
    int64_t outer, reduced, inner;
  };
  for (Shape3 sh : {Shape3{64, 49, 1}, {1, 49, 1024}, {1, 100003, 1}, {3, 30001, 2}, {2, 5, 3}})
    for (K kind : {K::Sum, K::Mean, K::Max, K::Min, K::SumSquare, K::L1, K::L2, K::LogSum, K::LogSumExp, K::Prod}) {
      std::vector<float> x = randoms(size_t(sh.outer * sh.reduced * sh.inner), 11);
      if (kind == K::LogSum)
        for (float& v : x) v = std::fabs(v) + 0.1f;
      std::vector<float> y(size_t(sh.outer * sh.inner));
      reduceMiddle(kind, sh.outer, sh.reduced, sh.inner, x.data(), y.data());
      std::vector<double> want;
      for (int64_t o = 0; o < sh.outer; ++o)
        for (int64_t i = 0; i < sh.inner; ++i) {
          double acc = kind == K::Max ? -INFINITY : kind == K::Min ? INFINITY : kind == K::Prod ? 1 : 0;
          for (int64_t r = 0; r < sh.reduced; ++r) {
            double v = x[size_t((o * sh.reduced + r) * sh.inner + i)];
            acc = kind == K::Max ? std::max(acc, v)
                  : kind == K::Min ? std::min(acc, v)
                  : kind == K::SumSquare || kind == K::L2 ? acc + v * v
                  : kind == K::L1 ? acc + std::fabs(v)
                  : kind == K::LogSumExp ? acc + std::exp(v)
                  : kind == K::Prod ? acc * v
                                          : acc + v;
          }
          want.push_back(kind == K::Mean ? acc / double(sh.reduced)
                         : kind == K::L2 ? std::sqrt(acc)
                         : kind == K::LogSum || kind == K::LogSumExp ? std::log(acc)
                                                                      : acc);
        }
      expectNear(y, want, 1e-6,
                 "kind " + std::to_string(int(kind)) + " over " + std::to_string(sh.outer) + "x" +
                     std::to_string(sh.reduced) + "x" + std::to_string(sh.inner));
    }
}

// Every permutation of a 4-D tensor whose dims straddle the 16- and 32-element tiles and the 1024-element runs
// of rows 2-4 long (and ones large enough to run threaded), through copyStrided (a permuted view copied dense)
// and transposeF32 (the cpu backend's Transpose), against the element-by-element definition.
TEST(CopyStrided, TransposesMatchTheDefinitionOverTileEdges) {
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{2, 3, 17, 5}, {1, 33, 1, 18}, {1, 3, 224, 224}, {2, 4, 33, 35}, {3, 2, 1025, 2}}) {
    std::vector<float> x = randoms(size_t(shape[0] * shape[1] * shape[2] * shape[3]), 3);
    std::vector<int64_t> perm = {0, 1, 2, 3};
    do {
      std::vector<int64_t> out(4), xStrides(4), inStrides = denseStrides(shape);
      for (size_t i = 0; i < 4; ++i) out[i] = shape[size_t(perm[i])], xStrides[i] = inStrides[size_t(perm[i])];
      const std::vector<int64_t> ys = denseStrides(out);
      for (bool viaCopy : {true, false}) {
        std::vector<float> y(x.size(), NAN);
        if (viaCopy)
          copyStrided(x.data(), xStrides, y.data(), ys, out);
        else
          transposeF32(x.data(), y.data(), shape, perm);
        bool same = true;
        for (int64_t a = 0; a < out[0]; ++a)
          for (int64_t b = 0; b < out[1]; ++b)
            for (int64_t c = 0; c < out[2]; ++c)
              for (int64_t d = 0; d < out[3]; ++d)
                same &= y[size_t(a * ys[0] + b * ys[1] + c * ys[2] + d * ys[3])] ==
                        x[size_t(a * xStrides[0] + b * xStrides[1] + c * xStrides[2] + d * xStrides[3])];
        EXPECT_TRUE(same) << (viaCopy ? "copyStrided" : "transposeF32") << " shape " << shape[0] << "x" << shape[1]
                          << "x" << shape[2] << "x" << shape[3] << " perm " << perm[0] << perm[1] << perm[2] << perm[3];
      }
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

// An NCHW Concat input: each batch row is one contiguous run of 267,337 elements, fewer runs than threads, so
// the runs are cut into chunks (uneven with 3 threads); written at a channel offset into a destination twice
// as wide, whose other channels stay untouched.
TEST(CopyStrided, ContiguousRunsAreCutIntoChunksAcrossThreads) {
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2, 3})
    for (int64_t batch : {1, 2}) {
      omp_set_num_threads(threads);
      const std::vector<int64_t> shape = {batch, 7, 181, 211}, out = {batch, 14, 181, 211};
      const int64_t plane = 7 * 181 * 211;
      std::vector<float> x = randoms(size_t(batch * plane), 5), y(size_t(2 * batch * plane), NAN);
      const std::vector<int64_t> ys = denseStrides(out);
      copyStrided(x.data(), denseStrides(shape), y.data() + 7 * ys[1], ys, shape);
      bool same = true, untouched = true;
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t i = 0; i < plane; ++i) {
          same &= y[size_t(b * ys[0] + plane + i)] == x[size_t(b * plane + i)];
          untouched &= std::isnan(y[size_t(b * ys[0] + i)]);
        }
      EXPECT_TRUE(same) << threads << " threads, batch " << batch;
      EXPECT_TRUE(untouched) << threads << " threads, batch " << batch;
    }
  omp_set_num_threads(saved);
}

TEST(AffineFor, RunsEveryItemOnceForAnyCountAndTeam) {
  for (int64_t n : {0, 1, 2, 3, 7, 64, 1001})
    for (int threads : {1, 2, 3, 8}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
      affineFor(n, threads, [&](int64_t i) { seen[size_t(i)].fetch_add(1); });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(seen[size_t(i)].load(), 1) << "item " << i << " of " << n << ", " << threads << " threads";
    }
  // One thread: in order.
  std::vector<int64_t> order;
  affineFor(5, 1, [&](int64_t i) { order.push_back(i); });
  EXPECT_EQ(order, (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(AffineFor, EachThreadStartsOnItsOwnShareAndHelpsASlowOne) {
  // Thread 0 is slow (5 ms an item): thread 1 takes its own share's first item first (the share a kernel
  // before split alike), then finishes most of thread 0's share instead of waiting for it (all of it, when
  // thread 0 wakes late).
  constexpr int64_t kItems = 40;
  std::vector<int> ranBy(kItems, -1);
  std::atomic<int64_t> firstOfThread1{-1};
  affineFor(kItems, 2, [&](int64_t i) {
    const int me = omp_get_thread_num();
    if (me == 1) {
      int64_t none = -1;
      firstOfThread1.compare_exchange_strong(none, i);
    }
    ranBy[size_t(i)] = me;
    if (me == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  if (firstOfThread1.load() < 0) GTEST_SKIP() << "OpenMP gave one thread";
  EXPECT_EQ(firstOfThread1.load(), kItems / 2);
  EXPECT_GT(std::count(ranBy.begin(), ranBy.end(), 1), kItems / 2 + 4) << "thread 1 did not help thread 0";
}

}  // namespace
}  // namespace friction::ukernels
