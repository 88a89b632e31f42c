// Interpreter kernels of the shape ops: reshapes and views, transposes,
// broadcasting and padding, shapes and constants.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "ir/ops/TensorShapes.h"
#include "runtime/interp/KernelRegistry.h"
#include "runtime/interp/kernels/DataMovement.h"

namespace friction::interp {
namespace {


// ---------------------------------------------------------------- reshaping

std::vector<Tensor> reshape(const Node& node, const std::vector<Tensor>& in) {
  std::vector<Dim> target = dimsOf(in[1].toInt64Vector());
  bool allowZero = node.attrInt("allowzero", 0) != 0;
  return {in[0].reshaped(staticShape(reshapeDims(in[0].type().shape, target, allowZero)))};
}

std::vector<Tensor> flatten(const Node& node, const std::vector<Tensor>& in) {
  int64_t r = int64_t(in[0].rank()), axis = node.attrInt("axis", 1);
  FRICTION_CHECK(axis >= -r && axis <= r, node.describe() + ": axis out of range");
  if (axis < 0) axis += r;
  const Shape64& s = in[0].shape();
  int64_t outer = std::accumulate(s.begin(), s.begin() + axis, int64_t(1), std::multiplies<>());
  return {in[0].reshaped({outer, in[0].numel() / std::max<int64_t>(outer, 1)})};
}

std::vector<Tensor> squeeze(const Node& node, const std::vector<Tensor>& in) {
  const Shape64& s = in[0].shape();
  auto axes = optionalInts(in, 1);
  Shape64 ax = axes ? normalizeAxes(*axes, int64_t(s.size())) : Shape64{};
  Shape64 out;
  for (size_t i = 0; i < s.size(); ++i) {
    bool squeezed = axes ? std::find(ax.begin(), ax.end(), int64_t(i)) != ax.end() : s[i] == 1;
    FRICTION_CHECK(!squeezed || s[i] == 1, node.describe() + ": cannot squeeze axis of extent " + std::to_string(s[i]));
    if (!squeezed) out.push_back(s[i]);
  }
  return {in[0].reshaped(out)};
}

std::vector<Tensor> unsqueeze(const Node& node, const std::vector<Tensor>& in) {
  const Shape64& s = in[0].shape();
  Shape64 axes = in[1].toInt64Vector();
  Shape64 ax = normalizeAxes(axes, int64_t(s.size() + axes.size()));
  Shape64 out;
  size_t next = 0;
  for (size_t i = 0; i < s.size() + ax.size(); ++i)
    out.push_back(std::find(ax.begin(), ax.end(), int64_t(i)) != ax.end() ? 1 : s[next++]);
  return {in[0].reshaped(out)};
}

std::vector<Tensor> transpose(const Node& node, const std::vector<Tensor>& in) {
  return {transposeTensor(in[0], transposePerm(node, in[0].rank()))};
}

// DepthToSpace/SpaceToDepth are a reshape, a transpose and a reshape.
std::vector<Tensor> depthToSpace(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  FRICTION_CHECK(x.rank() == 4, node.describe() + ": input must be 4-D");
  int64_t b = node.attrInt("blocksize", 0), n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  FRICTION_CHECK(b > 0 && c % (b * b) == 0, node.describe() + ": channels not divisible by blocksize^2");
  bool crd = node.attrString("mode", "DCR") == "CRD";
  Tensor t = crd ? transposeTensor(x.reshaped({n, c / (b * b), b, b, h, w}), {0, 1, 4, 2, 5, 3})
                 : transposeTensor(x.reshaped({n, b, b, c / (b * b), h, w}), {0, 3, 4, 1, 5, 2});
  return {t.reshaped({n, c / (b * b), h * b, w * b})};
}

std::vector<Tensor> spaceToDepth(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  FRICTION_CHECK(x.rank() == 4, node.describe() + ": input must be 4-D");
  int64_t b = node.attrInt("blocksize", 0), n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  FRICTION_CHECK(b > 0 && h % b == 0 && w % b == 0, node.describe() + ": spatial dims not divisible by blocksize");
  Tensor t = transposeTensor(x.reshaped({n, c, h / b, b, w / b, b}), {0, 3, 5, 1, 2, 4});
  return {t.reshaped({n, c * b * b, h / b, w / b})};
}

// ---------------------------------------------------------------- broadcasting and padding

std::vector<Tensor> expand(const Node& node, const std::vector<Tensor>& in) {
  Shape64 out = broadcastStatic(in[0].shape(), in[1].toInt64Vector(), node.describe());
  Shape64 map = broadcastIndexMap(out, in[0].shape());
  return {gatherBy(in[0], out, [&](const Shape64&, int64_t k) { return map[size_t(k)]; })};
}

std::vector<Tensor> tile(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  Shape64 reps = in[1].toInt64Vector(), out;
  FRICTION_CHECK(reps.size() == x.rank(), node.describe() + ": repeats length differs from the input rank");
  for (size_t d = 0; d < reps.size(); ++d) out.push_back(x.shape()[d] * reps[d]);
  Shape64 xs = stridesOf(x.shape());
  return {gatherBy(x, out, [&](const Shape64& idx, int64_t) {
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d) src += (idx[d] % x.shape()[d]) * xs[d];
    return src;
  })};
}

std::vector<Tensor> pad(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  int64_t r = int64_t(x.rank());
  Shape64 pads = padsForAllAxes(r, in[1].toInt64Vector(), optionalInts(in, 3));
  std::string mode = node.attrString("mode", "constant");
  Shape64 out, xs = stridesOf(x.shape());
  for (int64_t d = 0; d < r; ++d) out.push_back(x.shape()[size_t(d)] + pads[size_t(d)] + pads[size_t(d + r)]);
  for (int64_t e : out) FRICTION_CHECK(e >= 0, node.describe() + ": pads make an axis negative");
  // Maps an out-of-range source index into [0, n) per mode; -1 means "fill".
  auto mapIndex = [&](int64_t i, int64_t n) -> int64_t {
    FRICTION_CHECK(n > 0 || mode == "constant" || (i >= 0 && i < n),
                   node.describe() + ": cannot " + mode + "-pad an empty axis");
    return padSourceIndex(mode, i, n);
  };
  FRICTION_CHECK(mode == "constant" || mode == "edge" || mode == "reflect" || mode == "wrap",
                 node.describe() + ": unsupported mode '" + mode + "'");
  bool hasValue = mode == "constant" && in.size() > 2 && in[2].defined() && in[2].numel() > 0;
  FRICTION_CHECK(!hasValue || in[2].dtype() == x.dtype(), node.describe() + ": constant_value dtype differs from data");
  return {gatherBy(
      x, out,
      [&](const Shape64& idx, int64_t) {
        int64_t src = 0;
        for (int64_t d = 0; d < r; ++d) {
          int64_t i = mapIndex(idx[size_t(d)] - pads[size_t(d)], x.shape()[size_t(d)]);
          if (i < 0) return int64_t(-1);
          src += i * xs[size_t(d)];
        }
        return src;
      },
      hasValue ? &in[2] : nullptr)};
}

// ---------------------------------------------------------------- shapes and constants

std::vector<Tensor> shapeOf(const Node& node, const std::vector<Tensor>& in) {
  int64_t r = int64_t(in[0].rank());
  auto clampIndex = [r](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + r : i, 0, r); };
  int64_t start = clampIndex(node.attrInt("start", 0)), end = clampIndex(node.attrInt("end", r));
  return {Tensor::vectorI64(Shape64(in[0].shape().begin() + start, in[0].shape().begin() + std::max(start, end)))};
}

std::vector<Tensor> size(const Node&, const std::vector<Tensor>& in) { return {Tensor::scalarI64(in[0].numel())}; }

std::vector<Tensor> constant(const Node& node, const std::vector<Tensor>&) { return {constantValue(node)}; }

std::vector<Tensor> constantOfShape(const Node& node, const std::vector<Tensor>& in) {
  Tensor value = node.hasAttr("value") ? node.attrTensor("value") : Tensor::scalarF32(0);
  FRICTION_CHECK(value.numel() == 1, node.describe() + ": value must have one element");
  return {gatherBy(value, in[0].toInt64Vector(), [](const Shape64&, int64_t) { return int64_t(0); })};
}

std::vector<Tensor> range(const Node&, const std::vector<Tensor>& in) {
  DType type = in[0].dtype();
  if (isHalf(type)) {  // computed in double, each element rounded once
    double start = in[0].elementAsDouble(0), delta = in[2].elementAsDouble(0);
    int64_t n = rangeCount(start, in[1].elementAsDouble(0), delta);
    std::vector<double> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[size_t(i)] = start + double(i) * delta;
    return {Tensor::fromVector<double>(DType::F64, {n}, values).castTo(type)};
  }
  return dispatchNumeric(in[0].dtype(), [&](auto t) {
    using T = decltype(t);
    T start = in[0].data<T>()[0], delta = in[2].data<T>()[0];
    int64_t n = rangeCount(double(start), double(in[1].data<T>()[0]), double(delta));
    Tensor out(in[0].dtype(), {n});
    for (int64_t i = 0; i < n; ++i) out.data<T>()[i] = T(start + T(i) * delta);
    return std::vector<Tensor>{out};
  });
}

std::vector<Tensor> eyeLike(const Node& node, const std::vector<Tensor>& in) {
  FRICTION_CHECK(in[0].rank() == 2, node.describe() + ": input must be 2-D");
  DType dt = node.hasAttr("dtype") ? dtypeFromOnnxCode(node.attrInt("dtype", 1), node.describe()) : in[0].dtype();
  Tensor one = Tensor::scalarF32(1).castTo(dt);
  int64_t k = node.attrInt("k", 0);
  return {gatherBy(one, in[0].shape(), [&](const Shape64& idx, int64_t) { return idx[1] - idx[0] == k ? 0 : -1; })};
}

std::vector<Tensor> oneHot(const Node& node, const std::vector<Tensor>& in) {
  const Tensor &indices = in[0], &values = in[2];
  int64_t depth = int64_t(in[1].elementAsDouble(0));
  FRICTION_CHECK(values.numel() == 2, node.describe() + ": values must have 2 elements");
  int64_t r = int64_t(indices.rank()) + 1, axis = node.attrInt("axis", -1);
  FRICTION_CHECK(axis >= -r && axis < r, node.describe() + ": axis out of range");
  size_t a = size_t(axis < 0 ? axis + r : axis);
  Shape64 out = indices.shape();
  out.insert(out.begin() + long(a), depth);
  Shape64 is = stridesOf(indices.shape());
  return {gatherBy(values, out, [&](const Shape64& idx, int64_t) {
    int64_t flat = 0;
    for (size_t d = 0, j = 0; d < idx.size(); ++d)
      if (d != a) flat += idx[d] * is[j++];
    int64_t v = int64_t(indices.elementAsDouble(flat));
    if (v < 0) v += depth;
    return int64_t(v == idx[a] ? 1 : 0);
  })};
}

std::vector<Tensor> trilu(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  FRICTION_CHECK(x.rank() >= 2, node.describe() + ": input must have rank >= 2");
  int64_t k = in.size() > 1 && in[1].defined() ? in[1].elementAsInt(0) : 0;
  bool upper = node.attrInt("upper", 1) != 0;
  size_t r = x.rank();
  return {gatherBy(x, x.shape(), [&](const Shape64& idx, int64_t flat) {
    int64_t diag = idx[r - 1] - idx[r - 2];
    return (upper ? diag >= k : diag <= k) ? flat : -1;
  })};
}

std::vector<Tensor> nonZero(const Node&, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  std::vector<Shape64> hits;
  forEachIndex(x.shape(), [&](const Shape64& idx, int64_t k) {
    if (x.elementAsDouble(k) != 0) hits.push_back(idx);
  });
  int64_t n = int64_t(hits.size()), r = int64_t(x.rank());
  Tensor out(DType::I64, {r, n});
  for (int64_t j = 0; j < n; ++j)
    for (int64_t d = 0; d < r; ++d) out.data<int64_t>()[d * n + j] = hits[size_t(j)][size_t(d)];
  return {out};
}

}  // namespace

void registerShapeKernels(KernelRegistry& r) {
  r.add("Reshape", reshape);
  r.add("Flatten", flatten);
  r.add("Squeeze", squeeze);
  r.add("Unsqueeze", unsqueeze);
  r.add("Transpose", transpose);
  r.add("DepthToSpace", depthToSpace);
  r.add("SpaceToDepth", spaceToDepth);
  r.add("Expand", expand);
  r.add("Tile", tile);
  r.add("Pad", pad);
  r.add("Shape", shapeOf);
  r.add("Size", size);
  r.add("Constant", constant);
  r.add("ConstantOfShape", constantOfShape);
  r.add("Range", range);
  r.add("EyeLike", eyeLike);
  r.add("OneHot", oneHot);
  r.add("Trilu", trilu);
  r.add("NonZero", nonZero);
}

}  // namespace friction::interp
