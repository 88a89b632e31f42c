// Resize (nearest, linear, cubic interpolation) for the compiled `cpu` backend, over any rank and either layout:
// the taps of each axis are tables made at build time (ir/ops/TensorShapes.h's resizeTaps, which the
// interpreter uses too), so a run only gathers and weighs. f32; output rows spread over OpenMP threads.
#pragma once
#include <cstdint>
#include <vector>

namespace friction::ukernels {

// One axis of a Resize: output position o reads input positions index[o * taps + t] weighted weight[o * taps + t]
// for t < taps. An axis that keeps every position (taps 1, index o, weight 1) is an identity.
struct ResizeAxis {
  int64_t in = 0, out = 0, taps = 1;
  std::vector<int64_t> index;
  std::vector<float> weight;
  bool identity() const;
};

// y[o_0, ..., o_r-1] = sum over the taps t_d of each axis of prod_d weight_d[o_d, t_d] * x[index_0[o_0, t_0], ...],
// x and y dense. The trailing identity axes are one contiguous run a tap (NHWC's channels: a weighted sum of
// pixel rows); an interpolated innermost axis gathers element by element (NCHW).
void resize(const float* x, const std::vector<ResizeAxis>& axes, float* y);

}  // namespace friction::ukernels
