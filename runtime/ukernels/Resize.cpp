#include "runtime/ukernels/Resize.h"

#include <omp.h>

#include <cstring>

namespace friction::ukernels {
namespace {

constexpr int64_t kParallelElements = int64_t(1) << 16;

// A tap over the axes before the last interpolated one: its input offset and weight.
struct Corner {
  int64_t offset;
  float weight;
};

}  // namespace

bool ResizeAxis::identity() const {
  if (in != out || taps != 1) return false;
  for (int64_t o = 0; o < out; ++o)
    if (index[size_t(o)] != o || weight[size_t(o)] != 1.f) return false;
  return true;
}

void resize(const float* x, const std::vector<ResizeAxis>& axes, float* y) {
  const size_t rank = axes.size();
  // last: the last interpolated axis; the axes after it are `run` contiguous floats on both sides.
  size_t last = rank;
  for (size_t d = rank; d-- > 0;)
    if (!axes[d].identity()) {
      last = d;
      break;
    }
  int64_t total = 1;
  for (const ResizeAxis& a : axes) total *= a.out;
  if (last == rank) {
    std::memcpy(y, x, size_t(total) * sizeof(float));
    return;
  }
  std::vector<int64_t> stride(rank, 1);  // the input's
  for (size_t d = rank - 1; d-- > 0;) stride[d] = stride[d + 1] * axes[d + 1].in;
  int64_t run = 1, rows = 1;
  for (size_t d = last + 1; d < rank; ++d) run *= axes[d].in;
  for (size_t d = 0; d < last; ++d) rows *= axes[d].out;
  const ResizeAxis& inner = axes[last];
  const int64_t innerStride = stride[last];
#pragma omp parallel if (total > kParallelElements)
  {
    std::vector<Corner> corners, next;
    std::vector<float> blend(size_t(run == 1 ? inner.in : 0));
#pragma omp for schedule(static)
    for (int64_t row = 0; row < rows; ++row) {
      // The row's corners: the product of the taps of the axes before `last` at this row's positions.
      corners.assign(1, Corner{0, 1.f});
      for (int64_t d = int64_t(last) - 1, rest = row; d >= 0; --d) {
        const ResizeAxis& a = axes[size_t(d)];
        const int64_t o = rest % a.out;
        rest /= a.out;
        next.clear();
        for (const Corner& c : corners)
          for (int64_t t = 0; t < a.taps; ++t) {
            const float w = a.weight[size_t(o * a.taps + t)];
            if (w != 0.f) next.push_back({c.offset + a.index[size_t(o * a.taps + t)] * stride[size_t(d)], c.weight * w});
          }
        corners.swap(next);
      }
      float* out = y + row * inner.out * run;
      if (run == 1) {
        // The innermost axis interpolated: the corners' input rows blended into one (vectorized), then each output
        // weighs its taps of that row: 2 loads an output for linear, where tap by corner took 4 and 4 products.
        const float* in = x + corners[0].offset;
        const float* b = in;  // one corner of weight 1 (a nearest or kept row): the input row itself
        if (corners.size() > 1 || corners[0].weight != 1.f) {
          b = blend.data();
          const float w0 = corners[0].weight;
#pragma omp simd
          for (int64_t i = 0; i < inner.in; ++i) blend[size_t(i)] = w0 * in[i];
          for (size_t c = 1; c < corners.size(); ++c) {
            const float w = corners[c].weight;
            const float* other = x + corners[c].offset;
#pragma omp simd
            for (int64_t i = 0; i < inner.in; ++i) blend[size_t(i)] += w * other[i];
          }
        }
        const int64_t* index = inner.index.data();
        const float* weight = inner.weight.data();
        if (inner.taps == 1) {
          for (int64_t o = 0; o < inner.out; ++o) out[o] = b[index[o]];
        } else if (inner.taps == 2) {
          for (int64_t o = 0; o < inner.out; ++o)
            out[o] = weight[2 * o] * b[index[2 * o]] + weight[2 * o + 1] * b[index[2 * o + 1]];
        } else {
          for (int64_t o = 0; o < inner.out; ++o) {
            float sum = 0.f;
            for (int64_t t = 0; t < inner.taps; ++t) sum += weight[o * inner.taps + t] * b[index[o * inner.taps + t]];
            out[o] = sum;
          }
        }
        continue;
      }
      for (int64_t o = 0; o < inner.out; ++o, out += run) {
        const int64_t* index = inner.index.data() + o * inner.taps;
        const float* weight = inner.weight.data() + o * inner.taps;
        // A weighted sum of input runs; taps of weight 0 (a nearest axis's other tap) are not read.
        bool first = true;
        for (const Corner& c : corners)
          for (int64_t t = 0; t < inner.taps; ++t) {
            const float w = c.weight * weight[t];
            if (weight[t] == 0.f) continue;
            const float* in = x + c.offset + index[t] * innerStride;
            if (first && w == 1.f) {
              std::memcpy(out, in, size_t(run) * sizeof(float));
            } else if (first) {
#pragma omp simd
              for (int64_t i = 0; i < run; ++i) out[i] = w * in[i];
            } else {
#pragma omp simd
              for (int64_t i = 0; i < run; ++i) out[i] += w * in[i];
            }
            first = false;
          }
        if (first) std::memset(out, 0, size_t(run) * sizeof(float));
      }
    }
  }
}

}  // namespace friction::ukernels
