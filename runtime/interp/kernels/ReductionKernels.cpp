// Interpreter kernels of reductions: ReduceX over axes, ArgMax/ArgMin along one.
#include <algorithm>
#include <cmath>
#include <limits>


#include "runtime/interp/KernelRegistry.h"
#include "runtime/interp/kernels/KernelUtil.h"

namespace friction::interp {
namespace {

template <bool isMax>
Kernel argReduce() {
  return arithKernel([](auto tag, const Node& node, const Tensors& in) {
    using T = decltype(tag);
    const Tensor& x = in[0];
    int64_t axis = normalizeAxis(node, node.attrInt("axis", 0), int64_t(x.rank()));
    bool last = node.attrInt("select_last_index", 0) != 0;
    std::vector<int64_t> shape = x.shape();
    if (!shape.empty()) shape[size_t(axis)] = 1;
    Tensor y(DType::I64, shape);
    const T* px = x.data<T>();
    int64_t* py = y.data<int64_t>();
    int64_t out = 0;
    forEachLane(x.shape(), axis, [&](int64_t base, int64_t s, int64_t len) {
      int64_t arg = 0;
      for (int64_t i = 1; i < len; ++i) {
        T v = px[base + i * s], best = px[base + arg * s];
        bool better = isMax ? (v > best || (last && v == best)) : (v < best || (last && v == best));
        if (better) arg = i;
      }
      py[out++] = arg;
    });
    if (!node.attrInt("keepdims", 1) && !shape.empty()) shape.erase(shape.begin() + axis);
    return Tensors{y.reshaped(shape)};
  });
}

// ---- Reductions ----

// One reduction kernel for all Reduce* ops: acc = init, acc = step(acc, x)
// over the reduced elements, y = fin(acc, count). Floats accumulate in double.
template <typename Init, typename Step, typename Fin>
Kernel reduceKernel(bool floatOnly, Init init, Step step, Fin fin) {
  auto body = [=](auto tag, const Node& node, const Tensors& in) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
    const Tensor& x = in[0];
    int64_t rank = int64_t(x.rank());
    std::vector<int64_t> axes = in.size() > 1 && in[1].defined() ? in[1].toInt64Vector() : node.attrInts("axes");
    if (axes.empty() && node.attrInt("noop_with_empty_axes", 0)) return Tensors{x};
    std::vector<bool> reduced(x.rank(), axes.empty());  // no axes: reduce all
    for (int64_t a : axes) reduced[size_t(normalizeAxis(node, a, rank))] = true;
    std::vector<int64_t> kept = x.shape(), squeezed;
    for (size_t d = 0; d < kept.size(); ++d) {
      if (reduced[d]) kept[d] = 1;
      else squeezed.push_back(kept[d]);
    }
    int64_t count = x.numel() / std::max<int64_t>(checkedNumel(kept), 1);
    std::vector<int64_t> map = broadcastIndexMap(x.shape(), kept);
    std::vector<Acc> acc(size_t(checkedNumel(kept)), init(Acc{}));
    const T* px = x.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) acc[size_t(map[size_t(i)])] = step(acc[size_t(map[size_t(i)])], Acc(px[i]));
    Tensor y(x.dtype(), kept);
    for (size_t i = 0; i < acc.size(); ++i) y.data<T>()[i] = T(fin(acc[i], count));
    if (!node.attrInt("keepdims", 1)) y = y.reshaped(squeezed);
    return Tensors{y};
  };
  return floatOnly ? floatKernel(body) : arithKernel(body);
}

template <typename A>
A absVal(A a) {
  if constexpr (std::is_unsigned_v<A>) return a;
  else return a < A(0) ? A(-a) : a;
}

// ReduceMax and ReduceMin of bools (opset 20): any and all, computed on uint8.
Kernel alsoBool(Kernel k) {
  return [k](const Node& node, const Tensors& in) {
    if (in[0].dtype() != DType::Bool) return k(node, in);
    Tensors asBytes = in;
    asBytes[0] = in[0].castTo(DType::U8);
    Tensors out = k(node, asBytes);
    out[0] = out[0].castTo(DType::Bool);
    return out;
  };
}

}  // namespace

void registerReductionKernels(KernelRegistry& r) {
  auto zero = [](auto a) { return decltype(a)(0); };
  auto one = [](auto a) { return decltype(a)(1); };
  auto lowest = [](auto a) {
    using A = decltype(a);
    return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::lowest();
  };
  auto highest = [](auto a) {
    using A = decltype(a);
    return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max();
  };
  auto add = [](auto a, auto x) { return decltype(a)(a + x); };
  auto addAbs = [](auto a, auto x) { return decltype(a)(a + absVal(x)); };
  auto addSq = [](auto a, auto x) { return decltype(a)(a + x * x); };
  auto addExp = [](auto a, auto x) { return decltype(a)(a + std::exp(x)); };
  auto same = [](auto a, int64_t) { return a; };
  auto mean = [](auto a, int64_t n) { return decltype(a)(a / decltype(a)(n)); };
  auto root = [](auto a, int64_t) { return decltype(a)(std::sqrt(a)); };
  auto logOf = [](auto a, int64_t) { return decltype(a)(std::log(a)); };
  r.add("ReduceSum", reduceKernel(false, zero, add, same));
  r.add("ReduceMean", reduceKernel(false, zero, add, mean));
  r.add("ReduceMax", alsoBool(reduceKernel(false, lowest, [](auto a, auto x) { return std::max(a, x); }, same)));
  r.add("ReduceMin", alsoBool(reduceKernel(false, highest, [](auto a, auto x) { return std::min(a, x); }, same)));
  r.add("ReduceProd", reduceKernel(false, one, [](auto a, auto x) { return decltype(a)(a * x); }, same));
  r.add("ReduceL1", reduceKernel(false, zero, addAbs, same));
  r.add("ReduceL2", reduceKernel(true, zero, addSq, root));
  r.add("ReduceSumSquare", reduceKernel(false, zero, addSq, same));
  r.add("ReduceLogSum", reduceKernel(true, zero, add, logOf));
  // Accumulates exp in double; float inputs cannot overflow it.
  r.add("ReduceLogSumExp", reduceKernel(true, zero, addExp, logOf));
  r.add("ArgMax", argReduce<true>());
  r.add("ArgMin", argReduce<false>());
}

}  // namespace friction::interp
