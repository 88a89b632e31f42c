// Native kernels of the data-movement and per-axis ops (NativeKernels.h):
// Slice, Pad (constant mode), Gather (constant indices), Expand and Tile as strided
// copies (runtime/ukernels/Copy.h), Pad's other modes through a table of the
// source positions of each axis (the Resize gather), Concat as row copies, Gather of run-time indices as row
// copies, ScatterND of constant indices as row copies over a copy of the
// data, BatchNormalization as one per-channel scale and shift, the Reduce ops
// (GlobalMaxPool too; axes that are not consecutive moved last by a transpose), Resize through tables of each axis's taps,
// InstanceNormalization as rows of the normalization kernel, LRN over windows of channels.
// Each matcher reads what the op's constant inputs say at build time; a
// non-constant one (a shape computed at run time) leaves the node to the
// interpreter.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>

#include <omp.h>

#include "codegen/NativeKernels.h"
#include "ir/Error.h"
#include "ir/ops/TensorShapes.h"
#include "runtime/ukernels/Copy.h"
#include "runtime/ukernels/Resize.h"
#include "runtime/ukernels/Rows.h"

namespace friction::codegen {
namespace {

using Ints = std::vector<int64_t>;

// The integers of a constant input of any rank (Gather's indices may be 2-D,
// which PassUtil's staticInts does not take); absent: nullopt.
std::optional<Ints> constantInts(const std::vector<const Value*>& in, size_t i) {
  if (i >= in.size() || !in[i]) return std::nullopt;
  const Tensor* t = constantData(in[i]);
  if (!t || !isInteger(t->dtype())) return std::nullopt;
  return t->toInt64Vector();
}
bool absent(const std::vector<const Value*>& in, size_t i) { return i >= in.size() || !in[i]; }

int64_t normalized(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

// The elements of one channel's image in an [N, C, spatial...] tensor.
int64_t pixelsPerChannel(const Ints& xs) {
  int64_t n = 1;
  for (size_t d = 2; d < xs.size(); ++d) n *= xs[d];
  return n;
}
// Inputs [first, last) are static f32 values of `channels` elements each (a normalization's parameters).
bool onePerChannel(const std::vector<const Value*>& in, size_t first, size_t last, int64_t channels) {
  for (size_t i = first; i < last; ++i)
    if (i >= in.size() || !isStaticF32(in[i]) || in[i]->shape().numel() != std::optional<int64_t>(channels)) return false;
  return true;
}

// One strided copy from input `input` into the output (runtime/ukernels/Copy.h).
struct CopyPiece {
  size_t input = 0;
  int64_t xOffset = 0, yOffset = 0;
  Ints xStrides, yStrides, shape;
};

class CopyKernel : public NativeKernel {
 public:
  CopyKernel(std::string op, std::vector<CopyPiece> pieces, std::optional<float> fill = std::nullopt)
      : op_(std::move(op)), pieces_(std::move(pieces)), fill_(fill) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    float* y = out.data<float>();
    if (fill_) std::fill(y, y + out.numel(), *fill_);
    for (const CopyPiece& p : pieces_) {
      const float* x = in[p.input].data<float>() + p.xOffset;
      if (x == y + p.yOffset && sameLayout(p)) continue;  // already in place (plan-memory's Concat inputs)
      ukernels::copyStrided(x, p.xStrides, y + p.yOffset, p.yStrides, p.shape);
    }
  }
  std::string describe() const override { return op_ + " (strided copy)"; }

 private:
  // Source and destination step alike over every dim longer than 1: from the same address, the same bytes.
  static bool sameLayout(const CopyPiece& p) {
    for (size_t d = 0; d < p.shape.size(); ++d)
      if (p.shape[d] > 1 && p.xStrides[d] != p.yStrides[d]) return false;
    return true;
  }

  std::string op_;
  std::vector<CopyPiece> pieces_;
  std::optional<float> fill_;
};

// Concat of dense inputs: the output as `rows` rows (the dims before the axis), input i's part of each a run of
// widths[i] floats at offsets[i] (its extent along the axis times the dims after it).
class ConcatKernel : public NativeKernel {
 public:
  ConcatKernel(int64_t rows, int64_t yRow, Ints widths, Ints offsets)
      : rows_(rows), yRow_(yRow), widths_(std::move(widths)), offsets_(std::move(offsets)) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    float* y = out.data<float>();
    std::vector<ukernels::RowPiece> pieces;
    for (size_t i = 0; i < in.size(); ++i) {
      const float* x = in[i].data<float>();
      const bool inPlace = x == y + offsets_[i] && (rows_ == 1 || widths_[i] == yRow_);  // plan-memory put it there
      if (!inPlace && widths_[i] > 0) pieces.push_back({x, widths_[i], offsets_[i]});
    }
    if (rows_ >= omp_get_max_threads()) return ukernels::concatRows(rows_, pieces, y, yRow_);
    // Fewer rows than threads (NCHW at batch 1: one row of megabytes): piece by piece, each cut among the threads.
    for (const ukernels::RowPiece& p : pieces)
      ukernels::copyStrided(p.x, {p.width, 1}, y + p.offset, {yRow_, 1}, {rows_, p.width});
  }
  std::string describe() const override { return "Concat (row copy)"; }

 private:
  int64_t rows_, yRow_;
  Ints widths_, offsets_;
};

// The whole of input 0 read densely, written at `yOffset` with the output's strides.
CopyPiece denseInto(size_t input, const Ints& xShape, const Ints& yShape, int64_t yOffset) {
  return {input, 0, yOffset, ukernels::denseStrides(xShape), ukernels::denseStrides(yShape), xShape};
}

using Matcher = std::function<std::unique_ptr<NativeKernel>(const Node&, const std::vector<const Value*>&, const Ints&,
                                                            const Ints&, std::string*)>;

// The strided read of input 0 a Slice of constant bounds is, or nullopt with the reason in `why`.
std::optional<CopyPiece> slicePiece(const std::vector<const Value*>& in, const Ints& xs, const Ints& ys,
                                    std::string* why) {
  auto starts = constantInts(in, 1), ends = constantInts(in, 2), axes = constantInts(in, 3), steps = constantInts(in, 4);
  if (!starts || !ends || (!axes && !absent(in, 3)) || (!steps && !absent(in, 4)))
    return noNative(why, "Slice bounds are not constants"), std::nullopt;
  CopyPiece p{0, 0, 0, ukernels::denseStrides(xs), ukernels::denseStrides(ys), ys};
  Ints dense = p.xStrides;
  try {
    for (SliceAxis s : sliceAxes(int64_t(xs.size()), *starts, *ends, axes, steps)) {
      size_t a = size_t(s.axis);
      if (clampSlice(xs[a], s) != ys[a]) return noNative(why, "Slice result disagrees with its type"), std::nullopt;
      p.xOffset += s.start * dense[a];
      p.xStrides[a] = dense[a] * s.step;
    }
  } catch (const Error& e) {
    return noNative(why, e.what()), std::nullopt;
  }
  return p;
}

std::unique_ptr<NativeKernel> matchSlice(const Node&, const std::vector<const Value*>& in, const Ints& xs,
                                         const Ints& ys, std::string* why) {
  auto p = slicePiece(in, xs, ys, why);
  return p ? std::make_unique<CopyKernel>("Slice", std::vector<CopyPiece>{*p}) : nullptr;
}

std::unique_ptr<NativeKernel> matchConcat(const Node& n, const std::vector<const Value*>& in, const Ints&,
                                          const Ints& ys, std::string* why) {
  const int64_t axis = normalized(n.attrInt("axis", 0), int64_t(ys.size()));
  if (axis < 0 || axis >= int64_t(ys.size())) return noNative(why, "Concat axis out of range");
  const Ints yStrides = ukernels::denseStrides(ys);
  const int64_t inner = yStrides[size_t(axis)];  // floats per step along the axis
  Ints widths, offsets;
  int64_t at = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!isStaticF32(in[i])) return noNative(why, "Concat input not f32/static");
    Ints s = in[i]->shape().staticDims();
    if (s.size() != ys.size()) return noNative(why, "Concat input rank differs");
    for (size_t d = 0; d < s.size(); ++d)
      if (int64_t(d) != axis && s[d] != ys[d]) return noNative(why, "Concat input shape differs off the axis");
    widths.push_back(s[size_t(axis)] * inner), offsets.push_back(at * inner);
    at += s[size_t(axis)];
  }
  if (at != ys[size_t(axis)]) return noNative(why, "Concat inputs do not add up to the result");
  int64_t rows = 1;
  for (int64_t d = 0; d < axis; ++d) rows *= ys[size_t(d)];
  return std::make_unique<ConcatKernel>(rows, ys[size_t(axis)] * inner, std::move(widths), std::move(offsets));
}

// A gather through a table of source positions per axis, weighted (ukernels::resize): Resize's taps, and the
// source positions of a Pad that reflects, repeats its edge or wraps (one tap of weight 1 each).
class AxisGatherKernel : public NativeKernel {
 public:
  AxisGatherKernel(std::string description, std::vector<ukernels::ResizeAxis> axes)
      : description_(std::move(description)), axes_(std::move(axes)) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    ukernels::resize(in[0].data<float>(), axes_, out.data<float>());
  }
  std::string describe() const override { return description_; }

 private:
  std::string description_;
  std::vector<ukernels::ResizeAxis> axes_;
};

std::unique_ptr<NativeKernel> matchPad(const Node& n, const std::vector<const Value*>& in, const Ints& xs,
                                       const Ints& ys, std::string* why) {
  const std::string mode = n.attrString("mode", "constant");
  auto pads = constantInts(in, 1), axes = constantInts(in, 3);
  if (!pads || (!axes && !absent(in, 3))) return noNative(why, "Pad pads are not constants");
  float value = 0.f;
  if (!absent(in, 2)) {
    const Tensor* v = constantData(in[2]);
    if (!v || v->numel() > 1) return noNative(why, "Pad value is not a constant scalar");
    if (v->numel() == 1) value = float(v->elementAsDouble(0));
  }
  Ints all;
  try {
    all = padsForAllAxes(int64_t(xs.size()), *pads, axes);
  } catch (const Error& e) {
    return noNative(why, e.what());
  }
  const int64_t r = int64_t(xs.size());
  if (mode != "constant") {  // each output position reads one source position: a table per axis
    if (!isStaticF32(in[0])) return noNative(why, "Pad " + mode + " not f32");
    std::vector<ukernels::ResizeAxis> tables;
    for (int64_t d = 0; d < r; ++d) {
      ukernels::ResizeAxis a{xs[size_t(d)], ys[size_t(d)], 1, {}, std::vector<float>(size_t(ys[size_t(d)]), 1.f)};
      if (a.in == 0 && a.out > 0) return noNative(why, "Pad " + mode + " of an empty axis");
      for (int64_t o = 0; o < a.out; ++o) a.index.push_back(padSourceIndex(mode, o - all[size_t(d)], a.in));
      tables.push_back(std::move(a));
    }
    return std::make_unique<AxisGatherKernel>("Pad " + mode + " (index tables)", std::move(tables));
  }
  const Ints yStrides = ukernels::denseStrides(ys);
  int64_t offset = 0;
  for (int64_t d = 0; d < r; ++d) {
    if (all[size_t(d)] < 0 || all[size_t(d + r)] < 0) return noNative(why, "Pad with negative pads (a crop)");
    offset += all[size_t(d)] * yStrides[size_t(d)];
  }
  return std::make_unique<CopyKernel>("Pad", std::vector<CopyPiece>{denseInto(0, xs, ys, offset)}, value);
}

std::unique_ptr<NativeKernel> matchExpand(const Node&, const std::vector<const Value*>&, const Ints& xs,
                                          const Ints& ys, std::string* why) {
  if (xs.size() > ys.size()) return noNative(why, "Expand to a lower rank");
  // x right-aligned in y; broadcast dims read the same element again (stride 0).
  const Ints dense = ukernels::denseStrides(xs);
  CopyPiece p{0, 0, 0, Ints(ys.size(), 0), ukernels::denseStrides(ys), ys};
  const size_t lead = ys.size() - xs.size();
  for (size_t d = 0; d < xs.size(); ++d) {
    if (xs[d] != ys[lead + d] && xs[d] != 1) return noNative(why, "Expand does not broadcast");
    if (xs[d] == ys[lead + d]) p.xStrides[lead + d] = dense[d];
  }
  return std::make_unique<CopyKernel>("Expand", std::vector<CopyPiece>{p});
}

// Tile: y viewed as [repeats_0, x_0, repeats_1, x_1, ...], each repeat reading all of x again (x stride 0).
std::unique_ptr<NativeKernel> matchTile(const Node&, const std::vector<const Value*>& in, const Ints& xs,
                                        const Ints& ys, std::string* why) {
  auto repeats = constantInts(in, 1);
  if (!repeats || repeats->size() != xs.size() || ys.size() != xs.size())
    return noNative(why, "Tile repeats are not constants, one per dim");
  const Ints xDense = ukernels::denseStrides(xs), yDense = ukernels::denseStrides(ys);
  CopyPiece p;
  for (size_t d = 0; d < xs.size(); ++d) {
    if ((*repeats)[d] * xs[d] != ys[d]) return noNative(why, "Tile repeats disagree with the result's shape");
    p.shape.insert(p.shape.end(), {(*repeats)[d], xs[d]});
    p.xStrides.insert(p.xStrides.end(), {0, xDense[d]});
    p.yStrides.insert(p.yStrides.end(), {xs[d] * yDense[d], yDense[d]});
  }
  return std::make_unique<CopyKernel>("Tile", std::vector<CopyPiece>{p});
}

// Gather whose indices arrive at run time (an Embedding's token ids), or of elements other than f32 (a
// quantized embedding table): x as [outer, axis, inner], one row copy per (outer, index); indices checked on
// every run.
class GatherKernel : public NativeKernel {
 public:
  GatherKernel(std::string node, int64_t outer, int64_t axis, int64_t inner, size_t elementBytes = sizeof(float))
      : node_(std::move(node)), outer_(outer), axis_(axis), inner_(inner), bytes_(elementBytes) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    std::vector<int64_t> indices = in[1].toInt64Vector();
    for (int64_t& i : indices) {
      FRICTION_CHECK(i >= -axis_ && i < axis_, "Gather '" + node_ + "': index " + std::to_string(i) +
                                                   " out of range for an axis of " + std::to_string(axis_));
      if (i < 0) i += axis_;
    }
    ukernels::gatherRows(in[0].rawData(), outer_, axis_, inner_, indices.data(), int64_t(indices.size()), bytes_,
                         out.rawData());
  }
  std::string describe() const override { return "Gather (rows)"; }

 private:
  std::string node_;
  int64_t outer_, axis_, inner_;
  size_t bytes_;
};

// Gather along `axis`: with constant indices one strided copy per index,
// otherwise a GatherKernel.
std::unique_ptr<NativeKernel> matchGather(const Node& n, const std::vector<const Value*>& in, const Ints& xs,
                                          const Ints& ys, std::string* why) {
  constexpr size_t kMaxIndices = 1024;  // beyond this a copy per index is the wrong kernel
  const int64_t rank = int64_t(xs.size()), axis = normalized(n.attrInt("axis", 0), rank);
  if (axis < 0 || axis >= rank) return noNative(why, "Gather axis out of range");
  if (!in[1]->shape().isStatic() || !isInteger(in[1]->dtype())) return noNative(why, "Gather indices not static integers");
  const int64_t q = int64_t(in[1]->shape().rank());
  if (int64_t(ys.size()) != rank + q - 1) return noNative(why, "Gather result rank disagrees with its type");
  auto indices = constantInts(in, 1);
  if (!indices || indices->size() > kMaxIndices || in[0]->dtype() != DType::F32) {
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= xs[size_t(d)];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= xs[size_t(d)];
    return std::make_unique<GatherKernel>(n.name(), outer, xs[size_t(axis)], inner, dtypeSize(in[0]->dtype()));
  }
  const Ints xDense = ukernels::denseStrides(xs), yDense = ukernels::denseStrides(ys);
  CopyPiece base;
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis) continue;
    base.shape.push_back(xs[size_t(d)]);
    base.xStrides.push_back(xDense[size_t(d)]);
    base.yStrides.push_back(yDense[size_t(d < axis ? d : d + q - 1)]);
  }
  std::vector<CopyPiece> pieces;
  for (size_t j = 0; j < indices->size(); ++j) {
    int64_t i = (*indices)[j];
    if (i < -xs[size_t(axis)] || i >= xs[size_t(axis)]) return noNative(why, "Gather index out of range");
    CopyPiece p = base;
    p.xOffset = (i < 0 ? i + xs[size_t(axis)] : i) * xDense[size_t(axis)];
    p.yOffset = q > 0 ? int64_t(j) * yDense[size_t(axis + q - 1)] : 0;
    pieces.push_back(std::move(p));
  }
  return std::make_unique<CopyKernel>("Gather", std::move(pieces));
}

// ScatterND (reduction none) with indices constant at build: the data
// copied, then each update row copied to the offset its index tuple names.
class ScatterRowsKernel : public NativeKernel {
 public:
  ScatterRowsKernel(Ints offsets, int64_t row) : offsets_(std::move(offsets)), row_(row) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    std::memcpy(out.data<float>(), in[0].data<float>(), out.byteSize());
    const float* updates = in[2].data<float>();
    for (size_t t = 0; t < offsets_.size(); ++t)
      std::memcpy(out.data<float>() + offsets_[t], updates + int64_t(t) * row_, size_t(row_) * sizeof(float));
  }
  std::string describe() const override { return "ScatterND (row copies)"; }

 private:
  Ints offsets_;
  int64_t row_;
};

std::unique_ptr<NativeKernel> matchScatterND(const Node& n, const std::vector<const Value*>& in, const Ints& xs,
                                             const Ints&, std::string* why) {
  if (n.attrString("reduction", "none") != "none") return noNative(why, "ScatterND with a reduction");
  auto indices = constantInts(in, 1);
  if (!indices || !isStaticF32(in[2])) return noNative(why, "ScatterND indices are not constants");
  auto scatter = scatterRows(xs, in[1]->shape().staticDims(), *indices, in[2]->shape().numel().value_or(-1), why);
  if (!scatter) return nullptr;
  Ints offsets;
  for (int64_t r : scatter->rows) offsets.push_back(r * scatter->rowElements);
  return std::make_unique<ScatterRowsKernel>(std::move(offsets), scatter->rowElements);
}

}  // namespace

std::optional<ScatterRows> scatterRows(const Ints& xs, const Ints& indexShape, const Ints& tuples,
                                       int64_t updateElements, std::string* why) {
  auto refuse = [why](const char* reason) -> std::optional<ScatterRows> {
    if (why) *why = reason;
    return std::nullopt;
  };
  const int64_t m = indexShape.empty() ? 0 : indexShape.back();
  if (m < 1 || m > int64_t(xs.size())) return refuse("ScatterND index tuples do not fit the data");
  ScatterRows s;
  for (size_t d = size_t(m); d < xs.size(); ++d) s.rowElements *= xs[d];
  for (size_t t = 0; t < tuples.size(); t += size_t(m)) {
    int64_t row = 0;
    for (int64_t j = 0; j < m; ++j) {
      const int64_t i = tuples[t + size_t(j)], extent = xs[size_t(j)];
      if (i < -extent || i >= extent) return refuse("ScatterND index out of range");
      row = row * extent + (i < 0 ? i + extent : i);
    }
    s.rows.push_back(row);
  }
  if (updateElements != int64_t(s.rows.size()) * s.rowElements)
    return refuse("ScatterND updates do not match the index tuples");
  return s;
}

namespace {

class BatchNormKernel : public NativeKernel {
 public:
  BatchNormKernel(int64_t outer, int64_t channels, int64_t inner, float eps, std::vector<const Value*> params)
      : outer_(outer), channels_(channels), inner_(inner), eps_(eps), params_(std::move(params)) {}
  void prepare() override {
    std::vector<const float*> p;
    for (const Value* v : params_) {
      const Tensor* t = constantData(v);
      if (!t) return;  // computed at run time
      p.push_back(t->data<float>());
    }
    fold(p[0], p[1], p[2], p[3], scale_, shift_);
  }
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    if (!scale_.empty())
      return ukernels::channelAffine(outer_, channels_, inner_, in[0].data<float>(), scale_.data(), shift_.data(),
                                     out.data<float>());
    std::vector<float> scale, shift;
    fold(in[1].data<float>(), in[2].data<float>(), in[3].data<float>(), in[4].data<float>(), scale, shift);
    ukernels::channelAffine(outer_, channels_, inner_, in[0].data<float>(), scale.data(), shift.data(),
                            out.data<float>());
  }
  std::string describe() const override { return "BatchNormalization (channel scale and shift)"; }

 private:
  // y = (x - mean) / sqrt(var + eps) * gamma + beta = x * scale + shift.
  void fold(const float* gamma, const float* beta, const float* mean, const float* var, std::vector<float>& scale,
            std::vector<float>& shift) const {
    scale.resize(size_t(channels_)), shift.resize(size_t(channels_));
    for (int64_t c = 0; c < channels_; ++c) {
      double s = double(gamma[c]) / std::sqrt(double(var[c]) + double(eps_));
      scale[size_t(c)] = float(s);
      shift[size_t(c)] = float(double(beta[c]) - double(mean[c]) * s);
    }
  }
  int64_t outer_, channels_, inner_;
  float eps_;
  std::vector<const Value*> params_;  // scale, B, mean, var
  std::vector<float> scale_, shift_;  // folded at prepare() when the parameters are constants
};

std::unique_ptr<NativeKernel> matchBatchNorm(const Node& n, const std::vector<const Value*>& in, const Ints& xs,
                                             const Ints& ys, std::string* why) {
  if (n.attrInt("training_mode", 0) != 0 || n.numOutputs() > 1) return noNative(why, "BatchNormalization in training mode");
  if (xs.size() < 2 || in.size() != 5) return noNative(why, "BatchNormalization without a channel axis or parameters");
  if (!onePerChannel(in, 1, 5, xs[1])) return noNative(why, "BatchNormalization parameters are not one f32 per channel");
  return std::make_unique<BatchNormKernel>(xs[0], xs[1], pixelsPerChannel(xs), n.attrFloat("epsilon", 1e-5f),
                                           std::vector<const Value*>(in.begin() + 1, in.end()));
}

// A Reduce op over x as [outer, reduced, inner]. Axes that are not consecutive are moved last first (x
// transposed into a scratch buffer, the kept dims in order), so the reduced dims are: [kept, reduced, 1].
class ReduceKernel : public NativeKernel {
 public:
  ReduceKernel(std::string op, ukernels::ReduceKind kind, int64_t outer, int64_t reduced, int64_t inner,
               Ints shape = {}, Ints perm = {})
      : op_(std::move(op)), kind_(kind), outer_(outer), reduced_(reduced), inner_(inner), shape_(std::move(shape)),
        perm_(std::move(perm)) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    const float* x = in[0].data<float>();
    std::vector<float> moved;
    if (!perm_.empty()) {
      moved.resize(size_t(in[0].numel()));
      ukernels::transposeF32(x, moved.data(), shape_, perm_);
      x = moved.data();
    }
    ukernels::reduceMiddle(kind_, outer_, reduced_, inner_, x, out.data<float>());
  }
  std::string describe() const override { return op_ + (perm_.empty() ? " (consecutive axes)" : " (axes moved last)"); }

 private:
  std::string op_;
  ukernels::ReduceKind kind_;
  int64_t outer_, reduced_, inner_;
  Ints shape_, perm_;  // x's shape and the transpose that puts the reduced axes last; empty: none
};

std::unique_ptr<NativeKernel> matchReduce(const Node& n, const std::vector<const Value*>& in, const Ints& xs,
                                          const Ints&, std::string* why) {
  using K = ukernels::ReduceKind;
  static const std::map<std::string, K> kinds = {
      {"ReduceSum", K::Sum},        {"ReduceMean", K::Mean}, {"ReduceMax", K::Max},       {"ReduceMin", K::Min},
      {"ReduceSumSquare", K::SumSquare}, {"ReduceL1", K::L1}, {"ReduceL2", K::L2},        {"ReduceLogSum", K::LogSum},
      {"ReduceLogSumExp", K::LogSumExp}, {"ReduceProd", K::Prod}};
  // Axes: an input (ReduceSum from opset 13, every Reduce op from 18) or an attribute.
  std::optional<Ints> axes = !absent(in, 1) ? constantInts(in, 1) : std::optional<Ints>(n.attrInts("axes"));
  if (!axes) return noNative(why, n.op() + " axes are not constants");
  const int64_t rank = int64_t(xs.size());
  if (axes->empty()) {
    if (n.attrInt("noop_with_empty_axes", 0)) return noNative(why, n.op() + " that reduces nothing");
    axes->resize(size_t(rank));
    std::iota(axes->begin(), axes->end(), 0);
  }
  for (int64_t& a : *axes) a = normalized(a, rank);
  std::sort(axes->begin(), axes->end());
  axes->erase(std::unique(axes->begin(), axes->end()), axes->end());
  if (axes->front() < 0 || axes->back() >= rank) return noNative(why, n.op() + " axis out of range");
  int64_t outer = 1, reduced = 1, inner = 1;
  if (axes->back() - axes->front() + 1 == int64_t(axes->size())) {  // consecutive
    for (int64_t d = 0; d < rank; ++d)
      (d < axes->front() ? outer : d <= axes->back() ? reduced : inner) *= xs[size_t(d)];
    return std::make_unique<ReduceKernel>(n.op(), kinds.at(n.op()), outer, reduced, inner);
  }
  Ints perm;
  for (int64_t d = 0; d < rank; ++d)
    if (!std::binary_search(axes->begin(), axes->end(), d)) perm.push_back(d), outer *= xs[size_t(d)];
  for (int64_t a : *axes) perm.push_back(a), reduced *= xs[size_t(a)];
  return std::make_unique<ReduceKernel>(n.op(), kinds.at(n.op()), outer, reduced, 1, xs, std::move(perm));
}

// GlobalMaxPool: the largest of each image plane, the Reduce kernel's max over [N x C, spatial, 1].
std::unique_ptr<NativeKernel> matchGlobalMaxPool(const Node& n, const std::vector<const Value*>&, const Ints& xs,
                                                 const Ints&, std::string* why) {
  if (xs.size() < 3) return noNative(why, "GlobalMaxPool of rank < 3");
  return std::make_unique<ReduceKernel>(n.op(), ukernels::ReduceKind::Max, xs[0] * xs[1], pixelsPerChannel(xs), 1);
}

// InstanceNormalization: each (image, channel) plane one row of the normalization microkernel.
class InstanceNormKernel : public NativeKernel {
 public:
  InstanceNormKernel(int64_t rows, int64_t cols, int64_t channels, float eps)
      : rows_(rows), cols_(cols), channels_(channels), eps_(eps) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    ukernels::instanceNormRows(rows_, cols_, channels_, in[0].data<float>(), in[1].data<float>(), in[2].data<float>(),
                               eps_, out.data<float>());
  }
  std::string describe() const override { return "InstanceNormalization rows"; }

 private:
  int64_t rows_, cols_, channels_;
  float eps_;
};

std::unique_ptr<NativeKernel> matchInstanceNorm(const Node& n, const std::vector<const Value*>& in, const Ints& xs,
                                                const Ints&, std::string* why) {
  if (xs.size() < 3 || in.size() != 3) return noNative(why, "InstanceNormalization of rank < 3 or without parameters");
  if (!onePerChannel(in, 1, 3, xs[1])) return noNative(why, "InstanceNormalization scale/B are not one f32 per channel");
  return std::make_unique<InstanceNormKernel>(xs[0] * xs[1], pixelsPerChannel(xs), xs[1], n.attrFloat("epsilon", 1e-5f));
}

// LRN across channels: y = x / (bias + alpha / size * (sum of x^2 over the channel window))^beta, the window
// [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped to the channels; each image's planes at a time.
class LrnKernel : public NativeKernel {
 public:
  LrnKernel(int64_t images, int64_t channels, int64_t plane, int64_t size, float alpha, float beta, float bias)
      : images_(images), channels_(channels), plane_(plane), size_(size), alpha_(alpha), beta_(beta), bias_(bias) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    const float* x = in[0].data<float>();
    float* y = out.data<float>();
    const int64_t lo = (size_ - 1) / 2, hi = size_ - 1 - lo;
    const float scale = alpha_ / float(size_);
#pragma omp parallel for collapse(2) schedule(static) if (images_ * channels_ * plane_ > (1 << 15))
    for (int64_t b = 0; b < images_; ++b)
      for (int64_t c = 0; c < channels_; ++c) {
        const float* xc = x + (b * channels_ + c) * plane_;
        float* yc = y + (b * channels_ + c) * plane_;
        std::fill(yc, yc + plane_, 0.f);
        for (int64_t k = std::max<int64_t>(0, c - lo); k <= std::min(channels_ - 1, c + hi); ++k) {
          const float* xk = x + (b * channels_ + k) * plane_;
#pragma omp simd
          for (int64_t i = 0; i < plane_; ++i) yc[i] += xk[i] * xk[i];
        }
        for (int64_t i = 0; i < plane_; ++i) yc[i] = xc[i] / std::pow(bias_ + scale * yc[i], beta_);
      }
  }
  std::string describe() const override { return "LRN (channel windows)"; }

 private:
  int64_t images_, channels_, plane_, size_;
  float alpha_, beta_, bias_;
};

std::unique_ptr<NativeKernel> matchLrn(const Node& n, const std::vector<const Value*>&, const Ints& xs, const Ints&,
                                       std::string* why) {
  const int64_t size = n.attrInt("size", 1);
  if (xs.size() < 2 || size < 1) return noNative(why, "LRN of rank < 2 or a window of no channel");
  return std::make_unique<LrnKernel>(xs[0], xs[1], pixelsPerChannel(xs), size, n.attrFloat("alpha", 1e-4f),
                                     n.attrFloat("beta", 0.75f), n.attrFloat("bias", 1.0f));
}

// The taps of one axis from `in` to `out` positions (resizeTaps, as the interpreter takes them). Where every
// position has one tap of weight 1 (nearest; linear at scale 1), one tap a position.
ukernels::ResizeAxis resizeAxis(const ResizeParams& p, int64_t in, int64_t out, double scale) {
  ukernels::ResizeAxis a{in, out, 0, {}, {}};
  std::vector<int64_t> idx, single;  // single: each position's one tap of weight 1, or -1
  std::vector<double> w;
  for (int64_t o = 0; o < out; ++o) {
    resizeTaps(p, o, in, out, scale, 0, 1, idx, w);
    a.taps = int64_t(idx.size());
    int64_t nonzero = 0, only = -1;
    for (size_t t = 0; t < idx.size(); ++t) {
      a.index.push_back(idx[t]), a.weight.push_back(float(w[t]));
      if (w[t] != 0) ++nonzero, only = w[t] == 1 ? idx[t] : -1;
    }
    single.push_back(nonzero == 1 ? only : -1);
  }
  if (std::find(single.begin(), single.end(), -1) == single.end())
    a = {in, out, 1, single, std::vector<float>(size_t(out), 1.f)};
  return a;
}

std::unique_ptr<NativeKernel> matchResize(const Node& n, const std::vector<const Value*>& in, const Ints& xs,
                                          const Ints& ys, std::string* why) {
  auto axes = resizeTables(n, in, xs, ys, why);
  if (!axes) return nullptr;
  return std::make_unique<AxisGatherKernel>("Resize " + resizeParams(n).mode + " (tap tables)", std::move(*axes));
}

}  // namespace

// Resize with constant scales (or sizes, which static shapes give): tables of each axis's taps made now, so a run
// only gathers. tf_crop_and_resize (positions outside its roi extrapolate) stays with the interpreter.
std::optional<std::vector<ukernels::ResizeAxis>> resizeTables(const Node& n, const std::vector<const Value*>& in,
                                                              const Ints& xs, const Ints& ys, std::string* why) {
  const ResizeParams p = resizeParams(n);
  if (p.mode != "nearest" && p.mode != "linear" && p.mode != "cubic")
    return noNative(why, "Resize mode '" + p.mode + "'"), std::nullopt;
  if (p.ctm == "tf_crop_and_resize") return noNative(why, "Resize with tf_crop_and_resize"), std::nullopt;
  // Scales as the interpreter reads them (floats), when given; else the sizes the output's static shape holds.
  const Tensor* given = absent(in, 2) ? nullptr : constantData(in[2]);
  if (!absent(in, 2) && !given) return noNative(why, "Resize scales are not constants"), std::nullopt;
  const bool scaled = given && given->numel() > 0;
  if (scaled && given->numel() != int64_t(xs.size()))
    return noNative(why, "Resize scales do not have one entry per dim"), std::nullopt;
  std::vector<ukernels::ResizeAxis> axes;
  for (size_t d = 0; d < xs.size(); ++d)
    axes.push_back(resizeAxis(p, xs[d], ys[d], scaled ? double(float(given->elementAsDouble(int64_t(d))))
                                                       : double(ys[d]) / double(xs[d])));
  return axes;
}

std::unique_ptr<NativeKernel> matchBatchNormNhwc(const Node& n, const std::vector<const Value*>& in, std::string* why) {
  const Value* x = in.empty() ? nullptr : in[0];
  if (!isStaticF32(x) || x->shape().rank() != 4) return noNative(why, "BatchNormalization not f32, static and 4-D");
  if (n.attrInt("training_mode", 0) != 0 || n.numOutputs() > 1 || in.size() != 5)
    return noNative(why, "BatchNormalization in training mode or without parameters");
  const Ints xs = x->shape().staticDims();  // [N, H, W, C]
  if (!onePerChannel(in, 1, 5, xs[3])) return noNative(why, "BatchNormalization parameters are not one f32 per channel");
  return std::make_unique<BatchNormKernel>(xs[0] * xs[1] * xs[2], xs[3], 1, n.attrFloat("epsilon", 1e-5f),
                                           std::vector<const Value*>(in.begin() + 1, in.end()));
}

std::unique_ptr<NativeKernel> matchTensorOp(const Node& node, const std::vector<const Value*>& outer, std::string* why) {
  static const std::map<std::string, Matcher> matchers = {
      {"Slice", matchSlice},         {"Concat", matchConcat},         {"Pad", matchPad},
      {"Expand", matchExpand},       {"Tile", matchTile},             {"Gather", matchGather},         {"ScatterND", matchScatterND},
      {"BatchNormalization", matchBatchNorm}, {"Resize", matchResize},
      {"InstanceNormalization", matchInstanceNorm}, {"LRN", matchLrn}, {"GlobalMaxPool", matchGlobalMaxPool},
      {"ReduceSum", matchReduce},    {"ReduceMean", matchReduce},     {"ReduceMax", matchReduce},
      {"ReduceMin", matchReduce},    {"ReduceSumSquare", matchReduce}, {"ReduceL1", matchReduce},
      {"ReduceL2", matchReduce},     {"ReduceLogSum", matchReduce},    {"ReduceLogSumExp", matchReduce},
      {"ReduceProd", matchReduce}};
  auto it = matchers.find(node.op());
  if (it == matchers.end()) return noNative(why, node.op() + " has no native kernel");
  const Value* x = outer.empty() ? nullptr : outer[0];
  const Value* y = node.output(0);
  const bool anyType = node.op() == "Gather";  // row copies of any element type
  if (node.numOutputs() != 1 || !x || !x->shape().isStatic() || !y->shape().isStatic() ||
      (!anyType && (!isStaticF32(x) || !isStaticF32(y))))
    return noNative(why, node.op() + " not f32 with static shapes");
  return it->second(node, outer, x->shape().staticDims(), node.output(0)->shape().staticDims(), why);
}

std::optional<int64_t> contiguousSliceOffset(const Node& n, const std::vector<const Value*>& in) {
  const Value* x = in.empty() ? nullptr : in[0];
  const Value* y = n.output(0);
  if (n.op() != "Slice" || !x || !x->shape().isStatic() || !y->shape().isStatic() || x->dtype() != y->dtype() ||
      y->shape().numel() == std::optional<int64_t>(0))
    return std::nullopt;
  auto p = slicePiece(in, x->shape().staticDims(), y->shape().staticDims(), nullptr);
  if (!p) return std::nullopt;
  for (size_t d = 0; d < p->shape.size(); ++d)  // a dim of one element is read at one place whatever its stride
    if (p->shape[d] > 1 && p->xStrides[d] != p->yStrides[d]) return std::nullopt;
  return p->xOffset;
}

}  // namespace friction::codegen
