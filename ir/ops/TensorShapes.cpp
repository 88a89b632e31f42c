#include "ir/ops/TensorShapes.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/Error.h"

namespace friction {

std::vector<Dim> dimsOf(const std::vector<int64_t>& v) { return std::vector<Dim>(v.begin(), v.end()); }

namespace {
// A product of dims as a static factor times a multiset of symbols.
struct Factors {
  int64_t prod = 1;
  std::vector<std::string> syms;
  bool unknown = false;
  void add(const Dim& d) {
    if (d.isStatic()) prod *= d.value;
    else if (d.isUnknown()) unknown = true;
    else syms.push_back(d.symbol);
  }
};

std::string str(const std::vector<int64_t>& v) { return Shape::fromStatic(v).str(); }
}  // namespace

std::vector<Dim> reshapeDims(const Shape& in, const std::vector<Dim>& target, bool allowZero) {
  std::vector<Dim> out(target.size());
  int inferAt = -1;
  bool hasZero = false;
  for (size_t i = 0; i < target.size(); ++i) {
    const Dim& t = target[i];
    if (!isIntDim(t)) {
      out[i] = t;  // symbolic (or unknown) entries pass through
    } else if (t.value == -1) {
      FRICTION_CHECK(inferAt < 0, "Reshape target has more than one -1");
      inferAt = int(i);
    } else if (t.value < -1) {
      throw Error("Reshape target has invalid dim " + std::to_string(t.value));
    } else if (t.value == 0 && !allowZero) {
      if (!in.hasRank()) continue;  // copies a dim we do not know: stays unknown
      FRICTION_CHECK(i < in.rank(), "Reshape target has 0 at index " + std::to_string(i) +
                                        " but the input has rank " + std::to_string(in.rank()));
      out[i] = in[i];
    } else {
      hasZero |= t.value == 0;
      out[i] = Dim(t.value);
    }
  }
  FRICTION_CHECK(!(allowZero && hasZero && inferAt >= 0), "Reshape target has both 0 (allowzero=1) and -1");
  if (!in.hasRank()) return out;

  Factors fi, fo;
  for (const Dim& d : in.dims()) fi.add(d);
  for (size_t i = 0; i < out.size(); ++i)
    if (int(i) != inferAt) fo.add(out[i]);
  if (fi.unknown || fo.unknown) return out;  // -1 (if any) stays unknown
  // Cancel symbols present on both sides.
  for (auto it = fo.syms.begin(); it != fo.syms.end();) {
    auto m = std::find(fi.syms.begin(), fi.syms.end(), *it);
    if (m == fi.syms.end()) {
      ++it;
      continue;
    }
    fi.syms.erase(m);
    it = fo.syms.erase(it);
  }
  std::string mismatch = "Reshape cannot reshape " + in.str() + " to " + Shape(out).str();
  if (inferAt < 0) {
    FRICTION_CHECK(!fi.syms.empty() || !fo.syms.empty() || fi.prod == fo.prod, mismatch + ": element counts differ");
    return out;
  }
  if (!fo.syms.empty()) return out;
  if (fi.syms.empty()) {
    FRICTION_CHECK(fo.prod != 0, mismatch + ": -1 is ambiguous next to a 0-sized dim");
    FRICTION_CHECK(fi.prod % fo.prod == 0, mismatch + ": element counts do not divide");
    out[size_t(inferAt)] = Dim(fi.prod / fo.prod);
  } else if (fi.syms.size() == 1 && fi.prod == fo.prod) {
    out[size_t(inferAt)] = Dim::sym(fi.syms[0]);
  }
  return out;
}

std::vector<int64_t> transposePerm(const Node& node, size_t rank) {
  std::vector<int64_t> perm = node.attrInts("perm");
  if (!node.hasAttr("perm"))
    for (size_t i = 0; i < rank; ++i) perm.push_back(int64_t(rank - 1 - i));
  FRICTION_CHECK(perm.size() == rank, "perm has " + std::to_string(perm.size()) + " entries for rank " +
                                          std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    FRICTION_CHECK(p >= 0 && p < int64_t(rank) && !seen[size_t(p)], "perm " + str(perm) + " is not a permutation");
    seen[size_t(p)] = true;
  }
  return perm;
}

std::vector<int64_t> normalizeAxes(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> r;
  for (int64_t a : axes) {
    FRICTION_CHECK(a >= -rank && a < rank, "axis " + std::to_string(a) + " out of range for rank " + std::to_string(rank));
    a = a < 0 ? a + rank : a;
    FRICTION_CHECK(std::find(r.begin(), r.end(), a) == r.end(), "axes " + str(axes) + " repeat an axis");
    r.push_back(a);
  }
  return r;
}

std::vector<SliceAxis> sliceAxes(int64_t rank, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                                 const std::optional<std::vector<int64_t>>& axes,
                                 const std::optional<std::vector<int64_t>>& steps) {
  size_t n = starts.size();
  FRICTION_CHECK(ends.size() == n, "Slice starts and ends have different lengths");
  FRICTION_CHECK(!axes || axes->size() == n, "Slice axes length differs from starts");
  FRICTION_CHECK(!steps || steps->size() == n, "Slice steps length differs from starts");
  std::vector<int64_t> ax;
  for (size_t i = 0; i < n; ++i) ax.push_back(axes ? (*axes)[i] : int64_t(i));
  ax = normalizeAxes(ax, rank);
  std::vector<SliceAxis> r;
  for (size_t i = 0; i < n; ++i) {
    int64_t step = steps ? (*steps)[i] : 1;
    FRICTION_CHECK(step != 0, "Slice step is 0");
    r.push_back({ax[i], starts[i], ends[i], step});
  }
  return r;
}

int64_t clampSlice(int64_t dim, SliceAxis& s) {
  // Adding dim only to negatives avoids overflowing INT64_MAX ends.
  if (s.start < 0) s.start += dim;
  if (s.end < 0) s.end += dim;
  if (s.step > 0) {
    s.start = std::clamp<int64_t>(s.start, 0, dim);
    s.end = std::clamp<int64_t>(s.end, 0, dim);
    return s.end > s.start ? (s.end - s.start + s.step - 1) / s.step : 0;
  }
  s.start = std::clamp<int64_t>(s.start, 0, dim - 1);
  s.end = std::clamp<int64_t>(s.end, -1, dim - 1);
  return s.start > s.end ? (s.start - s.end - s.step - 1) / -s.step : 0;
}

int64_t padSourceIndex(const std::string& mode, int64_t i, int64_t n) {
  if (i >= 0 && i < n) return i;
  if (mode == "constant") return -1;
  if (mode == "edge") return std::clamp<int64_t>(i, 0, n - 1);
  if (mode == "wrap") return ((i % n) + n) % n;
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);  // reflect without repeating the edge
  i = ((i % period) + period) % period;
  return i < n ? i : period - i;
}

std::vector<int64_t> padsForAllAxes(int64_t rank, const std::vector<int64_t>& pads,
                                    const std::optional<std::vector<int64_t>>& axes) {
  std::vector<int64_t> ax;
  if (axes) ax = normalizeAxes(*axes, rank);
  else
    for (int64_t i = 0; i < rank; ++i) ax.push_back(i);
  size_t n = ax.size();
  FRICTION_CHECK(pads.size() == 2 * n, "Pad pads has " + std::to_string(pads.size()) + " entries, expected " +
                                           std::to_string(2 * n));
  std::vector<int64_t> all(size_t(2 * rank), 0);
  for (size_t i = 0; i < n; ++i) {
    all[size_t(ax[i])] = pads[i];
    all[size_t(ax[i] + rank)] = pads[i + n];
  }
  return all;
}

std::vector<int64_t> splitSizes(int64_t extent, const std::optional<std::vector<int64_t>>& split, size_t numOutputs) {
  if (split) {
    FRICTION_CHECK(split->size() == numOutputs, "Split has " + std::to_string(split->size()) + " sizes for " +
                                                    std::to_string(numOutputs) + " outputs");
    int64_t sum = 0;
    for (int64_t s : *split) {
      FRICTION_CHECK(s >= 0, "Split size " + std::to_string(s) + " is negative");
      sum += s;
    }
    FRICTION_CHECK(sum == extent, "Split sizes " + str(*split) + " do not add up to " + std::to_string(extent));
    return *split;
  }
  int64_t n = int64_t(numOutputs);
  FRICTION_CHECK(extent % n == 0, "Split cannot divide " + std::to_string(extent) + " into " + std::to_string(n) +
                                      " equal parts");
  return std::vector<int64_t>(numOutputs, extent / n);
}

int64_t resizeDim(int64_t in, float scale) {
  FRICTION_CHECK(scale > 0, "Resize scale " + std::to_string(scale) + " is not positive");
  return int64_t(std::floor(double(in) * double(scale)));
}

ResizeParams resizeParams(const Node& node) {
  return {node.attrString("mode", "nearest"),
          node.attrString("coordinate_transformation_mode", "half_pixel"),
          node.attrString("nearest_mode", "round_prefer_floor"),
          node.attrFloat("cubic_coeff_a", -0.75f),
          node.attrFloat("extrapolation_value", 0.0f),
          node.attrInt("exclude_outside", 0) != 0,
          node.attrInt("antialias", 0) != 0};
}

bool resizeTaps(const ResizeParams& p, int64_t o, int64_t in, int64_t out, double scale, double roiStart,
                double roiEnd, std::vector<int64_t>& idx, std::vector<double>& w) {
  double outW = scale * double(in);  // the reference uses the unrounded output width
  double x = double(o);
  if (p.ctm == "align_corners") {
    x = outW == 1 ? 0 : x * double(in - 1) / (outW - 1);
  } else if (p.ctm == "asymmetric") {
    x = x / scale;
  } else if (p.ctm == "tf_crop_and_resize") {
    x = outW == 1 ? (roiEnd - roiStart) * double(in - 1) / 2 : x * (roiEnd - roiStart) * double(in - 1) / (outW - 1);
    x += roiStart * double(in - 1);
    if (x < 0 || x > double(in - 1)) return false;
  } else if (p.ctm == "tf_half_pixel_for_nn") {
    x = (x + 0.5) / scale;
  } else if (p.ctm == "pytorch_half_pixel") {
    x = outW == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  } else if (p.ctm == "half_pixel_symmetric") {  // opset 19: the centres of input and output coincide
    x = double(in) / 2 * (1 - double(out) / outW) + (x + 0.5) / scale - 0.5;
  } else {  // half_pixel
    x = (x + 0.5) / scale - 0.5;
  }
  // Taps start left of x: an integral x is the right tap with ratio 1.
  int64_t base = int64_t(std::ceil(x)) - 1;
  double ratio = x - double(base);
  if (p.antialias && p.mode != "nearest" && scale < 1) {
    // The filter stretched by 1 / scale over 2 - 2 * first taps (first <= 0), weights normalized to sum 1.
    const bool cubic = p.mode == "cubic";
    const int64_t first = int64_t(std::floor((cubic ? -2 : -1) / scale)) + 1;
    const double A = p.cubicA;
    idx.clear(), w.clear();
    double sum = 0;
    for (int64_t i = first; i < 2 - first; ++i) {
      double d = std::fabs(scale * (double(i) - ratio)), c;
      if (!cubic) c = std::clamp(1 - d, 0.0, 1.0);
      else if (d <= 1) c = ((A + 2) * d - (A + 3)) * d * d + 1;
      else if (d < 2) c = ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
      else c = 0;
      idx.push_back(base + i), w.push_back(c), sum += c;
    }
    for (double& v : w) v /= sum;
  } else if (p.mode == "cubic") {
    double A = p.cubicA, r = ratio, s = 1 - ratio;
    w = {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A, ((A + 2) * r - (A + 3)) * r * r + 1,
         ((A + 2) * s - (A + 3)) * s * s + 1, ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A};
    idx = {base - 1, base, base + 1, base + 2};
  } else {
    idx = {base, base + 1};
    if (p.mode == "linear") {
      w = {1 - ratio, ratio};
    } else {
      bool right = ratio == 1 || p.nearestMode == "ceil" ||
                   (p.nearestMode == "round_prefer_floor" && ratio > 0.5) ||
                   (p.nearestMode == "round_prefer_ceil" && ratio >= 0.5);
      w = {right ? 0.0 : 1.0, right ? 1.0 : 0.0};
    }
  }
  if (p.excludeOutside) {
    double sum = 0;
    for (size_t t = 0; t < idx.size(); ++t) {
      if (idx[t] < 0 || idx[t] >= in) w[t] = 0;
      sum += w[t];
    }
    for (double& v : w) v /= sum;
  }
  for (int64_t& i : idx) i = std::clamp<int64_t>(i, 0, in - 1);  // edge padding
  return true;
}

GridSampleParams gridSampleParams(const Node& node) {
  using P = GridSampleParams;
  const std::string mode = node.attrString("mode", "bilinear"), padding = node.attrString("padding_mode", "zeros");
  P p{};
  if (mode == "nearest") p.mode = P::Mode::Nearest;
  else if (mode == "bilinear") p.mode = P::Mode::Linear;
  else if (mode == "bicubic") p.mode = P::Mode::Cubic;
  else throw Error(node.describe() + ": mode must be bilinear, nearest or bicubic, got '" + mode + "'");
  if (padding == "zeros") p.padding = P::Padding::Zeros;
  else if (padding == "border") p.padding = P::Padding::Border;
  else if (padding == "reflection") p.padding = P::Padding::Reflection;
  else throw Error(node.describe() + ": padding_mode must be zeros, border or reflection, got '" + padding + "'");
  p.alignCorners = node.attrInt("align_corners", 0) != 0;
  return p;
}

namespace {
// x reflected by the nearer border, as often as it takes, into [lo, hi] (the reference's _gs_reflect).
double reflectInto(double x, double lo, double hi) {
  const double span = hi - lo;
  if (span <= 0) return lo;
  if (x < lo || x > hi) {
    const double dx = x < lo ? lo - x : x - hi;
    const int64_t n = int64_t(dx / span);
    const double r = dx - double(n) * span;
    const bool even = n % 2 == 0;
    return x < lo ? (even ? lo + r : hi - r) : (even ? hi - r : lo + r);
  }
  return x;
}
}  // namespace

void gridSampleTaps(const GridSampleParams& p, float g, int64_t extent, std::vector<int64_t>& idx,
                    std::vector<float>& w) {
  using P = GridSampleParams;
  const float length = float(extent);
  float x = p.alignCorners ? (g + 1) / 2.0f * (length - 1) : ((g + 1) * length - 1) / 2.0f;
  const double lo = p.alignCorners ? 0.0 : -0.5, hi = p.alignCorners ? double(extent - 1) : double(extent) - 0.5;
  if (p.mode == P::Mode::Nearest) x = std::nearbyint(x);  // half to even, as np.rint
  if (double(x) < lo || double(x) > hi) {
    if (p.padding == P::Padding::Border) x = std::clamp(x, 0.0f, length - 1);
    else if (p.padding == P::Padding::Reflection) x = float(reflectInto(double(x), lo, hi));
  }
  auto pixel = [&](int64_t i) -> int64_t {  // where the padding mode reads pixel i
    if (p.padding == P::Padding::Zeros) return i >= 0 && i < extent ? i : -1;
    if (p.padding == P::Padding::Border) return std::clamp<int64_t>(i, 0, extent - 1);
    return int64_t(reflectInto(double(i), lo, hi));
  };
  idx.clear(), w.clear();
  if (p.mode == P::Mode::Nearest) {
    idx.push_back(pixel(int64_t(x))), w.push_back(1.0f);
    return;
  }
  const float base = std::floor(x), t = x - base;
  const int64_t b = int64_t(base);
  if (p.mode == P::Mode::Linear) {
    idx = {pixel(b), pixel(b + 1)}, w = {1 - t, t};
    return;
  }
  const float A = -0.75f, s = 1 - t, t1 = t + 1, s1 = 2 - t;
  idx = {pixel(b - 1), pixel(b), pixel(b + 1), pixel(b + 2)};
  w = {((A * t1 - 5 * A) * t1 + 8 * A) * t1 - 4 * A, ((A + 2) * t - (A + 3)) * t * t + 1,
       ((A + 2) * s - (A + 3)) * s * s + 1, ((A * s1 - 5 * A) * s1 + 8 * A) * s1 - 4 * A};
}

int64_t rangeCount(double start, double limit, double delta) {
  FRICTION_CHECK(delta != 0, "Range delta is 0");
  return std::max<int64_t>(int64_t(std::ceil((limit - start) / delta)), 0);
}

Tensor constantValue(const Node& node) {
  for (const char* unsupported : {"value_string", "value_strings", "sparse_value"})
    FRICTION_CHECK(!node.hasAttr(unsupported),
                   "Constant with '" + std::string(unsupported) + "' is not supported (string and sparse tensors)");
  FRICTION_CHECK(node.attrs().size() == 1, "Constant needs exactly one value attribute");
  if (node.hasAttr("value")) return node.attrTensor("value");
  if (node.hasAttr("value_float")) return Tensor::scalarF32(node.attrFloat("value_float", 0));
  if (node.hasAttr("value_int")) return Tensor::scalarI64(node.attrInt("value_int", 0));
  if (node.hasAttr("value_floats")) {
    std::vector<float> v = node.attrFloats("value_floats");
    return Tensor::fromVector<float>(DType::F32, {int64_t(v.size())}, v);
  }
  return Tensor::vectorI64(node.attrInts("value_ints"));
}

}  // namespace friction
