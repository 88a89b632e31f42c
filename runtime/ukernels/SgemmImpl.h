// The blocked SGEMM, written once over a vector type V and a register tile of
// MR rows x NV vectors. Each instruction-set TU (SgemmAvx512.cpp, ...) includes
// this header and instantiates it under its own compiler flags; everything
// here has internal linkage so the copies never meet at link time.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "runtime/ukernels/Buffers.h"
#include "runtime/ukernels/Parallel.h"
#include "runtime/ukernels/Sgemm.h"

namespace friction::ukernels {

// The packed panels of a registered-constant B (Sgemm.cpp), built by `pack`
// on first use; nullptr when B is not in a registered range.
struct PackedKey {
  const float* B;
  bool transB;
  int64_t K, N, ldb, layout;  // layout: the tile/block sizes that shaped the panels
  bool operator<(const PackedKey& o) const;
};
const float* constantPanels(const PackedKey& key, size_t floats, void (*pack)(const PackedKey&, float*));

// 64-byte aligned float buffers (panels are read with full-width vector loads), on huge pages from 2 MiB on.
struct AlignedDelete {
  void operator()(float* p) const { std::free(p); }
};
using AlignedFloats = std::unique_ptr<float[], AlignedDelete>;
inline AlignedFloats alignedFloats(size_t n) {
  float* p = static_cast<float*>(allocateBuffer(n * sizeof(float)));
  if (!p) throw std::bad_alloc();
  return AlignedFloats(p);
}

namespace {

template <typename V>
inline V loadu(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename V>
inline void storeu(float* p, V v) {
  std::memcpy(p, &v, sizeof v);
}

// Where a register tile's results go: C at the tile's first element, ldc apart, rows x cols of it;
// C = alpha * acc + (first ? beta * C : C). On the last K step of a GEMM whose epilogue is applied in the tile
// (finish), then + bias[j] (at the tile's first column) + rowBias[i] (at its first row) + residual[i, j] (at
// its first element, ldc apart; each may be null), clamped to [lo, hi].
struct TileOut {
  float* C;
  int64_t ldc, rows, cols;
  float alpha, beta;
  bool first, finish;
  bool streamA;  // A's rows come from memory: prefetch the next tile's rows along the k loop
  bool streamB;  // B's panel comes from memory (a packed constant's, first read): prefetch it ahead
  const float* bias;
  const float* rowBias;
  const float* residual;
  float lo, hi;
  // Lines of the constant B panel the next tiles read, one line per step of k prefetched into L2 (null: none).
  const float* nextPanel = nullptr;
};

// The TileOut of the rows x cols tile at C[i, j]; when `finish`, e's parts offset to it.
inline TileOut tileAt(float* C, int64_t ldc, int64_t i, int64_t j, int64_t rows, int64_t cols, float alpha, float beta,
                      bool first, const GemmEpilogue* e, bool finish) {
  auto at = [&](const float* part, int64_t offset) { return finish && part ? part + offset : nullptr; };
  return {C + i * ldc + j, ldc, rows, cols, alpha, beta, first, finish, false, false, at(e ? e->bias : nullptr, j),
          at(e ? e->rowBias : nullptr, i), at(e ? e->residual : nullptr, i * ldc + j), finish ? e->lo : 0.f,
          finish ? e->hi : 0.f};
}

template <typename V, int MR, int NV>
struct Tile {
  static constexpr int W = int(sizeof(V) / sizeof(float));
  static constexpr int NR = W * NV;

  // The first n lanes from p (the rest zero), and back: masked where the instruction set has masks. GEMMs
  // 24, 40 or 72 wide end every row in a partial vector: their 1x1 convs took up to 1.14x the time with a
  // lane-by-lane copy than with a memcpy, 0.72-0.83x with masks.
  static inline __attribute__((always_inline)) V loadn(const float* p, int64_t n) {
    if (n == W) return loadu<V>(p);
#ifdef __AVX512F__
    if constexpr (W == 16) return (V)_mm512_maskz_loadu_ps(__mmask16((1u << n) - 1), p);
#endif
#ifdef __AVX2__
    if constexpr (W == 8) return (V)_mm256_maskload_ps(p, laneMask(n));
#endif
    V v{};
    std::memcpy(&v, p, size_t(n) * sizeof(float));
    return v;
  }
  static inline __attribute__((always_inline)) void storen(float* p, V v, int64_t n) {
    if (n == W) return storeu(p, v);
#ifdef __AVX512F__
    if constexpr (W == 16) return _mm512_mask_storeu_ps(p, __mmask16((1u << n) - 1), (__m512)v);
#endif
#ifdef __AVX2__
    if constexpr (W == 8) return _mm256_maskstore_ps(p, laneMask(n), (__m256)v);
#endif
    std::memcpy(p, &v, size_t(n) * sizeof(float));
  }
#ifdef __AVX2__
  // Lanes [0, n) set.
  static inline __attribute__((always_inline)) __m256i laneMask(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
#endif

  // Row r's n (<= W) columns from col at c: v + (first ? beta * c : c); beta == 0 never reads c (NaNs there
  // do not propagate). Then, when o.finish, the in-tile epilogue.
  static inline __attribute__((always_inline)) void update(float* c, V v, const TileOut& o, int64_t r, int64_t col,
                                                           int64_t n) {
    if (!o.first)
      v += loadn(c, n);
    else if (o.beta != 0.f)
      v += o.beta * loadn(c, n);
    if (o.finish) {
      if (o.bias) v += loadn(o.bias + col, n);
      if (o.rowBias) v += o.rowBias[r];
      if (o.residual) v += loadn(o.residual + r * o.ldc + col, n);
      v = v < o.lo ? o.lo + V{} : v;  // NaN stays NaN, as std::min(std::max(v, lo), hi)
      v = v > o.hi ? o.hi + V{} : v;
    }
    storen(c, v, n);
  }

  // The prefetches of step k of a tile's k loop. A constant's packed B panel is first read by a column's first
  // tile (out.streamB), from memory when the weights outgrow the caches (a transformer's 768 x 3072 is 9.4 MB);
  // the hardware's prefetchers restart at every 4 KB page. Prefetched 16 steps of k ahead, a driver with its
  // caches flushed ran ConvNeXt's MLP GEMMs 49 x 3072 x 768 in 0.84x the time, 784 x 768 x 192 and
  // 196 x 1536 x 384 in 0.90x; warm ones unchanged. Then a line of the next tiles' panel (out.nextPanel).
  template <int CV>
  static inline __attribute__((always_inline)) void prefetchPanels(const float* bp, int64_t k, const TileOut& out) {
    if (out.streamB)
#pragma GCC unroll 4
      for (int j = 0; j < CV; ++j) __builtin_prefetch(bp + (k + 16) * NR + j * W);
    if (out.nextPanel) __builtin_prefetch(out.nextPanel + k * 16, 0, 2);
  }

  // Calls loop(std::true_type) when the tile's k loop prefetches panels (prefetchPanels), else
  // loop(std::false_type): the loop without them then keeps neither the flag nor the panel pointer in registers,
  // which a 12-row tile needs for its rows read through a table (they were moved in from vector registers on
  // the FMA's port, 5 moves to 24 FMAs a step).
  template <typename Loop>
  static inline __attribute__((always_inline)) void withPanelPrefetches(const TileOut& out, Loop loop) {
    if (out.streamB || out.nextPanel)
      loop(std::true_type{});
    else
      loop(std::false_type{});
  }

  template <int R, int CV>
  static inline __attribute__((always_inline)) void zero(V (&acc)[R][CV]) {
#pragma GCC unroll 32
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int j = 0; j < CV; ++j) acc[r][j] = V{};
  }

  // Step k of a tile's k loop: acc[r] += aOfRow(r) * bp[k][0..CV * W) for each of the R rows, after the step's
  // prefetches. Shared by the k loops over an A packed or read in place (accumulate) and through a table
  // (accumulateIndirect).
  template <int R, int CV, bool Prefetch = true, typename ARow>
  static inline __attribute__((always_inline)) void multiplyStep(V (&acc)[R][CV], const float* __restrict bp,
                                                                 int64_t k, const TileOut& out, ARow aOfRow) {
    if constexpr (Prefetch) prefetchPanels<CV>(bp, k, out);
    V b[CV];
#pragma GCC unroll 4
    for (int j = 0; j < CV; ++j) b[j] = loadu<V>(bp + k * NR + j * W);
#pragma GCC unroll 32
    for (int r = 0; r < R; ++r) {
      const float a = aOfRow(r);
#pragma GCC unroll 4
      for (int j = 0; j < CV; ++j) acc[r][j] += a * b[j];
    }
  }

  // acc = sum_k A[0..MR)[k] (x) bp[k][0..NR), stored as o says.
  // A is a packed panel (ap[k * MR + r]) when ldaRows is 0, else MR whole rows of
  // op(A) read in place (ap[r * ldaRows + k]).
  // A tile of fewer rows (a GEMV, the last rows of a GEMM) accumulates only
  // as many as it has, rounded up to 1, 2, 4 or 8: computing all MR would
  // multiply a GEMV's work by MR.
  static void micro(int64_t kc, const float* __restrict ap, int64_t ldaRows, const float* __restrict bp,
                    const TileOut& o) {
    const int64_t r = rowsRead(o.rows);
    if (r == MR) return rowsOf<MR>(kc, ap, ldaRows, bp, o);
    if (r == 1) return rowsOf<1>(kc, ap, ldaRows, bp, o);
    if (r == 2) return rowsOf<2>(kc, ap, ldaRows, bp, o);
    if (r == 4) return rowsOf<std::min(4, MR)>(kc, ap, ldaRows, bp, o);
    rowsOf<std::min(8, MR)>(kc, ap, ldaRows, bp, o);
  }

  // The rows of A a tile of `rows` rows reads (and accumulates): 1, 2, 4, 8 or MR.
  static constexpr int64_t rowsRead(int64_t rows) {
    return rows >= MR ? MR : rows <= 2 ? rows : rows <= 4 ? std::min(4, MR) : rows <= 8 ? std::min(8, MR) : MR;
  }

  // A panel with at most one vector of columns (the last panel of N = 80, 112, 144: a mobile net's 1x1
  // convolutions) computes one vector instead of NV, the rest being zero padding.
  template <int R>
  static void rowsOf(int64_t kc, const float* __restrict ap, int64_t ldaRows, const float* __restrict bp,
                     const TileOut& o) {
    const bool oneVector = NV > 1 && o.cols <= W;
    if (ldaRows == 0 && oneVector)
      accumulate<true, R, 1>(kc, ap, MR, bp, o);
    else if (ldaRows == 0)
      accumulate<true, R, NV>(kc, ap, MR, bp, o);
    else if (oneVector)
      accumulate<false, R, 1>(kc, ap, ldaRows, bp, o);
    else
      accumulate<false, R, NV>(kc, ap, ldaRows, bp, o);
  }

  // R rows and CV vectors of the tile (R <= MR, CV <= NV); a packed A panel keeps its MR-row stride, a B
  // panel its NR-wide rows.
  template <bool Packed, int R, int CV>
  static inline __attribute__((always_inline)) void accumulate(int64_t kc, const float* __restrict ap, int64_t lda,
                                                               const float* __restrict bp, const TileOut& out) {
    V acc[R][CV];
    zero(acc);
    // Prefetches the next tile's rows of A read in place (the hardware's prefetchers see a tile's R rows as R
    // short streams) and this tile's C, written after the k loop. A model's 1x1 convs over activations of
    // megabytes find neither in cache: a driver with its caches flushed ran MnasNet's 16 -> 48 at 112x112
    // (8 images) in 0.83x the time, 64 -> 128 at 56x56 in 0.90x; deep GEMMs (K 192-1152) unchanged.
    // When A streams from memory (out.streamA), the rest of the next tile's rows follow, a cache line of each
    // row every 16 steps of k: a flushed driver ran ResNet-50's 256 -> 64 at 56x56 in 0.71-0.77x the time,
    // MnasNet's 24 -> 144 in 0.62-0.69x; the model's 1x1 convs took 0.88-0.97x.
    auto prefetchNextRows = [&](int64_t k) __attribute__((always_inline)) {
#pragma GCC unroll 32
      for (int r = 0; r < R; ++r) __builtin_prefetch(ap + (R + r) * lda + k);
    };
    if constexpr (!Packed) prefetchNextRows(0);
#pragma GCC unroll 32
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int j = 0; j < CV; ++j) __builtin_prefetch(out.C + r * out.ldc + j * W, 1);
    int64_t k = 0;
    if constexpr (!Packed && CV == 1) {
      // Rows read in place take a pointer each: more than the free registers (24 in a one-vector tile), so a
      // k loop of one step reloaded most of them from the stack once per FMA. Four steps per reload.
      for (; k + 4 <= kc; k += 4) {
        if (out.streamA && k % 16 == 0) prefetchNextRows(k + 16);
        for (int u = 0; u < 4; ++u) prefetchPanels<CV>(bp, k + u, out);
        V b[4];
#pragma GCC unroll 4
        for (int u = 0; u < 4; ++u) b[u] = loadu<V>(bp + (k + u) * NR);
#pragma GCC unroll 32
        for (int r = 0; r < R; ++r) {
          const float* a = ap + r * lda + k;
#pragma GCC unroll 4
          for (int u = 0; u < 4; ++u) acc[r][0] += a[u] * b[u];
        }
      }
    }
    withPanelPrefetches(out, [&](auto prefetch) __attribute__((always_inline)) {
      auto step = [&](int64_t k) __attribute__((always_inline)) {
        multiplyStep<R, CV, decltype(prefetch)::value>(acc, bp, k, out, [&](int r) __attribute__((always_inline)) {
          return Packed ? ap[k * lda + r] : ap[r * lda + k];
        });
      };
      if (!Packed && out.streamA)
        for (; k + 16 <= kc; k += 16) {
          prefetchNextRows(k + 16);
          for (int64_t u = 0; u < 16; ++u) step(k + u);
        }
      for (; k < kc; ++k) step(k);
    });
    store<R, CV>(acc, out);
  }

  // acc = sum_k A[i + r][k0 + k] (x) bp[k][0..NR) for the MR rows of A at row i read through the table `a`, a run
  // of window cell at a time (each run's MR row pointers taken once), stored as o says.
  template <int CV>
  static inline __attribute__((always_inline)) void accumulateIndirect(int64_t kc, int64_t k0, const GemmIndirectA& a,
                                                                       int64_t i, const float* __restrict bp,
                                                                       const TileOut& out) {
    V acc[MR][CV];
    zero(acc);
    for (int64_t k = 0; k < kc;) {
      const int64_t t = (k0 + k) / a.cellDepth, c = k0 + k - t * a.cellDepth;
      const int64_t* offsets = a.offsets + i * a.cells;
      const float* rows[MR];
      bool padding = true;
#pragma GCC unroll 32
      for (int r = 0; r < MR; ++r) {
        const int64_t offset = offsets[r * a.cells + t];
        rows[r] = (offset >= 0 ? a.base + offset : a.zeros) + c;
        padding &= offset < 0;
      }
      // A window cell that lies in the padding for every row of the tile adds nothing: its steps are skipped (the
      // top and bottom rows of a 7x7 image's 3x3 conv; most cells of DeepLab's dilated convs over small images).
      if (padding) {
        k += std::min(kc - k, a.cellDepth - c);
        continue;
      }
      // The cells after t whose runs continue every row's run in memory join it (a window row inside the image:
      // S cells of C channels side by side), so that a conv over few channels does not take its row pointers
      // every C steps. With this and the partial tiles packed without a division per element (below), ResNet's
      // 3x3 convs went from 0.89-0.99x to 0.86-0.96x the time of im2col + SGEMM, DenseNet's 14x14x128 -> 32
      // from 0.86x to 0.72-0.76x (a driver, interleaved; the two changes were not timed apart).
      int64_t run = std::min(kc - k, a.cellDepth - c);
      for (int64_t next = t + 1; k + run < kc; ++next) {
        bool continues = true;
#pragma GCC unroll 32
        for (int r = 0; r < MR; ++r) {
          const int64_t before = offsets[r * a.cells + next - 1];
          continues &= before >= 0 && offsets[r * a.cells + next] == before + a.cellDepth;
        }
        if (!continues) break;
        run += std::min(a.cellDepth, kc - k - run);
      }
      withPanelPrefetches(out, [&](auto prefetch) __attribute__((always_inline)) {
        for (int64_t u = 0; u < run; ++u)
          multiplyStep<MR, CV, decltype(prefetch)::value>(acc, bp, k + u, out,
                                                          [&](int r) __attribute__((always_inline)) { return rows[r][u]; });
      });
      k += run;
    }
    store<MR, CV>(acc, out);
  }

  // A full tile of rows [i, i + MR) of an A read through `a` (accumulateIndirect), one vector wide where the
  // panel holds no more.
  static void microIndirect(int64_t kc, int64_t k0, const GemmIndirectA& a, int64_t i, const float* __restrict bp,
                            const TileOut& o) {
    if (NV > 1 && o.cols <= W) return accumulateIndirect<1>(kc, k0, a, i, bp, o);
    accumulateIndirect<NV>(kc, k0, a, i, bp, o);
  }

  // Stores the R x CV accumulators as o says.
  template <int R, int CV>
  static inline __attribute__((always_inline)) void store(V (&acc)[R][CV], const TileOut& out) {
    // Stores through a copy: a float store through C may not change it.
    const TileOut o = out;
    if (o.rows == R && o.cols == CV * W) {
#pragma GCC unroll 32
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int j = 0; j < CV; ++j) update(o.C + r * o.ldc + j * W, o.alpha * acc[r][j], o, r, j * W, W);
      return;
    }
    // A partial tile (the edges of C; every tile of a GEMM narrower than NR): whole vectors where they fit,
    // then the last partial one.
#pragma GCC unroll 32
    for (int r = 0; r < R; ++r) {
      if (r >= o.rows) break;
#pragma GCC unroll 4
      for (int j = 0; j < CV; ++j) {
        const int64_t c0 = j * W;
        if (c0 >= o.cols) break;
        update(o.C + r * o.ldc + c0, o.alpha * acc[r][j], o, r, c0, std::min<int64_t>(W, o.cols - c0));
      }
    }
  }
};

// Cache blocks: an MC x KC block of A (L2) against KC x NR micro-panels of B
// (L1); NC bounds the packed B block.
// KC keeps a B panel, read again by every row tile of the block, within 32 KB of L1 (at least 128 deep, at
// most 384): at 384 the 6 x 64 tile's panel was 96 KB and came from L2 for every tile. A driver on two
// threads (interleaved rounds) ran ResNet's im2col GEMMs in 0.82-0.98x the time with 128-deep panels, ViT's
// 196 x 3072 x 768 in 0.96x; 16-wide panels, 24 KB at 384, keep their depth.
template <int MR, int NR>
struct Blocks {
  static constexpr int64_t KC = std::clamp(32 * 1024 / (NR * int(sizeof(float))), 128, 384), MC = MR * 16,
                           NC = NR * 16;
  // The K blocks of a depth K: as few as KC allows, of equal depth. Blocks of KC and the rest left RegNet's
  // 400 -> 400 convs a second pass over C of 16 steps of k (a driver ran 392 x 400 x 400 in 0.89-0.95x the
  // time with 200 + 200).
  static constexpr int64_t kStep(int64_t K) { return (K + (K + KC - 1) / KC - 1) / ((K + KC - 1) / KC); }
  // The column blocks of a width N: as few as NC allows, as even as whole NR panels make them. Blocks of NC and
  // the rest split 1152 columns (a mobile net's 7x7 expansions) into 1024 + 128, and tasks of such unequal
  // column blocks left one thread idle at the end.
  static constexpr int64_t nStep(int64_t N) {
    const int64_t blocks = (N + NC - 1) / NC, perBlock = (N + blocks - 1) / blocks;
    return (perBlock + NR - 1) / NR * NR;
  }
};

// Packs op(B)[k0 .. k0+kc, j0 .. j0+nc] into NR-wide panels: panel q holds
// rows k of NR consecutive columns, zero-padded past nc.
template <int64_t NR>
void packB(bool transB, const float* B, int64_t ldb, int64_t k0, int64_t kc, int64_t j0, int64_t nc, float* bp) {
  int64_t nPanels = (nc + NR - 1) / NR;
  for (int64_t q = 0; q < nPanels; ++q) {
    float* dst = bp + q * kc * NR;
    int64_t cols = std::min(NR, nc - q * NR);
    for (int64_t k = 0; k < kc; ++k) {
      float* d = dst + k * NR;
      if (!transB) {
        std::memcpy(d, B + (k0 + k) * ldb + j0 + q * NR, size_t(cols) * sizeof(float));
      } else {
        for (int64_t j = 0; j < cols; ++j) d[j] = B[(j0 + q * NR + j) * ldb + k0 + k];
      }
      for (int64_t j = cols; j < NR; ++j) d[j] = 0.f;
    }
  }
}

template <typename V, int MR, int NV>
void sgemmBlocked(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                  const GemmEpilogue* epilogue, int threads, const GemmPanelSource* source,
                  const GemmIndirectA* indirect) {
  using T = Tile<V, MR, NV>;
  constexpr int64_t NR = T::NR, KC = Blocks<MR, NR>::KC, MC = Blocks<MR, NR>::MC, NC = Blocks<MR, NR>::NC;
  if (M <= 0 || N <= 0) return;
  const bool inTile = epilogue && epilogue->inTile();
  // A read in place that outgrows half an L2 comes from memory (an im2col band, made just before, did not:
  // prefetching it too made DenseNet's 3x3 convs 1.2x slower; an indirect A, a conv's input read once per
  // window cell, is not prefetched either).
  const bool streamA = !transA && !indirect && M * lda * int64_t(sizeof(float)) > (int64_t(1) << 20);
  const bool streamConstB = !source && K * N * int64_t(sizeof(float)) > (int64_t(1) << 20);
  if (K <= 0) {
    // No products: C = beta * C, then the epilogue.
    const TileOut o = tileAt(C, ldc, 0, 0, M, N, 1.f, beta, true, epilogue, inTile);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) T::update(C + i * ldc + j, V{}, o, i, j, 1);
    if (epilogue && epilogue->fn) epilogue->fn(epilogue->ctx, C, ldc, 0, 0, M, N);
    return;
  }
  const int64_t kStep = Blocks<MR, NR>::kStep(K);
  const int64_t nStep = Blocks<MR, NR>::nStep(N);
  int64_t nBlocks = (N + nStep - 1) / nStep, kBlocks = (K + kStep - 1) / kStep;
  // Threads only pay off past ~1 MFLOP, or when B is large enough to come from memory (a classifier's GEMV,
  // 1 x 1000 x 512: its 2 MB of weights streamed on one core at the pace of one core's loads).
  int nt = threads > 0 ? threads : omp_get_max_threads();
  if (M * N * K < (int64_t(1) << 19) && K * N * int64_t(sizeof(float)) <= (int64_t(1) << 20)) nt = 1;
  // Tasks: (row block, column block, chunk of the column block's panels).
  // Row blocks are MC rows, evened out. Until every thread has about four
  // tasks (a 7x7 conv has M = 49, a ViT GEMM 197 rows), split further: first
  // the operand whose panels then get reused more -- column chunks when B is
  // the larger operand (N > M: each B panel is read once for all rows), row
  // blocks of whole register tiles otherwise -- then the other.
  const int64_t panelsPerBlock = std::min(nStep, N) / NR + (std::min(nStep, N) % NR != 0);
  auto ceilDiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  int64_t mc0 = ceilDiv(ceilDiv(M, ceilDiv(M, MC)), MR) * MR, nSplit = 1;
  auto tasksOf = [&] { return ceilDiv(M, mc0) * nBlocks * nSplit; };
  auto splitColumns = [&] {
    while (nSplit < panelsPerBlock && tasksOf() < 4 * int64_t(nt)) ++nSplit;
  };
  auto splitRows = [&] {
    while (mc0 > MR && tasksOf() < 4 * int64_t(nt)) mc0 = ceilDiv(mc0 / 2, MR) * MR;
  };
  if (N > M)
    splitColumns(), splitRows();
  else
    splitRows(), splitColumns();
  const int64_t mBlocks = ceilDiv(M, mc0);
  int64_t tasks = mBlocks * nBlocks * nSplit;
  if (tasks < 2) nt = 1;
  // A constant B is packed once, all (column block, K block) panels in the order used below.
  PackedKey key{B, transB, K, N, ldb, MR * 1000000 + NR * 1000 + KC};
  using Bk = Blocks<MR, T::NR>;  // named through the type: the lambda below captures nothing
  auto packConstant = [](const PackedKey& k, float* out) {
    const int64_t step = Bk::kStep(k.K), kBlocks = (k.K + step - 1) / step;
    const int64_t nStep = Bk::nStep(k.N);
    for (int64_t jb = 0; jb * nStep < k.N; ++jb)
      for (int64_t k0 = 0; k0 < k.K; k0 += step)
        packB<T::NR>(k.transB, k.B, k.ldb, k0, std::min<int64_t>(step, k.K - k0), jb * nStep,
                     std::min<int64_t>(nStep, k.N - jb * nStep), out + (jb * kBlocks + k0 / step) * Bk::KC * Bk::NC);
  };
  const float* constB = source ? nullptr : constantPanels(key, size_t(nBlocks * kBlocks * KC * NC), packConstant);
  int64_t blockFloats = KC * NC;  // apart in constB: the packed (column block, K block)s
  // A B that is not a registered constant (an NCHW conv's im2col from a source, an activation times an
  // activation), which each row block would otherwise pack again, is packed once, whole, in the constant's
  // order, up to 64 MB: ResNet-18's last 3x3 convs ran 2x slower gathering their 7x7 images once per row
  // block, and 1024^3 with B an input 1.2x. Its blocks are as large as their panels (at KC x NC, the 49 columns
  // of a 7x7 image took 9.4 MB for 1.2 MB of panels), in the calling thread's scratch.
  if (!constB && mBlocks > 1 && nBlocks * kBlocks * kStep * panelsPerBlock * NR <= (int64_t(1) << 24)) {
    blockFloats = kStep * panelsPerBlock * NR;
    float* out = threadScratch(ScratchSlot::GemmPanels, size_t(nBlocks * kBlocks * blockFloats));
    affineFor(nBlocks * kBlocks, nt, [&](int64_t t) {
      const int64_t jb = t / kBlocks, k0 = t % kBlocks * kStep, kc = std::min(kStep, K - k0);
      const int64_t j0 = jb * nStep, nc = std::min(nStep, N - j0);
      if (source)
        source->pack(source->ctx, k0, kc, j0, nc, NR, out + t * blockFloats);
      else
        packB<NR>(transB, B, ldb, k0, kc, j0, nc, out + t * blockFloats);
    });
    constB = out;
  }
  // Row blocks outermost: each thread's share of the tasks is a band of C's rows (output pixels in NHWC), the
  // band the kernels before and after it split alike (Parallel.h).
  affineFor(tasks, nt, [&](int64_t t) {
    int64_t ib = t / (nBlocks * nSplit), js = t % nSplit, jb = t / nSplit % nBlocks;
    int64_t i0 = ib * mc0, mc = std::min(mc0, M - i0), jBlock = jb * nStep, ncBlock = std::min(nStep, N - jBlock);
    // This task's panels of the column block, [q0, q0 + nPanels): the block's panels dealt as evenly as they
    // divide. Chunks of ceil(panels / splits) left the last splits short or empty (9 panels in 8 splits went
    // 2,2,2,2,1,0,0,0: one thread's share held 8 panels, the other's 1).
    int64_t blockPanels = ceilDiv(ncBlock, NR), q0 = js * blockPanels / nSplit;
    int64_t nPanels = (js + 1) * blockPanels / nSplit - q0;
    if (nPanels <= 0) return;
    int64_t j0 = jBlock + q0 * NR, nc = std::min(nPanels * NR, N - j0);
    // A non-transposed A is read in place, whole rows of it, by the microkernel: packing it (a scalar
    // transpose into MR-row panels) was meant to pay off when each panel meets many B panels, but on an
    // AVX2 EPYC it cost 6-25% on every conv GEMM shape measured (1x1 expansions with K = 16-160 most) and
    // saved at most 2.5% on one. Only a transposed A, strided along K, and a block's last panel of fewer
    // than MR rows (zero-padded) are packed.
    const bool inPlaceA = !transA;
    thread_local AlignedFloats apBuf, bpBuf;
    if (!apBuf) {
      apBuf = alignedFloats(size_t(MC * KC));
      bpBuf = alignedFloats(size_t(KC * NC));
    }
    float* ap = apBuf.get();
    float* bp = bpBuf.get();
    int64_t mPanels = (mc + MR - 1) / MR;
    for (int64_t k0 = 0; k0 < K; k0 += kStep) {
      int64_t kc = std::min(kStep, K - k0);
      // Pack op(B) columns into NR-wide panels (or take the constant's packed copy, or have the source make
      // them) and op(A) rows into MR-tall panels, zero-padded.
      const float* bpk = bp;
      if (constB)
        bpk = constB + (jb * kBlocks + k0 / kStep) * blockFloats + q0 * kc * NR;
      else if (source)
        source->pack(source->ctx, k0, kc, j0, nc, NR, bp);
      else
        packB<NR>(transB, B, ldb, k0, kc, j0, nc, bp);
      for (int64_t p = 0; p < mPanels; ++p) {
        float* dst = ap + p * kc * MR;
        int64_t rows = std::min<int64_t>(MR, mc - p * MR);
        if (inPlaceA && rows == MR) continue;  // read in place by the microkernel
        if (indirect) {
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t* offsets = indirect->offsets + (i0 + p * MR + r) * indirect->cells;
            for (int64_t k = 0, t = k0 / indirect->cellDepth, c = k0 - t * indirect->cellDepth; k < kc; ++k) {
              dst[k * MR + r] = offsets[t] >= 0 ? indirect->base[offsets[t] + c] : 0.f;
              if (++c == indirect->cellDepth) c = 0, ++t;
            }
          }
        } else if (!transA) {
          for (int64_t r = 0; r < rows; ++r) {
            const float* src = A + (i0 + p * MR + r) * lda + k0;
            for (int64_t k = 0; k < kc; ++k) dst[k * MR + r] = src[k];
          }
        } else {
          for (int64_t k = 0; k < kc; ++k) std::memcpy(dst + k * MR, A + (k0 + k) * lda + i0 + p * MR, size_t(rows) * sizeof(float));
        }
        for (int64_t r = rows; r < T::rowsRead(rows); ++r)  // rows past these are never read
          for (int64_t k = 0; k < kc; ++k) dst[k * MR + r] = 0.f;
      }
      const bool finish = inTile && k0 + kc == K;
      // The constant panel after panel q (the next one of this K block, else this task's first of the next),
      // prefetched by the full tiles before it, a line per step of k each (`TileOut::nextPanel`): a panel read
      // only by its column's first tile came from memory at that tile's pace, and the other tiles left the
      // memory idle (ResNet-18's 49 x 512 x 4608 ran 1.5x its warm time with the caches flushed). Only for
      // weights that outgrow half an L2: smaller ones stay in the caches from run to run.
      const int64_t kcNext = std::min(kStep, K - k0 - kc);
      auto nextPanelOf = [&](int64_t q) -> const float* {
        if (!constB || !streamConstB) return nullptr;
        if (q + 1 < nPanels) return bpk + (q + 1) * kc * NR;
        if (kcNext <= 0) return nullptr;
        return constB + (jb * kBlocks + k0 / kStep + 1) * blockFloats + q0 * kcNext * NR;
      };
      for (int64_t q = 0; q < nPanels; ++q) {
        const float* nextPanel = nextPanelOf(q);
        const int64_t nextFloats = q + 1 < nPanels ? kc * NR : kcNext * NR;
        for (int64_t p = 0; p < mPanels; ++p) {
          int64_t rows = std::min<int64_t>(MR, mc - p * MR), i = i0 + p * MR, j = j0 + q * NR;
          bool inPlace = inPlaceA && rows == MR;
          TileOut o = tileAt(C, ldc, i, j, rows, std::min(NR, nc - q * NR), alpha, beta, k0 == 0, epilogue, finish);
          o.streamA = streamA && q == 0;  // later panels find the row block in cache (prefetching: 1.1x slower)
          o.streamB = constB && p == 0;   // the panel's later tiles find it in cache
          if (nextPanel && rows == MR && p * kc * 16 < nextFloats) o.nextPanel = nextPanel + p * kc * 16;
          if (inPlace && indirect)
            T::microIndirect(kc, k0, *indirect, i, bpk + q * kc * NR, o);
          else
            T::micro(kc, inPlace ? A + i * lda + k0 : ap + p * kc * MR, inPlace ? lda : 0, bpk + q * kc * NR, o);
        }
      }
    }
    if (epilogue && epilogue->fn) epilogue->fn(epilogue->ctx, C, ldc, i0, j0, mc, nc);
  });
}

}  // namespace
}  // namespace friction::ukernels
