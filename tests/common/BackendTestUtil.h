// Helpers the backend tests share (cpu, onednn, AOT artifacts): seeded random
// tensors, an element-wise comparison against a reference, and reading a
// kernel's module after a codegen stage.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "codegen/mlir/Codegen.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Tensor.h"

namespace friction::test {

inline Tensor randomTensor(const std::vector<int64_t>& shape, uint64_t seed, float lo = -2, float hi = 2) {
  Tensor t(DType::F32, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// |got - want| <= rtol * (|want| + floor * max|want|): relative, with an
// absolute floor at a fraction of the output's scale (1%: small logits carry the
// rounding of large ones). NaN matches NaN.
struct Tolerance {
  double rtol, atol;
  Tolerance(const Tensor& want, double rtol, double floor = 1e-2) : rtol(rtol) {
    double scale = 0;
    for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::abs(double(want.data<float>()[i])));
    atol = rtol * std::max(scale, 1e-3) * floor;
  }
  bool accepts(double got, double want) const {
    return (std::isnan(want) && std::isnan(got)) || std::abs(got - want) <= rtol * std::abs(want) + atol;
  }
};

inline bool closeEnough(const Tensor& got, const Tensor& want, double rtol, double floor = 1e-2) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) return false;
  if (isHalf(want.dtype())) return closeEnough(got.castTo(DType::F32), want.castTo(DType::F32), rtol, floor);
  Tolerance t(want, rtol, floor);
  for (int64_t i = 0; i < want.numel(); ++i)
    if (!t.accepts(got.data<float>()[i], want.data<float>()[i])) return false;
  return true;
}

// The same comparison as test failures; reports at most 5 elements.
inline void expectClose(const Tensor& got, const Tensor& want, double rtol, const std::string& what,
                        double floor = 1e-2) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  if (isHalf(want.dtype())) return expectClose(got.castTo(DType::F32), want.castTo(DType::F32), rtol, what, floor);
  Tolerance t(want, rtol, floor);
  int bad = 0;
  for (int64_t i = 0; i < want.numel() && bad < 5; ++i) {
    double g = got.data<float>()[i], w = want.data<float>()[i];
    if (t.accepts(g, w)) continue;
    ADD_FAILURE() << what << ": element " << i << " is " << g << ", reference says " << w;
    bad++;
  }
}

// The module after stage `name` among `stages` (codegen::kernelStages).
inline std::string stageModule(const std::vector<codegen::StageDump>& stages, const std::string& name) {
  for (const auto& s : stages)
    if (s.stage == name) return s.module;
  ADD_FAILURE() << "no stage " << name;
  return "";
}

// The message of the friction::Error that f throws, or "(no error)".
inline std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// ConvTranspose geometries whose indexing a kernel must get right: a U-Net's 2 x 2 at stride 2, a window that is
// no multiple of its stride, begin and end pads with output_padding, groups and depthwise, dilations, 1-D and
// 3-D, auto_pad, output_shape, 18 wide (a vector of 16 and one shifted inwards), pads wider than the window.
struct ConvTransposeCase {
  std::vector<int64_t> x, w;
  std::map<std::string, Attribute> attrs;
  bool bias;
};
inline std::vector<ConvTransposeCase> convTransposeCases() {
  using Ints = std::vector<int64_t>;
  return {
      {{1, 4, 5, 6}, {4, 3, 2, 2}, {{"strides", Ints{2, 2}}}, true},
      {{2, 4, 5, 5}, {4, 6, 3, 3}, {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}, {"output_padding", Ints{1, 1}}}, true},
      {{1, 4, 6, 7}, {4, 2, 3, 3}, {{"group", int64_t(2)}, {"pads", Ints{1, 0, 2, 1}}}, true},
      {{1, 4, 5, 5}, {4, 1, 3, 3}, {{"group", int64_t(4)}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}, false},
      {{1, 3, 5, 5}, {3, 2, 3, 3}, {{"strides", Ints{2, 2}}, {"dilations", Ints{2, 2}}}, true},
      {{1, 3, 5, 4}, {3, 2, 3, 2}, {{"strides", Ints{1, 3}}, {"dilations", Ints{2, 1}}, {"pads", Ints{2, 0, 1, 1}}}, false},
      {{2, 3, 9}, {3, 4, 4}, {{"strides", Ints{3}}, {"pads", Ints{1, 2}}}, true},
      {{1, 2, 3, 4, 4}, {2, 3, 2, 2, 2}, {{"strides", Ints{2, 2, 2}}}, true},
      {{1, 2, 5, 5}, {2, 2, 3, 3}, {{"strides", Ints{2, 2}}, {"auto_pad", Attribute(std::string("SAME_UPPER"))}}, false},
      {{1, 2, 4, 4}, {2, 2, 3, 3}, {{"strides", Ints{2, 2}}, {"output_shape", Ints{8, 8}}}, true},
      {{1, 2, 9, 9}, {2, 3, 2, 2}, {{"strides", Ints{2, 2}}}, true},
      {{1, 2, 4, 4}, {2, 2, 2, 2}, {{"strides", Ints{2, 2}}, {"pads", Ints{2, 1, 1, 2}}}, true},
  };
}
// The case's ConvTranspose of x, its weights and bias random constants.
inline Value* convTranspose(GraphBuilder& b, Value* x, const ConvTransposeCase& c) {
  std::vector<Value*> in = {x, b.constant(randomTensor(c.w, 2))};
  const int64_t group = c.attrs.count("group") ? std::get<int64_t>(c.attrs.at("group")) : 1;
  if (c.bias) in.push_back(b.constant(randomTensor({c.w[1] * group}, 3)));
  return b.op("ConvTranspose", in, c.attrs);
}

// Occurrences of `what` in `text`.
inline int countOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace friction::test
