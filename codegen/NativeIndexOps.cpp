// Native kernels of the ops that index or scan along an axis, on any element
// type: ArgMax/ArgMin (int64 out), TopK (two results), GatherElements,
// ScatterElements and GatherND of run-time indices (checked on every run),
// CumSum, Trilu, EyeLike; GridSample (f32). Each follows the interpreter's order (first or
// last of ties, stable ties, sums in the element type), so results agree
// exactly.
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <type_traits>
#include <vector>

#include "codegen/NativeKernels.h"
#include "codegen/TypedLoops.h"
#include "ir/Error.h"
#include "ir/ops/TensorShapes.h"
#include "runtime/ukernels/Copy.h"

namespace friction::codegen {
namespace {

using Ints = std::vector<int64_t>;

// x of shape `xs` viewed as [outer, len, inner] around `axis` (negative counts from the end); nullopt when the
// axis is out of range.
struct AxisView {
  int64_t outer = 1, len = 1, inner = 1;
};
std::optional<AxisView> viewAround(const Ints& xs, int64_t axis) {
  const int64_t rank = int64_t(xs.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return std::nullopt;
  AxisView v;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? v.outer : d == axis ? v.len : v.inner) *= xs[size_t(d)];
  return v;
}

// ArgMax/ArgMin: x as [outer, len, inner], the index of the first (or, with select_last_index, the last) best
// value along the middle, as the interpreter's scan chooses it; int64 out.
class ArgReduceKernel : public NativeKernel {
 public:
  ArgReduceKernel(std::string op, DType operand, bool isMax, bool last, int64_t outer, int64_t len, int64_t inner)
      : op_(std::move(op)), operand_(operand), isMax_(isMax), last_(last), outer_(outer), len_(len), inner_(inner) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    withElementType(operand_, [&](auto type) {
      using T = decltype(type);
      const T* x = in[0].data<T>();
      int64_t* y = out.data<int64_t>();
      std::fill(y, y + outer_ * inner_, 0);
      for (int64_t o = 0; o < outer_; ++o) {  // rows of the axis in order, each compared with the best so far
        const T* row0 = x + o * len_ * inner_;
        int64_t* arg = y + o * inner_;
        for (int64_t r = 1; r < len_; ++r)
          for (int64_t i = 0; i < inner_; ++i) {
            const T v = row0[r * inner_ + i], best = row0[arg[i] * inner_ + i];
            if (isMax_ ? (v > best || (last_ && v == best)) : (v < best || (last_ && v == best))) arg[i] = r;
          }
      }
    });
  }
  std::string describe() const override { return op_ + " (axis scan)"; }

 private:
  std::string op_;
  DType operand_;
  bool isMax_, last_;
  int64_t outer_, len_, inner_;
};

std::unique_ptr<NativeKernel> matchArgReduce(const Node& n, const std::vector<const Value*>& in, std::string* why) {
  const Value* x = in[0];
  if (!x->shape().isStatic() || !n.output(0)->shape().isStatic()) return noNative(why, n.op() + " of a dynamic shape");
  if (!hasCType(x->dtype()) || x->dtype() == DType::Bool) return noNative(why, n.op() + " on f16/bf16 or bool");
  const auto v = viewAround(x->shape().staticDims(), n.attrInt("axis", 0));
  if (!v || v->len == 0) return noNative(why, n.op() + " axis out of range or empty");
  return std::make_unique<ArgReduceKernel>(n.op(), x->dtype(), n.op() == "ArgMax", n.attrInt("select_last_index", 0) != 0,
                                           v->outer, v->len, v->inner);
}

// GatherElements and ScatterElements address data at each index position with its axis coordinate replaced by
// the index there: `visit(i, offset)` for every element i of the indices, offset its element of data. Indices are
// read (and checked) on every run.
struct AlongAxis {
  std::string node, op;
  Ints shape, strides;  // the indices' shape; data's strides there, 0 along the axis
  int64_t axisStride = 0, extent = 0;

  template <typename F>
  void forEach(const Tensor& indexTensor, F&& visit) const {
    const std::vector<int64_t> indices = indexTensor.toInt64Vector();
    forEachBroadcast(shape, {strides}, [&](int64_t i, const Ints& o) {
      int64_t k = indices[size_t(i)];
      FRICTION_CHECK(k >= -extent && k < extent, op + " '" + node + "': index " + std::to_string(k) +
                                                     " out of range for an axis of " + std::to_string(extent));
      visit(i, o[0] + (k < 0 ? k + extent : k) * axisStride);
    });
  }
};

// The addressing of `n` (data in[0], indices in[1]), or nullopt with the reason in `why`: static shapes, integer
// indices of data's rank, no wider than data off the axis.
std::optional<AlongAxis> alongAxis(const Node& n, const std::vector<const Value*>& in, std::string* why) {
  auto no = [&](const std::string& reason) {
    noNative(why, n.op() + reason);
    return std::nullopt;
  };
  if (in.size() < 2 || !in[1]) return no(" without indices");
  const Value *x = in[0], *idx = in[1];
  if (!x->shape().isStatic() || !idx->shape().isStatic() || !isInteger(idx->dtype()))
    return no(" of a dynamic shape or non-integer indices");
  const Ints xs = x->shape().staticDims(), is = idx->shape().staticDims();
  const int64_t rank = int64_t(xs.size());
  int64_t axis = n.attrInt("axis", 0);
  if (axis < 0) axis += rank;
  if (is.size() != xs.size() || axis < 0 || axis >= rank)
    return no(" ranks or axis disagree");
  for (size_t d = 0; d < xs.size(); ++d)
    if (int64_t(d) != axis && is[d] > xs[d]) return no(" indices wider than the data");
  AlongAxis a{n.name(), n.op(), is, ukernels::denseStrides(xs)};
  a.axisStride = a.strides[size_t(axis)], a.extent = xs[size_t(axis)];
  a.strides[size_t(axis)] = 0;
  return a;
}

// GatherElements: y[i] = data at index position i; any element type (a byte copy, as the interpreter's).
class GatherElementsKernel : public NativeKernel {
 public:
  GatherElementsKernel(AlongAxis along, size_t elementSize) : along_(std::move(along)), elementSize_(elementSize) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    const char* x = static_cast<const char*>(in[0].rawData());
    char* y = static_cast<char*>(out.rawData());
    along_.forEach(in[1], [&](int64_t i, int64_t offset) {
      std::memcpy(y + size_t(i) * elementSize_, x + size_t(offset) * elementSize_, elementSize_);
    });
  }
  std::string describe() const override { return "GatherElements (index loop)"; }

 private:
  AlongAxis along_;
  size_t elementSize_;
};

// ScatterElements: a copy of data, then the update at each index position written there (reduction none, the
// last write to a position winning, as in the interpreter's order) or combined with what is there.
class ScatterElementsKernel : public NativeKernel {
 public:
  enum class Reduction { None, Add, Mul, Max, Min };
  ScatterElementsKernel(AlongAxis along, DType type, Reduction reduction)
      : along_(std::move(along)), type_(type), reduction_(reduction) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    std::memcpy(out.rawData(), in[0].rawData(), out.byteSize());
    withElementType(type_, [&](auto type) {
      using T = decltype(type);
      const T* u = in[2].data<T>();
      T* y = out.data<T>();
      along_.forEach(in[1], [&](int64_t i, int64_t offset) {
        T& d = y[offset];
        const T v = u[i];
        if (reduction_ == Reduction::None) d = v;
        else if constexpr (!std::is_same_v<T, bool>)
          d = reduction_ == Reduction::Add   ? T(d + v)
              : reduction_ == Reduction::Mul ? T(d * v)
              : reduction_ == Reduction::Max ? std::max(d, v)
                                             : std::min(d, v);
      });
    });
  }
  std::string describe() const override { return "ScatterElements (index loop)"; }

 private:
  AlongAxis along_;
  DType type_;
  Reduction reduction_;
};

std::unique_ptr<NativeKernel> matchIndexElements(const Node& n, const std::vector<const Value*>& in, std::string* why) {
  auto along = alongAxis(n, in, why);
  if (!along) return nullptr;
  const DType type = in[0]->dtype();
  if (n.op() == "GatherElements") return std::make_unique<GatherElementsKernel>(std::move(*along), dtypeSize(type));
  const std::string reduction = n.attrString("reduction", "none");
  if (in.size() != 3 || !in[2] || !in[2]->shape().isStatic() || in[2]->shape().staticDims() != along->shape ||
      in[2]->dtype() != type)
    return noNative(why, "ScatterElements updates do not match its indices");
  using R = ScatterElementsKernel::Reduction;
  static const std::map<std::string, R> reductions = {
      {"none", R::None}, {"add", R::Add}, {"mul", R::Mul}, {"max", R::Max}, {"min", R::Min}};
  auto it = reductions.find(reduction);
  if (!hasCType(type) || it == reductions.end() || (it->second != R::None && type == DType::Bool))
    return noNative(why, "ScatterElements on f16/bf16, or reducing bools or by '" + reduction + "'");
  return std::make_unique<ScatterElementsKernel>(std::move(*along), type, it->second);
}

// GatherND: for each index tuple (the last axis of the indices, after `batch_dims` leading dims shared with the
// data), the slice of data it addresses, copied whole; tuples read (and checked) on every run; any element type.
class GatherNdKernel : public NativeKernel {
 public:
  GatherNdKernel(std::string node, size_t elementSize, Ints dataShape, int64_t batchDims, int64_t tupleLength)
      : node_(std::move(node)), elementSize_(elementSize), data_(std::move(dataShape)), batchDims_(batchDims),
        m_(tupleLength) {
    strides_ = ukernels::denseStrides(data_);
    for (size_t d = size_t(batchDims_ + m_); d < data_.size(); ++d) slice_ *= data_[d];
    for (size_t d = 0; d < size_t(batchDims_); ++d) batches_ *= data_[d];
  }
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    const std::vector<int64_t> indices = in[1].toInt64Vector();
    const int64_t tuples = m_ ? int64_t(indices.size()) / m_ : int64_t(indices.size());
    const int64_t perBatch = std::max<int64_t>(tuples / std::max<int64_t>(batches_, 1), 1);
    const int64_t batchStride = batchDims_ ? strides_[size_t(batchDims_ - 1)] : 0;
    const char* x = static_cast<const char*>(in[0].rawData());
    char* y = static_cast<char*>(out.rawData());
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t offset = (t / perBatch) * batchStride;
      for (int64_t j = 0; j < m_; ++j) {
        const int64_t extent = data_[size_t(batchDims_ + j)];
        int64_t k = indices[size_t(t * m_ + j)];
        FRICTION_CHECK(k >= -extent && k < extent, "GatherND '" + node_ + "': index " + std::to_string(k) +
                                                       " out of range for an axis of " + std::to_string(extent));
        offset += (k < 0 ? k + extent : k) * strides_[size_t(batchDims_ + j)];
      }
      std::memcpy(y + size_t(t * slice_) * elementSize_, x + size_t(offset) * elementSize_, size_t(slice_) * elementSize_);
    }
  }
  std::string describe() const override { return "GatherND (slice copies)"; }

 private:
  std::string node_;
  size_t elementSize_;
  Ints data_, strides_;
  int64_t batchDims_, m_, slice_ = 1, batches_ = 1;
};

std::unique_ptr<NativeKernel> matchGatherNd(const Node& n, const std::vector<const Value*>& in, std::string* why) {
  if (in.size() < 2 || !in[1]) return noNative(why, "GatherND without indices");
  const Value *x = in[0], *idx = in[1];
  if (!x->shape().isStatic() || !idx->shape().isStatic() || !isInteger(idx->dtype()) || idx->shape().rank() == 0)
    return noNative(why, "GatherND of a dynamic shape or non-integer indices");
  const Ints xs = x->shape().staticDims(), is = idx->shape().staticDims();
  const int64_t b = n.attrInt("batch_dims", 0), m = is.back();
  if (b < 0 || b >= int64_t(is.size()) || b + m > int64_t(xs.size()))
    return noNative(why, "GatherND indices do not fit the data");
  return std::make_unique<GatherNdKernel>(n.name(), dtypeSize(x->dtype()), xs, b, m);
}

// EyeLike: ones on the k-th diagonal of a 2-D result of the input's shape, zeros elsewhere (the input's data is
// not read).
class EyeLikeKernel : public NativeKernel {
 public:
  EyeLikeKernel(DType type, int64_t rows, int64_t cols, int64_t k) : type_(type), rows_(rows), cols_(cols), k_(k) {}
  void run(const std::vector<Tensor>&, Tensor& out) const override {
    std::memset(out.rawData(), 0, out.byteSize());
    withElementType(type_, [&](auto type) {
      using T = decltype(type);
      for (int64_t i = std::max<int64_t>(0, -k_); i < rows_ && i + k_ < cols_; ++i) out.data<T>()[i * cols_ + i + k_] = T(1);
    });
  }
  std::string describe() const override { return "EyeLike (diagonal)"; }

 private:
  DType type_;
  int64_t rows_, cols_, k_;
};

// TopK along an axis, x as [outer, len, inner]: each lane's k largest (or smallest) values, ties in index order
// as the interpreter's stable sort leaves them, then their indices (int64); any numeric type.
class TopKKernel : public NativeKernel {
 public:
  TopKKernel(DType type, bool largest, int64_t outer, int64_t len, int64_t inner, int64_t k)
      : type_(type), largest_(largest), outer_(outer), len_(len), inner_(inner), k_(k) {}
  void run(const std::vector<Tensor>&, Tensor&) const override { throw Error("TopK has two results: runAll"); }
  void runAll(const std::vector<Tensor>& in, std::vector<Tensor>& outs) const override {
    withElementType(type_, [&](auto type) {
      using T = decltype(type);
      const T* x = in[0].data<T>();
      T* values = outs[0].data<T>();
      int64_t* indices = outs[1].data<int64_t>();
      std::vector<int64_t> order(static_cast<size_t>(len_));
      for (int64_t o = 0; o < outer_; ++o)
        for (int64_t i = 0; i < inner_; ++i) {
          const T* lane = x + o * len_ * inner_ + i;
          std::iota(order.begin(), order.end(), 0);
          std::partial_sort(order.begin(), order.begin() + k_, order.end(), [&](int64_t p, int64_t q) {
            const T a = lane[p * inner_], b = lane[q * inner_];
            return (largest_ ? a > b : a < b) || (a == b && p < q);
          });
          for (int64_t j = 0; j < k_; ++j) {
            values[(o * k_ + j) * inner_ + i] = lane[order[size_t(j)] * inner_];
            indices[(o * k_ + j) * inner_ + i] = order[size_t(j)];
          }
        }
    });
  }
  std::string describe() const override { return "TopK (partial sort)"; }

 private:
  DType type_;
  bool largest_;
  int64_t outer_, len_, inner_, k_;
};

std::unique_ptr<NativeKernel> matchTopK(const Node& n, const std::vector<const Value*>& in, std::string* why) {
  const Value* x = in[0];
  const Tensor* kData = in.size() > 1 && in[1] ? constantData(in[1]) : nullptr;
  if (!kData || kData->numel() != 1 || !isInteger(kData->dtype())) return noNative(why, "TopK k is not a constant");
  if (!x->shape().isStatic() || !hasCType(x->dtype()) || x->dtype() == DType::Bool || x->shape().rank() == 0)
    return noNative(why, "TopK of a dynamic shape, a scalar, f16/bf16 or bool");
  const auto v = viewAround(x->shape().staticDims(), n.attrInt("axis", -1));
  const int64_t k = kData->elementAsInt(0);
  if (!v || k < 0 || k > v->len) return noNative(why, "TopK axis or k out of range");
  return std::make_unique<TopKKernel>(x->dtype(), n.attrInt("largest", 1) != 0, v->outer, v->len, v->inner, k);
}

// CumSum over x as [outer, len, inner], in x's own type and the interpreter's order (a token mask's int64
// cumulative sum gives position ids): each step of the axis adds a row to the running sums of the row before.
class CumSumKernel : public NativeKernel {
 public:
  CumSumKernel(DType type, bool exclusive, bool reverse, int64_t outer, int64_t len, int64_t inner)
      : type_(type), exclusive_(exclusive), reverse_(reverse), outer_(outer), len_(len), inner_(inner) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    withElementType(type_, [&](auto type) {
      using T = decltype(type);
      const T* x = in[0].data<T>();
      T* y = out.data<T>();
      std::vector<T> sum(static_cast<size_t>(inner_));
      for (int64_t o = 0; o < outer_; ++o) {
        std::fill(sum.begin(), sum.end(), T(0));
        for (int64_t s = 0; s < len_; ++s) {
          const int64_t row = (o * len_ + (reverse_ ? len_ - 1 - s : s)) * inner_;
          for (int64_t i = 0; i < inner_; ++i) {
            if (exclusive_) y[row + i] = sum[size_t(i)];
            sum[size_t(i)] = T(sum[size_t(i)] + x[row + i]);
            if (!exclusive_) y[row + i] = sum[size_t(i)];
          }
        }
      }
    });
  }
  std::string describe() const override { return "CumSum (row scan)"; }

 private:
  DType type_;
  bool exclusive_, reverse_;
  int64_t outer_, len_, inner_;
};

std::unique_ptr<NativeKernel> matchCumSum(const Node& n, const std::vector<const Value*>& in, std::string* why) {
  const Value* x = in[0];
  const Tensor* axisData = in.size() > 1 && in[1] ? constantData(in[1]) : nullptr;
  if (!axisData || axisData->numel() != 1 || !isInteger(axisData->dtype()))
    return noNative(why, "CumSum axis is not a constant");
  if (!x->shape().isStatic() || !hasCType(x->dtype()) || x->dtype() == DType::Bool)
    return noNative(why, "CumSum of a dynamic shape, f16/bf16 or bool");
  const auto v = viewAround(x->shape().staticDims(), axisData->elementAsInt(0));
  if (!v) return noNative(why, "CumSum axis out of range");
  return std::make_unique<CumSumKernel>(x->dtype(), n.attrInt("exclusive", 0) != 0, n.attrInt("reverse", 0) != 0,
                                        v->outer, v->len, v->inner);
}

// Trilu: each of the `matrices` trailing [rows, cols] matrices keeps the elements on one side of the k-th
// diagonal and zeroes the rest; a byte copy, so any element type.
class TriluKernel : public NativeKernel {
 public:
  TriluKernel(size_t elementSize, int64_t matrices, int64_t rows, int64_t cols, int64_t k, bool upper)
      : elementSize_(elementSize), matrices_(matrices), rows_(rows), cols_(cols), k_(k), upper_(upper) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    const char* x = static_cast<const char*>(in[0].rawData());
    char* y = static_cast<char*>(out.rawData());
    std::memset(y, 0, out.byteSize());
    for (int64_t m = 0; m < matrices_; ++m)
      for (int64_t i = 0; i < rows_; ++i) {  // kept: columns j with j - i >= k (upper) or j - i <= k (lower)
        const int64_t from = upper_ ? std::clamp(i + k_, int64_t(0), cols_) : 0;
        const int64_t to = upper_ ? cols_ : std::clamp(i + k_ + 1, int64_t(0), cols_);
        const size_t row = size_t((m * rows_ + i) * cols_);
        if (to > from) std::memcpy(y + (row + size_t(from)) * elementSize_, x + (row + size_t(from)) * elementSize_,
                                   size_t(to - from) * elementSize_);
      }
  }
  std::string describe() const override { return "Trilu (row copies)"; }

 private:
  size_t elementSize_;
  int64_t matrices_, rows_, cols_, k_;
  bool upper_;
};

std::unique_ptr<NativeKernel> matchTrilu(const Node& n, const std::vector<const Value*>& in, std::string* why) {
  const Value* x = in[0];
  if (!x->shape().isStatic() || x->shape().rank() < 2) return noNative(why, "Trilu of a dynamic shape or rank < 2");
  int64_t k = 0;
  if (in.size() > 1 && in[1]) {
    const Tensor* t = constantData(in[1]);
    if (!t || t->numel() != 1 || !isInteger(t->dtype())) return noNative(why, "Trilu k is not a constant");
    k = t->elementAsInt(0);
  }
  const Ints xs = x->shape().staticDims();
  const int64_t rows = xs[xs.size() - 2], cols = xs.back();
  int64_t matrices = 1;
  for (size_t d = 0; d + 2 < xs.size(); ++d) matrices *= xs[d];
  return std::make_unique<TriluKernel>(dtypeSize(x->dtype()), matrices, rows, cols, k, n.attrInt("upper", 1) != 0);
}

std::unique_ptr<NativeKernel> matchEyeLike(const Node& n, const std::vector<const Value*>&, std::string* why) {
  const Value* y = n.output(0);
  if (!y->shape().isStatic() || !hasCType(y->dtype()) || y->shape().rank() != 2)
    return noNative(why, "EyeLike not static, 2-D, or of f16/bf16");
  const Ints ys = y->shape().staticDims();
  return std::make_unique<EyeLikeKernel>(y->dtype(), ys[0], ys[1], n.attrInt("k", 0));
}

// GridSample of f32 over r spatial dims: each output position's taps per dim (gridSampleTaps, the
// interpreter's), then every channel a weighted sum over their combinations; positions over the threads.
class GridSampleKernel : public NativeKernel {
 public:
  GridSampleKernel(GridSampleParams p, Ints xs, Ints positions) : p_(p), xs_(std::move(xs)), positions_(std::move(positions)) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    const size_t r = xs_.size() - 2;
    const Ints spatial(xs_.begin() + 2, xs_.end()), strides = ukernels::denseStrides(spatial);
    const int64_t batch = xs_[0], channels = xs_[1], pixels = std::accumulate(spatial.begin(), spatial.end(), int64_t(1),
                                                                               std::multiplies<>());
    const int64_t positions = std::accumulate(positions_.begin(), positions_.end(), int64_t(1), std::multiplies<>());
    const float *x = in[0].data<float>(), *grid = in[1].data<float>();
    float* y = out.data<float>();
#pragma omp parallel
    {
      std::vector<std::vector<int64_t>> idx(r);
      std::vector<std::vector<float>> w(r);
      std::vector<int64_t> offsets, grown;  // each combination of taps: its element offset (or -1) and weight
      std::vector<float> weights, grownWeights;
#pragma omp for schedule(static)
      for (int64_t np = 0; np < batch * positions; ++np) {
        const int64_t n = np / positions, pos = np % positions;
        for (size_t d = 0; d < r; ++d) gridSampleTaps(p_, grid[np * int64_t(r) + int64_t(r - 1 - d)], spatial[d], idx[d], w[d]);
        offsets.assign(1, 0), weights.assign(1, 1.0f);
        for (size_t d = 0; d < r; ++d) {
          grown.clear(), grownWeights.clear();
          for (size_t a = 0; a < offsets.size(); ++a)
            for (size_t t = 0; t < idx[d].size(); ++t) {
              const bool outside = offsets[a] < 0 || idx[d][t] < 0;
              grown.push_back(outside ? -1 : offsets[a] + idx[d][t] * strides[d]);
              grownWeights.push_back(weights[a] * w[d][t]);
            }
          offsets.swap(grown), weights.swap(grownWeights);
        }
        for (int64_t c = 0; c < channels; ++c) {
          const float* plane = x + (n * channels + c) * pixels;
          float sum = 0;
          for (size_t a = 0; a < offsets.size(); ++a)
            if (offsets[a] >= 0) sum += weights[a] * plane[offsets[a]];
          y[(n * channels + c) * positions + pos] = sum;
        }
      }
    }
  }
  std::string describe() const override { return "GridSample (taps a position)"; }

 private:
  GridSampleParams p_;
  Ints xs_, positions_;
};

std::unique_ptr<NativeKernel> matchGridSample(const Node& n, const std::vector<const Value*>& in, std::string* why) {
  if (in.size() < 2 || !isStaticF32(in[0]) || !isStaticF32(in[1]) || !isStaticF32(n.output(0)))
    return noNative(why, "GridSample not f32 with static shapes");
  const Ints xs = in[0]->shape().staticDims(), gs = in[1]->shape().staticDims();
  if (xs.size() < 3 || gs.size() != xs.size()) return noNative(why, "GridSample's X and grid ranks differ");
  return std::make_unique<GridSampleKernel>(gridSampleParams(n), xs, Ints(gs.begin() + 1, gs.end() - 1));
}

}  // namespace

std::unique_ptr<NativeKernel> matchIndexOp(const Node& node, const std::vector<const Value*>& outer, std::string* why) {
  static const std::map<std::string, NativeMatcher> matchers = {
      {"ArgMax", matchArgReduce},   {"ArgMin", matchArgReduce},       {"TopK", matchTopK},
      {"GatherElements", matchIndexElements}, {"ScatterElements", matchIndexElements},
      {"GatherND", matchGatherNd},  {"CumSum", matchCumSum},          {"Trilu", matchTrilu},
      {"EyeLike", matchEyeLike},    {"GridSample", matchGridSample}};
  auto it = matchers.find(node.op());
  if (it == matchers.end() || node.numOutputs() != (node.op() == "TopK" ? 2u : 1u) || outer.empty() || !outer[0])
    return noNative(why, node.op() + " is not an indexing op");
  return it->second(node, outer, why);
}

}  // namespace friction::codegen
