// Interpreter kernels of MatMul, Gemm and Einsum: contractions on the
// shared blocked GEMM (Gemm.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/ops/NnShapes.h"
#include "ir/ops/ShapeHelpers.h"
#include "runtime/interp/kernels/Gemm.h"
#include "runtime/interp/KernelRegistry.h"
#include "runtime/interp/kernels/KernelUtil.h"

namespace friction::interp {
namespace {

template <typename T>
Tensors matMul(T, const Node& node, const Tensors& in) {
  std::vector<int64_t> a = in[0].shape(), b = in[1].shape();
  FRICTION_CHECK(!a.empty() && !b.empty(), node.describe() + ": operands must have rank >= 1");
  bool vecA = a.size() == 1, vecB = b.size() == 1;
  if (vecA) a.insert(a.begin(), 1);
  if (vecB) b.push_back(1);
  int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  FRICTION_CHECK(b[b.size() - 2] == K, node.describe() + ": inner dimensions differ: " + in[0].type().shape.str() +
                                           " x " + in[1].type().shape.str());
  std::vector<int64_t> batchA(a.begin(), a.end() - 2), batchB(b.begin(), b.end() - 2);
  std::vector<int64_t> batch = broadcastStatic(batchA, batchB, node.describe());
  std::vector<int64_t> yShape = batch;
  if (!vecA) yShape.push_back(M);
  if (!vecB) yShape.push_back(N);
  Tensor y(in[0].dtype(), yShape);
  const T *pa = in[0].data<T>(), *pb = in[1].data<T>();
  T* py = y.data<T>();
  int64_t nb = product(batch);
  if (batchB.empty() || product(batchB) == 1) {
    // B is shared by every batch: one tall GEMM over all of A's rows.
    if (product(batchA) == nb) {
      gemm<T>(false, false, nb * M, N, K, T(1), pa, K, pb, N, T(0), py, N);
      return {y};
    }
  }
  std::vector<int64_t> mapA = broadcastIndexMap(batch, batchA), mapB = broadcastIndexMap(batch, batchB);
  for (int64_t i = 0; i < nb; ++i)
    gemm<T>(false, false, M, N, K, T(1), pa + mapA[size_t(i)] * M * K, K, pb + mapB[size_t(i)] * K * N, N, T(0),
            py + i * M * N, N);
  return {y};
}

template <typename T>
Tensors gemmOp(T, const Node& node, const Tensors& in) {
  const Tensor &a = in[0], &b = in[1];
  FRICTION_CHECK(a.rank() == 2 && b.rank() == 2, node.describe() + ": A and B must be 2-D");
  bool ta = node.attrInt("transA", 0) != 0, tb = node.attrInt("transB", 0) != 0;
  int64_t M = a.dim(ta ? 1 : 0), K = a.dim(ta ? 0 : 1), N = b.dim(tb ? 0 : 1);
  FRICTION_CHECK(b.dim(tb ? 1 : 0) == K, node.describe() + ": K mismatch between A " + a.type().shape.str() +
                                             " and B " + b.type().shape.str());
  T alpha = T(node.attrFloat("alpha", 1.0f)), beta = T(node.attrFloat("beta", 1.0f));
  Tensor y(a.dtype(), {M, N});
  T* py = y.data<T>();
  bool hasC = in.size() > 2 && in[2].defined();
  if (hasC) {
    std::vector<int64_t> out = broadcastStatic(in[2].shape(), {M, N}, node.describe());
    FRICTION_CHECK(out == (std::vector<int64_t>{M, N}), node.describe() + ": C does not broadcast to (M, N)");
    std::vector<int64_t> map = broadcastIndexMap({M, N}, in[2].shape());
    const T* pc = in[2].data<T>();
    for (int64_t i = 0; i < M * N; ++i) py[i] = beta * pc[map[size_t(i)]];
  }
  gemm<T>(ta, tb, M, N, K, alpha, a.data<T>(), a.dim(1), b.data<T>(), b.dim(1), T(hasC ? 1 : 0), py, N);
  return {y};
}

// ---- Einsum ----

template <typename T>
Tensors einsum(T, const Node& node, const Tensors& in) {
  std::vector<size_t> ranks;
  for (const Tensor& t : in) ranks.push_back(t.rank());
  EinsumSpec spec = parseEinsum(node.attrString("equation", ""), ranks);
  // Extent per label (ellipsis dims broadcast against 1).
  std::vector<int64_t> extent(size_t(52 + spec.ellipsisRank), -1);
  for (size_t i = 0; i < in.size(); ++i)
    for (size_t d = 0; d < ranks[i]; ++d) {
      int64_t& e = extent[size_t(spec.inputs[i][d])];
      int64_t v = in[i].dim(int(d));
      bool bcast = spec.inputs[i][d] >= 52;
      FRICTION_CHECK(e < 0 || e == v || (bcast && (e == 1 || v == 1)),
                     node.describe() + ": label extents differ (" + std::to_string(e) + " vs " + std::to_string(v) + ")");
      if (e < 0 || e == 1) e = v;
    }
  // Loop labels: the output's first, then the summed ones.
  std::vector<int> labels = spec.output;
  for (int l = 0; l < int(extent.size()); ++l)
    if (extent[size_t(l)] >= 0 && std::find(labels.begin(), labels.end(), l) == labels.end()) labels.push_back(l);
  size_t nl = labels.size(), no = spec.output.size();
  std::vector<int64_t> ext(nl), yShape;
  for (size_t j = 0; j < nl; ++j) ext[j] = extent[size_t(labels[j])] < 0 ? 1 : extent[size_t(labels[j])];
  yShape.assign(ext.begin(), ext.begin() + long(no));
  // Stride of each loop label in each input (repeated labels add up: diagonals).
  std::vector<std::vector<int64_t>> strides(in.size(), std::vector<int64_t>(nl, 0));
  for (size_t i = 0; i < in.size(); ++i) {
    std::vector<int64_t> s = stridesOf(in[i].shape());
    for (size_t d = 0; d < ranks[i]; ++d) {
      size_t j = size_t(std::find(labels.begin(), labels.end(), spec.inputs[i][d]) - labels.begin());
      if (in[i].dim(int(d)) != 1 || ext[j] == 1) strides[i][j] += s[d];
    }
  }
  Tensor y(in[0].dtype(), yShape);
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  std::vector<int64_t> idx(nl, 0);
  int64_t inner = product(std::vector<int64_t>(ext.begin() + long(no), ext.end()));
  int64_t outs = checkedNumel(yShape);
  for (int64_t o = 0; o < outs; ++o) {
    Acc acc = 0;
    for (int64_t s = 0; s < inner; ++s) {
      Acc prod = 1;
      for (size_t i = 0; i < in.size(); ++i) {
        int64_t off = 0;
        for (size_t j = 0; j < nl; ++j) off += idx[j] * strides[i][j];
        prod *= Acc(in[i].data<T>()[off]);
      }
      acc += prod;
      // Advance the odometer (last label fastest; output labels carry into o).
      for (size_t j = nl; j-- > 0;) {
        if (++idx[j] < ext[j]) break;
        idx[j] = 0;
      }
    }
    if (inner == 0) {  // no summed combinations: still step the output labels
      for (size_t j = no; j-- > 0;) {
        if (++idx[j] < ext[j]) break;
        idx[j] = 0;
      }
    }
    y.data<T>()[o] = T(acc);
  }
  return {y};
}

}  // namespace

void registerMatMulKernels(KernelRegistry& r) {
  r.add("MatMul", arithKernel([](auto t, const Node& n, const Tensors& in) { return matMul(t, n, in); }));
  r.add("Gemm", arithKernel([](auto t, const Node& n, const Tensors& in) { return gemmOp(t, n, in); }));
  r.add("Einsum", arithKernel([](auto t, const Node& n, const Tensors& in) { return einsum(t, n, in); }));
}

}  // namespace friction::interp
