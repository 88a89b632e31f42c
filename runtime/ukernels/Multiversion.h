// FRICTION_MULTIVERSION on a function compiles it once per instruction set
// (AVX-512, AVX2+FMA, baseline) and picks the copy at load time (GCC's
// target_clones). Hot loops written with 64-byte vector types then run as
// zmm, 2x ymm or 4x xmm code. The SGEMM, which needs its own register tiles
// per ISA, has per-ISA translation units instead (Sgemm.cpp).
#pragma once

#if defined(FRICTION_UKERNELS_X86) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FRICTION_MULTIVERSION __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FRICTION_MULTIVERSION
#endif

// Forces a helper of a FRICTION_MULTIVERSION function inline, so it is
// compiled for each clone's instruction set (and vectors passed by value
// never cross a call between ISAs).
#if defined(__GNUC__)
#define FRICTION_INLINE inline __attribute__((always_inline))
#else
#define FRICTION_INLINE inline
#endif
