// The arithmetic of legalize()'s ConvTranspose rewrites (Legalize.cpp), apart from the graph they build: a
// strided ConvTranspose as one Conv per output phase (the sub-pixel convolution), and constant weights
// regrouped into a Conv's.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/Graph.h"

namespace friction::codegen {

// A ConvTranspose's constant weights w [C, K / G, window...] (`windowTaps` taps) as a Conv's [K, C / G, taps...]
// of `shape`, whose flat tap j is w's flat tap sourceTap(j): the two channel dims swapped per group.
Tensor convWeightsOf(const Tensor& w, int64_t groups, int64_t windowTaps, const std::vector<int64_t>& shape,
                     const std::function<int64_t(int64_t)>& sourceTap);

// One output phase of a strided ConvTranspose: a Conv at stride 1 and dilation 1 over x, cropped first where a
// pad comes out negative.
struct PhaseConv {
  std::vector<int64_t> kernel;              // taps per spatial dim
  std::vector<int64_t> pads;                // [begin..., end...], none negative
  std::vector<int64_t> starts, ends, axes;  // x's crop (empty: x whole)
  std::vector<int64_t> cropped;             // x's shape after it
  Tensor weights;                           // [K, C / G, kernel...]
  std::string tag;                          // the phase along each dim: "_1_0"
};

struct PhasePlan {
  std::vector<int64_t> extents;  // per spatial dim, each phase's positions: ceil(result extent / stride)
  std::vector<int64_t> strides;
  std::vector<PhaseConv> convs;  // every combination of phases, dim 0's slowest
};

// Output q = i * s - p + t of a spatial dim (stride s, begin pad p, tap t, dilation 1) takes, for
// q = phi + s * m, only the taps t = t0 + s * j with t0 = (phi + p) mod s, at input i = m + c - j,
// c = (phi + p - t0) / s: a Conv at stride 1 of x with those taps flipped. Each phase computes ceil(Y / s)
// positions along the dim. nullopt where that does not apply: a dilation, weights that are not an f32
// constant, no stride above 1, or a phase no tap reaches (a window narrower than its stride).
std::optional<PhasePlan> convTransposePhases(const Node& n);

}  // namespace friction::codegen
