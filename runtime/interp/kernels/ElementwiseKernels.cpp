// Reference kernels of the elementwise op family. Every op is an instance of
// a few templates (unary map, broadcasting binary map, variadic fold) driven
// by a generic lambda, so the per-op code is just its formula.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ir/ops/ShapeHelpers.h"
#include "runtime/interp/KernelRegistry.h"
#include "runtime/interp/kernels/KernelUtil.h"

namespace friction::interp {
namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

// Below this many elements, starting threads costs more than it saves.
constexpr int64_t kParallelMin = int64_t(1) << 15;

// The C++ element types a kernel is instantiated for (halves are upcast first).
enum class Types { Floats, SignedNumbers, Numbers, Unsigned, Bools, All };

template <Types S, typename Fn>
auto dispatch(const Node& node, DType t, Fn&& fn) {
  constexpr bool ints = S == Types::SignedNumbers || S == Types::Numbers || S == Types::All;
  constexpr bool uints = S == Types::Unsigned || S == Types::Numbers || S == Types::All;
  switch (t) {
    case DType::F32: if constexpr (S != Types::Unsigned && S != Types::Bools) return fn(float{}); break;
    case DType::F64: if constexpr (S != Types::Unsigned && S != Types::Bools) return fn(double{}); break;
    case DType::I8: if constexpr (ints) return fn(int8_t{}); break;
    case DType::I16: if constexpr (ints) return fn(int16_t{}); break;
    case DType::I32: if constexpr (ints) return fn(int32_t{}); break;
    case DType::I64: if constexpr (ints) return fn(int64_t{}); break;
    case DType::U8: if constexpr (uints) return fn(uint8_t{}); break;
    case DType::U16: if constexpr (uints) return fn(uint16_t{}); break;
    case DType::U32: if constexpr (uints) return fn(uint32_t{}); break;
    case DType::U64: if constexpr (uints) return fn(uint64_t{}); break;
    case DType::Bool: if constexpr (S == Types::Bools || S == Types::All) return fn(bool{}); break;
    default: break;
  }
  throw Error(node.describe() + ": dtype " + std::string(dtypeName(t)) + " is not supported");
}

template <typename T>
bool isNan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

// x < 0 without "always false" warnings for unsigned types.
template <typename T>
bool isNegative(T v) {
  if constexpr (std::is_signed_v<T>) return v < 0;
  else return false;
}

void requireSameDType(const Node& n, const Tensor& a, const Tensor& b) {
  FRICTION_CHECK(a.dtype() == b.dtype(), n.describe() + ": input dtypes " + std::string(dtypeName(a.dtype())) +
                                             " and " + std::string(dtypeName(b.dtype())) + " differ");
}

// Integer division by zero traps; report it instead.
void requireNonZero(const Node& n, const Tensor& divisor) {
  if (!isInteger(divisor.dtype())) return;
  for (int64_t i = 0; i < divisor.numel(); ++i)
    FRICTION_CHECK(divisor.elementAsInt(i) != 0, n.describe() + ": integer division by zero");
}

// out[i] = f(x[i]).
template <typename R, typename T, typename F>
Tensor unaryMap(const Tensor& x, DType outType, F f) {
  Tensor out(outType, x.shape());
  const T* px = x.data<T>();
  R* po = out.data<R>();
  int64_t n = out.numel();
#pragma omp parallel for if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) po[i] = R(f(px[i]));
  return out;
}

// out = f(a, b) over the numpy broadcast of a and b.
template <typename R, typename A, typename B, typename F>
Tensor broadcastMap(const Node& node, const Tensor& a, const Tensor& b, DType outType, F f) {
  std::vector<int64_t> shape = broadcastStatic(a.shape(), b.shape(), node.describe());
  Tensor out(outType, shape);
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  R* po = out.data<R>();
  int64_t n = out.numel();
  if (a.shape() == shape && b.shape() == shape) {
#pragma omp parallel for if (n >= kParallelMin)
    for (int64_t i = 0; i < n; ++i) po[i] = R(f(pa[i], pb[i]));
  } else {
    std::vector<int64_t> ia = broadcastIndexMap(shape, a.shape()), ib = broadcastIndexMap(shape, b.shape());
#pragma omp parallel for if (n >= kParallelMin)
    for (int64_t i = 0; i < n; ++i) po[i] = R(f(pa[ia[size_t(i)]], pb[ib[size_t(i)]]));
  }
  return out;
}

// A unary kernel. `factory(node)` reads the attributes once and returns the
// elementwise function, generic over the element type; a function returning
// bool for non-bool input (IsNaN) gives a bool output, others keep the dtype.
template <Types S, typename Factory>
Kernel unaryKernel(Factory factory) {
  return [factory](const Node& node, const Inputs& in) {
    return upcastHalf(node, in, [&](const Node& n, const Inputs& x) {
      auto f = factory(n);
      return dispatch<S>(n, x[0].dtype(), [&](auto tag) -> Outputs {
        using T = decltype(tag);
        constexpr bool toBool = std::is_same_v<decltype(f(T{})), bool>;
        using R = std::conditional_t<toBool, bool, T>;
        return {unaryMap<R, T>(x[0], toBool ? DType::Bool : x[0].dtype(), f)};
      });
    });
  };
}

template <Types S, typename F>
Kernel unary(F f) {
  return unaryKernel<S>([f](const Node&) { return f; });
}

// A broadcasting binary kernel over two inputs of one dtype. `factory(node,
// inputs)` returns the elementwise function; BoolOut gives a bool output.
template <Types S, bool BoolOut, typename Factory>
Kernel binaryKernel(Factory factory) {
  return [factory](const Node& node, const Inputs& in) {
    return upcastHalf(node, in, [&](const Node& n, const Inputs& x) {
      requireSameDType(n, x[0], x[1]);
      auto f = factory(n, x);
      return dispatch<S>(n, x[0].dtype(), [&](auto tag) -> Outputs {
        using T = decltype(tag);
        using R = std::conditional_t<BoolOut, bool, T>;
        return {broadcastMap<R, T, T>(n, x[0], x[1], BoolOut ? DType::Bool : x[0].dtype(), f)};
      });
    });
  };
}

template <Types S, bool BoolOut = false, typename F>
Kernel binary(F f) {
  return binaryKernel<S, BoolOut>([f](const Node&, const Inputs&) { return f; });
}

// Max/Min/Sum/Mean: a left fold of the binary function, broadcasting as it goes.
template <Types S, typename F>
Kernel variadic(F f, bool mean = false) {
  return [f, mean](const Node& node, const Inputs& in) {
    return upcastHalf(node, in, [&](const Node& n, const Inputs& x) {
      for (const Tensor& t : x) requireSameDType(n, x[0], t);
      return dispatch<S>(n, x[0].dtype(), [&](auto tag) -> Outputs {
        using T = decltype(tag);
        Tensor acc = x[0];
        for (size_t i = 1; i < x.size(); ++i) acc = broadcastMap<T, T, T>(n, acc, x[i], acc.dtype(), f);
        if (mean && x.size() > 1) {  // acc is a fresh tensor here, never an input
          T* p = acc.data<T>();
          for (int64_t i = 0; i < acc.numel(); ++i) p[i] = T(p[i] / T(x.size()));
        }
        return {acc};
      });
    });
  };
}

// Integer Div/Mod by -1 would trap on the most negative value; negate with wraparound instead.
template <typename T>
T wrappingNeg(T a) {
  return T(-static_cast<std::make_unsigned_t<T>>(a));
}

template <typename B, typename E>
B power(B a, E b) {
  if constexpr (std::is_integral_v<B> && std::is_integral_v<E>) {
    if (!isNegative(b)) {  // exact, by squaring (wraps like B)
      uint64_t r = 1, x = uint64_t(a);
      for (uint64_t e = uint64_t(b); e; e >>= 1, x *= x)
        if (e & 1) r *= x;
      return B(r);
    }
  }
  return B(std::pow(double(a), double(b)));
}

// Pow's output has the base's dtype, so halves are upcast per input rather than with upcastHalf.
Outputs powKernel(const Node& node, const Inputs& in) {
  DType outType = in[0].dtype();
  Tensor base = isHalf(outType) ? in[0].castTo(DType::F32) : in[0];
  Tensor expo = isHalf(in[1].dtype()) ? in[1].castTo(DType::F32) : in[1];
  Tensor out = dispatch<Types::Numbers>(node, base.dtype(), [&](auto bt) {
    return dispatch<Types::Numbers>(node, expo.dtype(), [&](auto et) {
      using B = decltype(bt);
      using E = decltype(et);
      return broadcastMap<B, B, E>(node, base, expo, base.dtype(), power<B, E>);
    });
  });
  return {isHalf(outType) ? out.castTo(outType) : out};
}

Outputs clipKernel(const Node& node, const Inputs& in) {
  return upcastHalf(node, in, [](const Node& n, const Inputs& x) {
    return dispatch<Types::Numbers>(n, x[0].dtype(), [&](auto tag) -> Outputs {
      using T = decltype(tag);
      auto bound = [&](size_t i, T absent) {
        if (i >= x.size() || !x[i].defined()) return absent;
        FRICTION_CHECK(x[i].numel() == 1 && x[i].dtype() == x[0].dtype(),
                       n.describe() + ": bound " + std::to_string(i) + " must be a scalar of the input's dtype");
        return x[i].data<T>()[0];
      };
      T lo = bound(1, std::numeric_limits<T>::lowest()), hi = bound(2, std::numeric_limits<T>::max());
      // min(max(x, lo), hi), as numpy: NaN stays NaN, and lo > hi gives hi.
      return {unaryMap<T, T>(x[0], x[0].dtype(), [=](T v) { return std::min(std::max(v, lo), hi); })};
    });
  });
}

// Calls fn with an unsigned type of `bytes` bytes, for kernels that only move elements.
template <typename Fn>
auto dispatchBits(size_t bytes, Fn&& fn) {
  switch (bytes) {
    case 1: return fn(uint8_t{});
    case 2: return fn(uint16_t{});
    case 4: return fn(uint32_t{});
    default: return fn(uint64_t{});
  }
}

Outputs whereKernel(const Node& node, const Inputs& in) {
  const Tensor &c = in[0], &x = in[1], &y = in[2];
  FRICTION_CHECK(c.dtype() == DType::Bool, node.describe() + ": condition must be bool");
  requireSameDType(node, x, y);
  std::vector<int64_t> shape =
      broadcastStatic(broadcastStatic(c.shape(), x.shape(), node.describe()), y.shape(), node.describe());
  Tensor out(x.dtype(), shape);
  std::vector<int64_t> ic = broadcastIndexMap(shape, c.shape()), ix = broadcastIndexMap(shape, x.shape()),
                       iy = broadcastIndexMap(shape, y.shape());
  dispatchBits(dtypeSize(x.dtype()), [&](auto tag) {
    using T = decltype(tag);
    const bool* pc = c.data<bool>();
    const T *px = x.data<T>(), *py = y.data<T>();
    T* po = out.data<T>();
    int64_t n = out.numel();
#pragma omp parallel for if (n >= kParallelMin)
    for (int64_t i = 0; i < n; ++i) po[i] = pc[ic[size_t(i)]] ? px[ix[size_t(i)]] : py[iy[size_t(i)]];
  });
  return {out};
}

// Inference semantics: the output is the input, and the mask is all true.
Outputs dropoutKernel(const Node& node, const Inputs& in) {
  bool training = in.size() > 2 && in[2].defined() && in[2].elementAsInt(0) != 0;
  double ratio = in.size() > 1 && in[1].defined() ? in[1].elementAsDouble(0) : 0.5;
  FRICTION_CHECK(!training || ratio == 0,
                 node.describe() + ": training_mode=true with a nonzero ratio is not supported");
  Outputs out = {in[0]};
  if (node.numOutputs() > 1) {
    Tensor mask(DType::Bool, in[0].shape());
    std::fill_n(mask.data<bool>(), mask.numel(), true);
    out.push_back(mask);
  }
  return out;
}

}  // namespace

void registerElementwiseKernels(KernelRegistry& r) {
  using enum Types;

  // Binary arithmetic.
  r.add("Add", binary<Numbers>([](auto a, auto b) { return a + b; }));
  r.add("Sub", binary<Numbers>([](auto a, auto b) { return a - b; }));
  r.add("Mul", binary<Numbers>([](auto a, auto b) { return a * b; }));
  r.add("Div", binaryKernel<Numbers, false>([](const Node& n, const Inputs& x) {
          requireNonZero(n, x[1]);
          return [](auto a, auto b) -> decltype(a) {
            if constexpr (std::is_signed_v<decltype(a)> && std::is_integral_v<decltype(a)>)
              if (b == -1) return wrappingNeg(a);
            return a / b;  // integers truncate toward zero, like C
          };
        }));
  r.add("Mod", binaryKernel<Numbers, false>([](const Node& n, const Inputs& x) {
          requireNonZero(n, x[1]);
          bool cStyle = n.attrInt("fmod", 0) != 0;
          return [cStyle](auto a, auto b) -> decltype(a) {
            using T = decltype(a);
            if constexpr (std::is_floating_point_v<T>) {
              T m = std::fmod(a, b);
              // fmod=0 (numpy's mod): the result takes the divisor's sign.
              return !cStyle && m != 0 && (m < 0) != (b < 0) ? T(m + b) : m;
            } else if constexpr (std::is_signed_v<T>) {
              if (b == -1) return 0;
              T m = T(a % b);  // sign of the dividend
              // fmod=0: Python semantics, the result takes the divisor's sign.
              return !cStyle && m != 0 && (m < 0) != (b < 0) ? T(m + b) : m;
            } else {
              return T(a % b);
            }
          };
        }));
  r.add("Pow", powKernel);
  r.add("BitShift", binaryKernel<Numbers, false>([](const Node& n, const Inputs&) {
          bool left = n.attrString("direction", "") == "LEFT";
          return [left](auto a, auto b) -> decltype(a) {
            using T = decltype(a);
            if constexpr (std::is_integral_v<T>) {  // inference admits integers only
              using U = std::make_unsigned_t<T>;
              // A shift by a negative count or past the width: 0, or -1 for a negative value shifted right.
              if (b < 0 || uint64_t(b) >= sizeof(T) * 8) return !left && a < 0 ? T(-1) : T(0);
              return left ? T(U(a) << b) : T(a >> b);  // signed: wraps left, arithmetic right (opset 28)
            } else {
              return a;
            }
          };
        }));

  // Logic and comparisons.
  r.add("And", binary<Bools, true>([](bool a, bool b) { return a && b; }));
  r.add("Or", binary<Bools, true>([](bool a, bool b) { return a || b; }));
  r.add("Xor", binary<Bools, true>([](bool a, bool b) { return a != b; }));
  r.add("Equal", binary<All, true>([](auto a, auto b) { return a == b; }));
  r.add("Less", binary<Numbers, true>([](auto a, auto b) { return a < b; }));
  r.add("Greater", binary<Numbers, true>([](auto a, auto b) { return a > b; }));
  r.add("LessOrEqual", binary<Numbers, true>([](auto a, auto b) { return a <= b; }));
  r.add("GreaterOrEqual", binary<Numbers, true>([](auto a, auto b) { return a >= b; }));
  r.add("PRelu", binary<Numbers>([](auto x, auto slope) { return isNegative(x) ? slope * x : x; }));

  // Variadic; Max and Min propagate NaN like numpy.
  r.add("Max", variadic<Numbers>([](auto a, auto b) { return isNan(a) || a > b ? a : b; }));
  r.add("Min", variadic<Numbers>([](auto a, auto b) { return isNan(a) || a < b ? a : b; }));
  r.add("Sum", variadic<Floats>([](auto a, auto b) { return a + b; }));
  r.add("Mean", variadic<Floats>([](auto a, auto b) { return a + b; }, /*mean=*/true));

  // Unary math.
  r.add("Sqrt", unary<Floats>([](auto x) { return std::sqrt(x); }));
  r.add("Reciprocal", unary<Floats>([](auto x) { return 1 / x; }));
  r.add("Exp", unary<Floats>([](auto x) { return std::exp(x); }));
  r.add("Log", unary<Floats>([](auto x) { return std::log(x); }));
  r.add("Neg", unary<SignedNumbers>([](auto x) { return -x; }));
  r.add("Abs", unary<Numbers>([](auto x) -> decltype(x) {
          return isNegative(x) ? -x : x;
        }));
  r.add("Sign", unary<Numbers>([](auto x) -> decltype(x) {
          using T = decltype(x);
          return x > 0 ? T(1) : isNegative(x) ? T(-1) : x;  // 0 and NaN map to themselves
        }));
  r.add("Erf", unary<Numbers>([](auto x) { return std::erf(x); }));
  r.add("Floor", unary<Floats>([](auto x) { return std::floor(x); }));
  r.add("Ceil", unary<Floats>([](auto x) { return std::ceil(x); }));
  r.add("Round", unary<Floats>([](auto x) { return std::nearbyint(x); }));  // default rounding: half to even
  r.add("Sin", unary<Floats>([](auto x) { return std::sin(x); }));
  r.add("Cos", unary<Floats>([](auto x) { return std::cos(x); }));
  r.add("Tan", unary<Floats>([](auto x) { return std::tan(x); }));
  r.add("Asin", unary<Floats>([](auto x) { return std::asin(x); }));
  r.add("Acos", unary<Floats>([](auto x) { return std::acos(x); }));
  r.add("Atan", unary<Floats>([](auto x) { return std::atan(x); }));
  r.add("Sinh", unary<Floats>([](auto x) { return std::sinh(x); }));
  r.add("Cosh", unary<Floats>([](auto x) { return std::cosh(x); }));
  r.add("Tanh", unary<Floats>([](auto x) { return std::tanh(x); }));
  r.add("Asinh", unary<Floats>([](auto x) { return std::asinh(x); }));
  r.add("Acosh", unary<Floats>([](auto x) { return std::acosh(x); }));
  r.add("Atanh", unary<Floats>([](auto x) { return std::atanh(x); }));
  r.add("Not", unary<Bools>([](bool x) { return !x; }));
  r.add("IsNaN", unary<Floats>([](auto x) { return std::isnan(x); }));
  r.add("IsInf", unaryKernel<Floats>([](const Node& n) {
          bool neg = n.attrInt("detect_negative", 1) != 0, pos = n.attrInt("detect_positive", 1) != 0;
          return [neg, pos](auto x) { return std::isinf(x) && (x > 0 ? pos : neg); };
        }));

  // Activations. Written in forms that do not overflow for large |x|.
  r.add("Sigmoid", unary<Floats>([](auto x) {
          using T = decltype(x);
          return x >= 0 ? T(1) / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x));
        }));
  r.add("Relu", unary<SignedNumbers>([](auto x) { return std::max(x, decltype(x)(0)); }));
  r.add("LeakyRelu", unaryKernel<Floats>([](const Node& n) {
          float alpha = n.attrFloat("alpha", 0.01f);
          return [alpha](auto x) { return x < 0 ? alpha * x : x; };
        }));
  r.add("HardSigmoid", unaryKernel<Floats>([](const Node& n) {
          float alpha = n.attrFloat("alpha", 0.2f), beta = n.attrFloat("beta", 0.5f);
          return [alpha, beta](auto x) {
            using T = decltype(x);
            return std::clamp(T(alpha * x + beta), T(0), T(1));
          };
        }));
  r.add("HardSwish", unary<Floats>([](auto x) {
          using T = decltype(x);
          return x * std::clamp(x / T(6) + T(0.5), T(0), T(1));
        }));
  r.add("Elu", unaryKernel<Floats>([](const Node& n) {
          float alpha = n.attrFloat("alpha", 1.0f);
          return [alpha](auto x) { return x < 0 ? alpha * std::expm1(x) : x; };
        }));
  r.add("Selu", unaryKernel<Floats>([](const Node& n) {
          float alpha = n.attrFloat("alpha", 1.67326319217681884765625f);
          float gamma = n.attrFloat("gamma", 1.05070102214813232421875f);
          return [alpha, gamma](auto x) { return gamma * (x > 0 ? x : alpha * std::expm1(x)); };
        }));
  r.add("Celu", unaryKernel<Floats>([](const Node& n) {
          float alpha = n.attrFloat("alpha", 1.0f);
          return [alpha](auto x) { return x > 0 ? x : alpha * std::expm1(x / alpha); };
        }));
  r.add("Softplus", unary<Floats>([](auto x) {
          return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
        }));
  r.add("Softsign", unary<Floats>([](auto x) { return x / (1 + std::abs(x)); }));
  r.add("ThresholdedRelu", unaryKernel<Floats>([](const Node& n) {
          float alpha = n.attrFloat("alpha", 1.0f);
          return [alpha](auto x) { return x > alpha ? x : decltype(x)(0); };
        }));
  r.add("Shrink", unaryKernel<Numbers>([](const Node& n) {
          float bias = n.attrFloat("bias", 0.0f), lambd = n.attrFloat("lambd", 0.5f);
          return [bias, lambd](auto x) -> decltype(x) {
            using T = decltype(x);
            if (x < -lambd) return T(x + bias);
            if (x > lambd) return T(x - bias);
            return T(0);
          };
        }));
  r.add("Clip", clipKernel);
  r.add("Where", whereKernel);

  // Data movement. Tensors are immutable once produced, so passing the input through is safe.
  r.add("Identity", [](const Node&, const Inputs& in) { return Outputs{in[0]}; });
  r.add("Dropout", dropoutKernel);
  // Inference resolved Cast's `to` (an ONNX type code) into the output's dtype.
  r.add("Cast", [](const Node& n, const Inputs& in) { return Outputs{in[0].castTo(n.output(0)->dtype())}; });
  r.add("CastLike", [](const Node&, const Inputs& in) { return Outputs{in[0].castTo(in[1].dtype())}; });
  r.add("ReducePrecision", [](const Node& n, const Inputs& in) {
    return Outputs{in[0].castTo(dtypeFromOnnxCode(n.attrInt("to", 0), "ReducePrecision 'to'")).castTo(in[0].dtype())};
  });
}

}  // namespace friction::interp
