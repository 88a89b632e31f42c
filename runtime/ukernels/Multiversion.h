// FRICTION_MULTIVERSION on a function compiles it once per instruction set
// (AVX-512, AVX2+FMA, baseline) and picks the copy at load time (GCC's
// target_clones). Loops over arrays (`omp simd`) then run as each ISA's
// code. A vector type is not: a 64-byte one is native only in the AVX-512
// clone, and the AVX2 and baseline clones keep it on the stack (10-16 GFLOP/s
// direct convolutions on an AVX2 machine, 4x below a GEMM).
// Code whose register tiles follow the hardware's width is therefore written
// once over that width W and run through withNativeWidth, which has one copy
// per ISA and calls the one for the running machine; a block of lanes wider
// than the machine's vector is a Pack of native vectors. The SGEMM has
// per-ISA translation units instead (Sgemm.cpp).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

// Per-ISA copies on x86-64 with GCC (in every translation unit alike, so a
// template instantiated in two of them means the same code in both).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define FRICTION_X86_COPIES 1
#define FRICTION_MULTIVERSION __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define FRICTION_TARGET_AVX512 __attribute__((target("arch=x86-64-v4"), flatten))
#define FRICTION_TARGET_AVX2 __attribute__((target("arch=x86-64-v3"), flatten))
#define FRICTION_TARGET_BASELINE __attribute__((flatten))
#else
#define FRICTION_MULTIVERSION
#define FRICTION_TARGET_AVX512
#define FRICTION_TARGET_AVX2
#define FRICTION_TARGET_BASELINE
#endif

// Forces a helper of a FRICTION_MULTIVERSION function (or of a withNativeWidth
// body) inline, so it is compiled for each copy's instruction set (and vectors
// passed by value never cross a call between ISAs).
#if defined(__GNUC__)
#define FRICTION_INLINE inline __attribute__((always_inline))
#define FRICTION_LAMBDA_INLINE __attribute__((always_inline))
#else
#define FRICTION_INLINE inline
#define FRICTION_LAMBDA_INLINE
#endif

namespace friction::ukernels {

// A half-precision type a kernel's results are rounded to (a half model's op results, which widen-half computes
// in f32 and rounds by ReducePrecision), staying f32; None: no rounding.
enum class Rounding { None, F16, BF16 };

#if defined(FRICTION_X86_COPIES)
// 16 or 8 floats at p rounded to f16 and back in place by the hardware's conversions (round to nearest even).
// Functions of their own ISA, not forced inline: another copy's code may name them (Pack's branch for its
// width is never taken there) and the AVX copies inline them. The 16-lane conversions are the zero-masked
// forms with every lane set (the same instructions): GCC 12's unmasked ones merge into an undefined vector,
// which -Wmaybe-uninitialized reports at every inlined use.
__attribute__((target("avx512f"))) inline void roundToHalf16(float* p) {
  constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  constexpr __mmask16 kAll = 0xffff;
  _mm512_storeu_ps(p, _mm512_maskz_cvtph_ps(kAll, _mm512_maskz_cvtps_ph(kAll, _mm512_loadu_ps(p), kNearest)));
}
__attribute__((target("avx2,f16c"))) inline void roundToHalf8(float* p) {
  _mm256_storeu_ps(p, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(p), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
}
#endif

// W lanes of T as one GCC vector (a typedef in a struct: the attribute on a
// typedef that depends on a template parameter is lost inside a function).
template <typename T, int W>
struct Vec {
  typedef T V __attribute__((vector_size(W * sizeof(T))));
};

// e^v in each of W lanes: Cephes' expf (range reduction by ln 2, degree-6 polynomial, about 1 ulp up to 88),
// exactly 0 below -87.3 (and for -inf), e^88 up to 88.72, +inf above (where expf overflows), NaN kept.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"  // expOf and Pack inline into each ISA's copy: no vector crosses a call
template <int W>
FRICTION_INLINE typename Vec<float, W>::V expOf(typename Vec<float, W>::V v) {
  using VF = typename Vec<float, W>::V;
  using VI = typename Vec<int32_t, W>::V;
  const VF lo = VF{} - 87.33654f, hi = VF{} + 88.f, magic = VF{} + 12582912.f;  // 1.5 * 2^23: rounds to an integer
  VF c = v < lo ? lo : v;
  c = c > hi ? hi : c;
  VF t = c * 1.44269504088896341f + magic, k = t - magic;
  VI ki = (VI)t - (VI)magic;
  VF r = c - k * 0.693359375f + k * 2.12194440e-4f;
  VF p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  VF e = (p * r * r + r + 1.f) * (VF)((ki + 127) << 23);
  e = v < lo ? VF{} : e;
  e = v > 88.72284f ? VF{} + __builtin_inff() : e;
  return v != v ? v : e;
}

// GELU, x Phi(x) = x/2 erfc(-x/sqrt 2), in each of W lanes. erfc(z) for z >= 0 is t e^(P(t) - z^2) with
// t = 1/(1 + z/2) and P of degree 9 (Numerical Recipes' Chebyshev fit, relative error below 1.1e-7 in
// doubles); erfc(-z) = 2 - erfc(z). Unlike 1 + erf(x/sqrt 2), the negative side keeps its relative accuracy
// (rounding x^2/2 costs up to 1e-5 of a result far below 1e-30). +inf gives +inf, -inf NaN (as 1 + erf
// does), NaN NaN.
template <int W>
FRICTION_INLINE typename Vec<float, W>::V geluOf(typename Vec<float, W>::V x) {
  using VF = typename Vec<float, W>::V;
  const VF z = (x < 0.f ? -x : x) * 0.70710678118654752f;
  const VF t = 1.f / (1.f + 0.5f * z);
  VF p = t * 0.17087277f - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  const VF tail = t * expOf<W>(p - z * z);  // erfc(|x| / sqrt 2)
  return 0.5f * x * (x < 0.f ? tail : 2.f - tail);
}

// tanh in each of W lanes: Cephes' tanhf (an odd polynomial below |x| = 0.625, where 1 - 2 / (e^2|x| + 1)
// would cancel; that formula above it, +-1 past 44), about 2 ulp; NaN kept.
template <int W>
FRICTION_INLINE typename Vec<float, W>::V tanhOf(typename Vec<float, W>::V x) {
  using VF = typename Vec<float, W>::V;
  const VF ax = x < 0.f ? -x : x, s = x * x;
  VF p = s * -5.70498872745e-3f + 2.06390887954e-2f;
  p = p * s - 5.37397155531e-2f;
  p = p * s + 1.33314422036e-1f;
  p = p * s - 3.33332819422e-1f;
  const VF small = p * s * x + x;
  VF big = 1.f - 2.f / (expOf<W>(ax + ax) + 1.f);
  big = x < 0.f ? -big : big;
  return ax > 0.625f ? big : small;
}

// W * N floats as N vectors of W lanes; W is at most the machine's width.
template <int W, int N>
struct Pack {
  using V = typename Vec<float, W>::V;
  static constexpr int kWidth = W * N;
  V v[N];

  FRICTION_INLINE static Pack splat(float s) {
    Pack p;
    for (int i = 0; i < N; ++i) p.v[i] = V{} + s;
    return p;
  }
  // The first `lanes` floats at p, zeros above (all of them: whole vector loads).
  FRICTION_INLINE static Pack load(const float* p, int64_t lanes = kWidth) {
    Pack r;
    if (lanes == kWidth) {
      for (int i = 0; i < N; ++i) std::memcpy(&r.v[i], p + i * W, sizeof(V));
    } else {
      r = splat(0.f);
      std::memcpy(&r.v, p, size_t(lanes) * sizeof(float));
    }
    return r;
  }
  FRICTION_INLINE void store(float* p, int64_t lanes = kWidth) const {
    if (lanes == kWidth) {
      for (int i = 0; i < N; ++i) std::memcpy(p + i * W, &v[i], sizeof(V));
    } else {
      std::memcpy(p, &v, size_t(lanes) * sizeof(float));
    }
  }
  FRICTION_INLINE void multiplyAdd(float s, const Pack& w) {
    for (int i = 0; i < N; ++i) v[i] += s * w.v[i];
  }
  FRICTION_INLINE void multiplyAdd(const Pack& x, const Pack& w) {
    for (int i = 0; i < N; ++i) v[i] += x.v[i] * w.v[i];
  }
  FRICTION_INLINE void add(const Pack& o) {
    for (int i = 0; i < N; ++i) v[i] += o.v[i];
  }
  FRICTION_INLINE void max(const Pack& o) {
    for (int i = 0; i < N; ++i) v[i] = v[i] < o.v[i] ? o.v[i] : v[i];
  }
  FRICTION_INLINE void scale(float s) {
    for (int i = 0; i < N; ++i) v[i] *= s;
  }
  FRICTION_INLINE void clamp(const Pack& lo, const Pack& hi) {
    for (int i = 0; i < N; ++i) {
      v[i] = v[i] < lo.v[i] ? lo.v[i] : v[i];
      v[i] = v[i] > hi.v[i] ? hi.v[i] : v[i];
    }
  }
  // max(0, min(1, alpha v + beta)), times v when `timesSelf` (HardSigmoid, HardSwish).
  FRICTION_INLINE void hardSigmoid(float alpha, float beta, bool timesSelf) {
    for (int i = 0; i < N; ++i) {
      V s = alpha * v[i] + beta;
      s = s < V{} ? V{} : s;
      s = s > V{} + 1.f ? V{} + 1.f : s;
      v[i] = timesSelf ? v[i] * s : s;
    }
  }
  // 1 / (1 + e^-v), rounded by `gate`, times v when `timesSelf` (Sigmoid, SiLU).
  FRICTION_INLINE void sigmoid(bool timesSelf, Rounding gate = Rounding::None) {
    Pack s;
    for (int i = 0; i < N; ++i) s.v[i] = 1.f / (1.f + expOf<W>(-v[i]));
    s.round(gate);
    for (int i = 0; i < N; ++i) v[i] = timesSelf ? v[i] * s.v[i] : s.v[i];
  }
  FRICTION_INLINE void gelu() {
    for (int i = 0; i < N; ++i) v[i] = geluOf<W>(v[i]);
  }
  // Each lane rounded to the nearest f16 or bf16 value, ties to even, NaN kept (roundedTo lane by lane): the
  // mantissa's low bits dropped with a carry, f16's subnormals by adding and subtracting 0.75 (whose ulp is
  // theirs), its overflow to infinity; f16 by the hardware's conversions where the copy's ISA has them.
  FRICTION_INLINE void round(Rounding r) {
    using VU = typename Vec<uint32_t, W>::V;
    if (r == Rounding::None) return;
#if defined(FRICTION_X86_COPIES)
    // Eight and sixteen lanes run in the AVX2 and AVX-512 copies, whose ISAs convert to f16 and back in two
    // instructions.
    if constexpr (W == 8 || W == 16) {
      if (r == Rounding::F16) {
        for (int i = 0; i < N; ++i) (W == 16 ? roundToHalf16 : roundToHalf8)(reinterpret_cast<float*>(&v[i]));
        return;
      }
    }
#endif
    const bool bf16 = r == Rounding::BF16;
    const uint32_t low = bf16 ? 0xffffu : 0x1fffu, shift = bf16 ? 16 : 13;
    for (int i = 0; i < N; ++i) {
      const V x = v[i];
      VU u = (VU)x;
      u = (u + (low >> 1) + ((u >> shift) & 1u)) & ~low;
      V rounded = (V)u;
      if (!bf16) {
        const V a = x < 0.f ? -x : x;
        rounded = a < 0x1p-14f ? (x + 0.75f) - 0.75f : rounded;
        rounded = a >= 65520.f ? (x < 0.f ? V{} - __builtin_inff() : V{} + __builtin_inff()) : rounded;
      }
      v[i] = x != x ? x : rounded;
    }
  }
};
#pragma GCC diagnostic pop
// L floats on a machine whose vectors hold NW.
template <int L, int NW>
using PackOf = Pack<std::min(L, NW), L / std::min(L, NW)>;

// Floats in the running machine's widest vector register: 16 (AVX-512:
// x86-64-v4), 8 (AVX2 with FMA: x86-64-v3) or 4 (anything else, including
// non-x86 builds), at most the cap below. The SGEMM's choice of ISA too.
int nativeFloatLanes();
// The machine's own width, whatever the cap below: for choices that must not
// change while a program runs (which kernel computes a convolution decides how
// its weights are packed).
int machineFloatLanes();
// Tests run the narrower copies too: caps nativeFloatLanes() at 4, 8 or 16
// (rounded down; 0: no cap) and returns the cap it replaces.
int limitVectorLanes(int lanes);

// The copies withNativeWidth chooses from, one per instruction set; each
// inlines everything its body calls (flatten), so no helper is left compiled
// for another ISA, and is itself noinline, so that a body callAtWidth runs
// from inside a copy gets a function, and a register allocation, of its own.
template <class Body>
FRICTION_TARGET_AVX512 __attribute__((noinline)) void runWith16Lanes(const Body& body) {
  body.template operator()<16>();
}
template <class Body>
FRICTION_TARGET_AVX2 __attribute__((noinline)) void runWith8Lanes(const Body& body) {
  body.template operator()<8>();
}
template <class Body>
FRICTION_TARGET_BASELINE __attribute__((noinline)) void runWith4Lanes(const Body& body) {
  body.template operator()<4>();
}

// Inside withNativeWidth's copy for width W: runs body.template operator()<W>()
// as a function of its own, compiled for the same ISA (the copies are
// noinline), so a hot loop gets the register allocator to itself. In the
// depthwise kernel, the main tile loop sharing a function with the row's
// border pixels and remainder tiles ran 1.6x slower (spilled strides).
template <int W, class Body>
FRICTION_INLINE void callAtWidth(const Body& body) {
  static_assert(W == 4 || W == 8 || W == 16, "a width withNativeWidth runs");
  if constexpr (W == 16)
    runWith16Lanes(body);
  else if constexpr (W == 8)
    runWith8Lanes(body);
  else
    runWith4Lanes(body);
}

// Runs body.template operator()<W>() compiled for, and with, the running
// machine's vector width W = nativeFloatLanes(). The body is a generic lambda
// marked FRICTION_LAMBDA_INLINE, so each copy holds its code in that copy's ISA:
//   withNativeWidth([&]<int W>() FRICTION_LAMBDA_INLINE { kernelOf<W>(args); });
template <class Body>
FRICTION_INLINE void withNativeWidth(const Body& body) {
  switch (nativeFloatLanes()) {
    case 16: return runWith16Lanes(body);
    case 8: return runWith8Lanes(body);
    default: return runWith4Lanes(body);
  }
}

}  // namespace friction::ukernels
