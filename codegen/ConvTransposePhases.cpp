#include "codegen/ConvTransposePhases.h"

#include <algorithm>

#include "ir/Shape.h"
#include "ir/ops/NnShapes.h"

namespace friction::codegen {

using Ints = std::vector<int64_t>;

Tensor convWeightsOf(const Tensor& w, int64_t groups, int64_t windowTaps, const Ints& shape,
                     const std::function<int64_t(int64_t)>& sourceTap) {
  Tensor out(DType::F32, shape);
  const int64_t kg = shape[0] / groups, cg = shape[1], taps = checkedNumel(shape) / (shape[0] * cg);
  const float* in = w.data<float>();
  float* o = out.data<float>();
  for (int64_t j = 0; j < taps; ++j) {
    const int64_t t = sourceTap(j);
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t k = 0; k < kg; ++k) o[((g * kg + k) * cg + c) * taps + j] = in[((g * cg + c) * kg + k) * windowTaps + t];
  }
  return out;
}

std::optional<PhasePlan> convTransposePhases(const Node& n) {
  const Tensor* weights = constantData(n.input(1));
  if (!weights || weights->dtype() != DType::F32) return std::nullopt;
  const Ints xs = n.input(0)->shape().staticDims(), ws = n.input(1)->shape().staticDims(), ys = n.output(0)->shape().staticDims();
  const size_t d = xs.size() - 2;
  const Window win = resolveConvTranspose(n, {xs.begin() + 2, xs.end()}, {ws.begin() + 2, ws.end()}).window;
  const int64_t G = n.attrInt("group", 1);
  struct Phase {
    int64_t t0, taps, pad, end;  // first tap, taps, the Conv's pads (negative: x cropped)
  };
  std::vector<std::vector<Phase>> phases(d);  // per dim, per phase
  PhasePlan plan;
  plan.strides = win.strides;
  for (size_t i = 0; i < d; ++i) {
    const int64_t s = win.strides[i], k = win.kernel[i], p = win.pads[i], X = xs[2 + i];
    if (win.dilations[i] != 1) return std::nullopt;
    const int64_t M = (ys[2 + i] + s - 1) / s;
    plan.extents.push_back(M);
    for (int64_t phi = 0; phi < s; ++phi) {
      const int64_t t0 = (phi + p) % s, taps = t0 < k ? (k - t0 + s - 1) / s : 0, c = (phi + p - t0) / s;
      if (taps == 0) return std::nullopt;
      const int64_t pad = taps - 1 - c;
      phases[i].push_back({t0, taps, pad, M + taps - 1 - pad - X});  // so that the Conv gives M positions
    }
  }
  if (std::all_of(win.strides.begin(), win.strides.end(), [](int64_t s) { return s == 1; })) return std::nullopt;
  const int64_t windowTaps = checkedNumel(Ints(ws.begin() + 2, ws.end()));
  Ints combo(d, 0);
  for (bool more = true; more;) {
    PhaseConv conv;
    conv.pads.assign(2 * d, 0);
    conv.cropped = xs;
    for (size_t i = 0; i < d; ++i) {
      const Phase& ph = phases[i][size_t(combo[i])];
      conv.kernel.push_back(ph.taps);
      conv.pads[i] = std::max<int64_t>(0, ph.pad), conv.pads[d + i] = std::max<int64_t>(0, ph.end);
      if (ph.pad < 0 || ph.end < 0) {
        conv.starts.push_back(std::max<int64_t>(0, -ph.pad));
        conv.ends.push_back(xs[2 + i] - std::max<int64_t>(0, -ph.end));
        conv.axes.push_back(int64_t(2 + i));
        conv.cropped[2 + i] = conv.ends.back() - conv.starts.back();
      }
      conv.tag += "_" + std::to_string(combo[i]);
    }
    Ints shape = {ys[1], xs[1] / G};
    shape.insert(shape.end(), conv.kernel.begin(), conv.kernel.end());
    // Tap j' of a dim is t0 + s * (taps - 1 - j'): the phase's taps, flipped.
    conv.weights = convWeightsOf(*weights, G, windowTaps, shape, [&](int64_t j) {
      int64_t t = 0, after = checkedNumel(conv.kernel);
      for (size_t i = 0; i < d; ++i) {
        const Phase& ph = phases[i][size_t(combo[i])];
        after /= conv.kernel[i];
        t = t * win.kernel[i] + ph.t0 + win.strides[i] * (ph.taps - 1 - j / after % conv.kernel[i]);
      }
      return t;
    });
    plan.convs.push_back(std::move(conv));
    more = false;
    for (size_t i = d; i-- > 0 && !more;) {
      more = ++combo[i] < win.strides[i];
      if (!more) combo[i] = 0;
    }
  }
  return plan;
}

}  // namespace friction::codegen
