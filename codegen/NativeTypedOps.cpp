// Native kernels of the ops whose operands or results are not f32 (masks and
// their arithmetic: an attention mask built by comparisons, Not and Where, a
// padding mask cast to f32): Cast between element types, the comparisons,
// And/Or/Xor/Not, Where, with numpy broadcasting. They run on small tensors
// (masks, often constant but for fold-constants), so one serial loop each.
#include <map>
#include <type_traits>

#include "codegen/NativeKernels.h"
#include "runtime/ukernels/Copy.h"

namespace friction::codegen {
namespace {

using Ints = std::vector<int64_t>;

bool hasCType(DType t) {
  return withElementType(t, [](auto) {});
}

// Cast with Tensor::castTo's semantics: floats to integers truncate and
// saturate, to bool compare with zero, integers wrap.
class CastKernel : public NativeKernel {
 public:
  CastKernel(DType from, DType to) : from_(from), to_(to) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    const int64_t n = out.numel();
    withElementType(from_, [&](auto fromType) {
      withElementType(to_, [&](auto toType) {
        using From = decltype(fromType);
        using To = decltype(toType);
        const From* x = in[0].data<From>();
        To* y = out.data<To>();
        for (int64_t i = 0; i < n; ++i) {
          if constexpr (std::is_same_v<To, bool>)
            y[i] = x[i] != From(0);
          else if constexpr (std::is_floating_point_v<From> && !std::is_floating_point_v<To>)
            y[i] = floatToInt<To>(double(x[i]));
          else
            y[i] = To(x[i]);
        }
      });
    });
  }
  std::string describe() const override {
    return "Cast " + std::string(dtypeName(from_)) + " to " + std::string(dtypeName(to_));
  }

 private:
  DType from_, to_;
};

enum class MaskOp {
#define FRICTION_MASK_OP(op, inputs) op,
#include "codegen/MaskOps.def"
#undef FRICTION_MASK_OP
};

// Calls f(outputIndex, offsets) for every element of `shape`, where
// offsets[k] is the element of operand k under its broadcast `strides`.
template <typename F>
void forEachBroadcast(const Ints& shape, const std::vector<Ints>& strides, F&& f) {
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  Ints index(shape.size(), 0), offsets(strides.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    f(i, offsets);
    for (size_t d = shape.size(); d-- > 0;) {
      for (size_t k = 0; k < strides.size(); ++k) offsets[k] += strides[k][d];
      if (++index[d] < shape[d]) break;
      for (size_t k = 0; k < strides.size(); ++k) offsets[k] -= strides[k][d] * shape[d];
      index[d] = 0;
    }
  }
}

// An operand of shape `xs` read at the indices of `ys` (right-aligned, stride 0 on broadcast dims).
Ints broadcastStrides(const Ints& xs, const Ints& ys) {
  const Ints dense = ukernels::denseStrides(xs);
  Ints s(ys.size(), 0);
  for (size_t d = 0; d < xs.size(); ++d)
    if (xs[d] != 1) s[ys.size() - xs.size() + d] = dense[d];
  return s;
}

class MaskKernel : public NativeKernel {
 public:
  MaskKernel(std::string op, MaskOp kind, DType operand, Ints shape, std::vector<Ints> strides)
      : op_(std::move(op)), kind_(kind), operand_(operand), shape_(std::move(shape)), strides_(std::move(strides)) {}

  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    if (kind_ == MaskOp::Where) {
      withElementType(operand_, [&](auto type) {
        using T = decltype(type);
        const bool* c = in[0].data<bool>();
        const T *a = in[1].data<T>(), *b = in[2].data<T>();
        T* y = out.data<T>();
        forEachBroadcast(shape_, strides_, [&](int64_t i, const Ints& o) { y[i] = c[o[0]] ? a[o[1]] : b[o[2]]; });
      });
      return;
    }
    bool* y = out.data<bool>();
    if (kind_ == MaskOp::Not || kind_ == MaskOp::And || kind_ == MaskOp::Or || kind_ == MaskOp::Xor) {
      const bool* a = in[0].data<bool>();
      const bool* b = kind_ == MaskOp::Not ? a : in[1].data<bool>();
      forEachBroadcast(shape_, strides_, [&](int64_t i, const Ints& o) {
        const bool x = a[o[0]], z = kind_ == MaskOp::Not ? false : b[o[1]];
        y[i] = kind_ == MaskOp::Not ? !x : kind_ == MaskOp::And ? x && z : kind_ == MaskOp::Or ? x || z : x != z;
      });
      return;
    }
    withElementType(operand_, [&](auto type) {
      using T = decltype(type);
      const T *a = in[0].data<T>(), *b = in[1].data<T>();
      forEachBroadcast(shape_, strides_, [&](int64_t i, const Ints& o) {
        const T x = a[o[0]], z = b[o[1]];
        switch (kind_) {
          case MaskOp::Equal: y[i] = x == z; break;
          case MaskOp::Less: y[i] = x < z; break;
          case MaskOp::LessOrEqual: y[i] = x <= z; break;
          case MaskOp::Greater: y[i] = x > z; break;
          default: y[i] = x >= z; break;
        }
      });
    });
  }
  std::string describe() const override { return op_ + " (broadcast loop)"; }

 private:
  std::string op_;
  MaskOp kind_;
  DType operand_;  // of the compared values; of Where's branches
  Ints shape_;
  std::vector<Ints> strides_;
};

std::unique_ptr<NativeKernel> matchMask(const Node& n, MaskOp kind, const std::vector<const Value*>& in,
                                        std::string* why) {
  const Value* y = n.output(0);
  if (!y->shape().isStatic()) return noNative(why, n.op() + " of a dynamic shape");
  const Ints ys = y->shape().staticDims();
  std::vector<Ints> strides;
  for (const Value* v : in) {
    if (!v || !v->shape().isStatic() || v->shape().rank() > ys.size()) return noNative(why, n.op() + " operand not static");
    strides.push_back(broadcastStrides(v->shape().staticDims(), ys));
  }
  const DType operand = in[kind == MaskOp::Where ? 1 : 0]->dtype();
  if (!hasCType(operand)) return noNative(why, n.op() + " on f16/bf16");
  return std::make_unique<MaskKernel>(n.op(), kind, operand, ys, std::move(strides));
}

}  // namespace

std::unique_ptr<NativeKernel> matchTypedOp(const Node& node, const std::vector<const Value*>& outer, std::string* why) {
  static const std::map<std::string, MaskOp> masks = {
#define FRICTION_MASK_OP(op, inputs) {#op, MaskOp::op},
#include "codegen/MaskOps.def"
#undef FRICTION_MASK_OP
  };
  if (node.numOutputs() != 1 || outer.empty() || !outer[0]) return noNative(why, node.op() + " is not a typed op");
  if (auto it = masks.find(node.op()); it != masks.end()) return matchMask(node, it->second, outer, why);
  if (node.op() != "Cast") return noNative(why, node.op() + " is not a typed op");
  const Value *x = outer[0], *y = node.output(0);
  if (!x->shape().isStatic() || !y->shape().isStatic()) return noNative(why, "Cast of a dynamic shape");
  if (!hasCType(x->dtype()) || !hasCType(y->dtype())) return noNative(why, "Cast from or to f16/bf16");
  return std::make_unique<CastKernel>(x->dtype(), y->dtype());
}

}  // namespace friction::codegen
