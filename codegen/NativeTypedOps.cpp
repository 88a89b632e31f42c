// Native kernels of the ops whose operands or results are not f32, or that
// have no compiled path (masks and their arithmetic: an attention mask built
// by comparisons, Not and Where, a padding mask cast to f32, a token mask's
// position ids): Cast and CastLike between element types; the comparisons,
// And/Or/Xor/Not, Where; Add/Sub/Mul/Div/Max/Min on integers and f64, Mod on
// any type; all with numpy broadcasting (codegen/TypedLoops.h); IsNaN, IsInf.
// They run on small tensors (masks, often constant but for fold-constants),
// so one serial loop each, but Cast, which a half-precision model (its ops
// widened to f32, codegen/Legalize.h) runs on activations: over the threads.
// The indexing and scanning ops of any type are
// NativeIndexOps.cpp's.
#include <cmath>
#include <functional>
#include <map>
#include <type_traits>
#include <vector>

#include "codegen/KernelAnalysis.h"
#include "codegen/NativeKernels.h"
#include "codegen/TypedLoops.h"
#include "ir/Error.h"

namespace friction::codegen {
namespace {

using Ints = std::vector<int64_t>;

// Casts of activations (a half model's per-op roundings, a quantized model's) are large enough to share out.
constexpr int64_t kParallelElements = int64_t(1) << 15;

// Cast with Tensor::castTo's semantics: floats to integers truncate and
// saturate, to bool compare with zero, integers wrap; f16 and bf16 go
// through float (rounded to nearest even).
class CastKernel : public NativeKernel {
 public:
  CastKernel(DType from, DType to) : from_(from), to_(to) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    if (!isHalf(from_)) return cast(from_, in[0].rawData(), out);
    const int64_t n = out.numel();
    // Widened to float: straight into an f32 result (a half model's every op input), else through a buffer.
    std::vector<float> buffer(to_ == DType::F32 ? 0 : static_cast<size_t>(n));
    float* wide = to_ == DType::F32 ? out.data<float>() : buffer.data();
    const uint16_t* h = in[0].data<uint16_t>();
#pragma omp parallel for schedule(static) if (n > kParallelElements)
    for (int64_t i = 0; i < n; ++i) wide[i] = from_ == DType::F16 ? halfToFloat(h[i]) : bf16ToFloat(h[i]);
    if (to_ != DType::F32) cast(DType::F32, wide, out);
  }
  std::string describe() const override {
    return "Cast " + std::string(dtypeName(from_)) + " to " + std::string(dtypeName(to_));
  }

 private:
  void cast(DType from, const void* src, Tensor& out) const {
    const int64_t n = out.numel();
    withElementType(from, [&](auto fromType) {
      using From = decltype(fromType);
      const From* x = static_cast<const From*>(src);
      if (isHalf(to_)) {
        uint16_t* y = out.data<uint16_t>();
#pragma omp parallel for schedule(static) if (n > kParallelElements)
        for (int64_t i = 0; i < n; ++i) y[i] = to_ == DType::F16 ? floatToHalf(float(x[i])) : floatToBf16(float(x[i]));
        return;
      }
      withElementType(to_, [&](auto toType) {
        using To = decltype(toType);
        To* y = out.data<To>();
#pragma omp parallel for schedule(static) if (n > kParallelElements)
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

  DType from_, to_;
};

enum class MaskOp {
#define FRICTION_MASK_OP(op, inputs) op,
#include "codegen/MaskOps.def"
#undef FRICTION_MASK_OP
};

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

// Arithmetic on integers and f64 (f32 is compiled through MLIR): a token mask's position ids, shapes computed at
// run time. The interpreter's semantics: integers wrap, integer division truncates toward zero and rejects a
// zero divisor, Max/Min propagate NaN from either side.
enum class ArithOp { Add, Sub, Mul, Div, Max, Min, Mod, ModC };  // ModC: Mod with fmod=1 (the dividend's sign)

class ArithKernel : public NativeKernel {
 public:
  ArithKernel(std::string node, std::string op, ArithOp kind, DType type, Ints shape, std::vector<Ints> strides)
      : node_(std::move(node)), op_(std::move(op)), kind_(kind), type_(type), shape_(std::move(shape)),
        strides_(std::move(strides)) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    withElementType(type_, [&](auto type) {
      using T = decltype(type);
      if constexpr (!std::is_same_v<T, bool>) {
        const T *a = in[0].data<T>(), *b = in[1].data<T>();
        T* y = out.data<T>();
        forEachBroadcast(shape_, strides_, [&](int64_t i, const Ints& o) { y[i] = apply<T>(a[o[0]], b[o[1]]); });
      }
    });
  }
  std::string describe() const override { return op_ + " " + std::string(dtypeName(type_)) + " (broadcast loop)"; }

 private:
  template <typename T>
  T apply(T x, T z) const {
    switch (kind_) {
      case ArithOp::Add: return T(x + z);
      case ArithOp::Sub: return T(x - z);
      case ArithOp::Mul: return T(x * z);
      case ArithOp::Max: return x != x || x > z ? x : z;
      case ArithOp::Min: return x != x || x < z ? x : z;
      case ArithOp::Div:
        if constexpr (std::is_integral_v<T>) {
          FRICTION_CHECK(z != 0, op_ + " '" + node_ + "': integer division by zero");
          if constexpr (std::is_signed_v<T>)
            if (z == T(-1)) return T(std::make_unsigned_t<T>(0) - std::make_unsigned_t<T>(x));  // wraps at the minimum
        }
        return T(x / z);
      case ArithOp::Mod:
      case ArithOp::ModC: {
        T m;
        if constexpr (std::is_floating_point_v<T>) {
          m = std::fmod(x, z);
        } else {
          FRICTION_CHECK(z != 0, op_ + " '" + node_ + "': integer division by zero");
          if constexpr (std::is_signed_v<T>)
            if (z == T(-1)) return T(0);
          m = T(x % z);
        }
        // Mod (fmod=0) as numpy's: the result takes the divisor's sign.
        if constexpr (std::is_signed_v<T>)
          if (kind_ == ArithOp::Mod && m != 0 && (m < 0) != (z < 0)) m = T(m + z);
        return m;
      }
    }
    return x;
  }

  std::string node_, op_;
  ArithOp kind_;
  DType type_;
  Ints shape_;
  std::vector<Ints> strides_;
};

std::unique_ptr<NativeKernel> matchArith(const Node& n, ArithOp kind, const std::vector<const Value*>& in,
                                         std::string* why) {
  const Value* y = n.output(0);
  if (in.size() != 2 || !in[0] || !in[1]) return noNative(why, n.op() + " of other than two operands");
  if (y->dtype() == DType::F32 && isSupportedElementwise(n)) return noNative(why, n.op() + " on f32 is compiled");
  if (!hasCType(y->dtype()) || y->dtype() == DType::Bool || in[0]->dtype() != y->dtype() ||
      in[1]->dtype() != y->dtype())
    return noNative(why, n.op() + " on f16/bf16, bool or mixed types");
  if (!y->shape().isStatic()) return noNative(why, n.op() + " of a dynamic shape");
  const Ints ys = y->shape().staticDims();
  std::vector<Ints> strides;
  for (const Value* v : in) {
    if (!v->shape().isStatic() || v->shape().rank() > ys.size()) return noNative(why, n.op() + " operand not static");
    strides.push_back(broadcastStrides(v->shape().staticDims(), ys));
  }
  return std::make_unique<ArithKernel>(n.name(), n.op(), kind, y->dtype(), ys, std::move(strides));
}

// IsNaN and IsInf of f32 or f64 (bool out).
class FloatClassKernel : public NativeKernel {
 public:
  FloatClassKernel(std::string op, DType type, bool negative, bool positive)
      : op_(std::move(op)), isNan_(op_ == "IsNaN"), type_(type), negative_(negative), positive_(positive) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    withElementType(type_, [&](auto type) {
      using T = decltype(type);
      if constexpr (std::is_floating_point_v<T>) {
        const T* x = in[0].data<T>();
        bool* y = out.data<bool>();
        for (int64_t i = 0; i < out.numel(); ++i)
          y[i] = isNan_ ? std::isnan(x[i]) : std::isinf(x[i]) && (x[i] > 0 ? positive_ : negative_);
      }
    });
  }
  std::string describe() const override { return op_ + " (element loop)"; }

 private:
  std::string op_;
  bool isNan_;  // else IsInf
  DType type_;
  bool negative_, positive_;
};

std::unique_ptr<NativeKernel> matchCast(const Node& n, const std::vector<const Value*>& in, std::string* why) {
  const Value *x = in[0], *y = n.output(0);
  if (!x->shape().isStatic() || !y->shape().isStatic()) return noNative(why, n.op() + " of a dynamic shape");
  return std::make_unique<CastKernel>(x->dtype(), y->dtype());
}

std::unique_ptr<NativeKernel> matchFloatClass(const Node& n, const std::vector<const Value*>& in, std::string* why) {
  const Value* x = in[0];
  if (!x->shape().isStatic() || (x->dtype() != DType::F32 && x->dtype() != DType::F64))
    return noNative(why, n.op() + " of a dynamic shape, or of other than f32/f64");
  return std::make_unique<FloatClassKernel>(n.op(), x->dtype(), n.attrInt("detect_negative", 1) != 0,
                                            n.attrInt("detect_positive", 1) != 0);
}

}  // namespace

std::unique_ptr<NativeKernel> matchTypedOp(const Node& node, const std::vector<const Value*>& outer, std::string* why) {
  static const std::map<std::string, NativeMatcher> matchers = [] {
    std::map<std::string, NativeMatcher> m = {
        {"Cast", matchCast}, {"CastLike", matchCast}, {"IsNaN", matchFloatClass}, {"IsInf", matchFloatClass}};
#define FRICTION_MASK_OP(op, inputs)                                                 \
  m[#op] = [](const Node& n, const std::vector<const Value*>& in, std::string* why) { \
    return matchMask(n, MaskOp::op, in, why);                                         \
  };
#include "codegen/MaskOps.def"
#undef FRICTION_MASK_OP
    const std::pair<const char*, ArithOp> arithmetic[] = {{"Add", ArithOp::Add}, {"Sub", ArithOp::Sub},
                                                          {"Mul", ArithOp::Mul}, {"Div", ArithOp::Div},
                                                          {"Max", ArithOp::Max}, {"Min", ArithOp::Min},
                                                          {"Mod", ArithOp::Mod}};
    for (const auto& [op, kind] : arithmetic)
      m[op] = [kind](const Node& n, const std::vector<const Value*>& in, std::string* why) {
        return matchArith(n, kind == ArithOp::Mod && n.attrInt("fmod", 0) ? ArithOp::ModC : kind, in, why);
      };
    return m;
  }();
  auto it = matchers.find(node.op());
  if (it == matchers.end() || node.numOutputs() != 1 || outer.empty() || !outer[0])
    return noNative(why, node.op() + " is not a typed op");
  return it->second(node, outer, why);
}

}  // namespace friction::codegen
