#include "ir/ops/NnShapes.h"

#include <algorithm>
#include <cctype>

#include "ir/Error.h"
#include "ir/ops/ShapeHelpers.h"

namespace friction {

int64_t Window::kernelSize() const {
  int64_t k = 1;
  for (int64_t d : kernel) k *= d;
  return k;
}

std::vector<int64_t> Window::outputSpatial(const std::vector<int64_t>& in) const {
  size_t n = rank();
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i)
    out[i] = windowOutput(in[i], kernel[i], strides[i], dilations[i], pads[i], pads[i + n], ceilMode);
  return out;
}

std::pair<int64_t, int64_t> insideTaps(int64_t taps, int64_t in, int64_t out, int64_t stride, int64_t padBegin,
                                       int64_t dilation) {
  int64_t first = taps, last = -1;
  for (int64_t t = 0; t < taps; ++t)
    for (int64_t o = 0; o < out; ++o) {
      const int64_t i = o * stride - padBegin + t * dilation;
      if (i >= 0 && i < in) {
        first = std::min(first, t), last = t;
        break;
      }
    }
  return {first, last + 1};
}

namespace {

// An ints attribute of length `n`, defaulting to all `def`.
std::vector<int64_t> spatialAttr(const Node& node, const char* name, size_t n, int64_t def) {
  std::vector<int64_t> v = node.attrInts(name, std::vector<int64_t>(n, def));
  FRICTION_CHECK(v.size() == n, node.describe() + ": '" + name + "' has " + std::to_string(v.size()) +
                                    " entries, expected " + std::to_string(n));
  for (int64_t x : v)
    FRICTION_CHECK(x >= 1, node.describe() + ": '" + name + "' entries must be >= 1");
  return v;
}

// Floor division (Python semantics) so negative total padding splits like ONNX's reference.
int64_t floorDiv2(int64_t x) { return x >= 0 ? x / 2 : -((-x + 1) / 2); }

}  // namespace

Window resolveWindow(const Node& node, const std::vector<int64_t>& inSpatial, std::vector<int64_t> kernel) {
  size_t n = inSpatial.size();
  Window w;
  if (node.hasAttr("kernel_shape")) {
    std::vector<int64_t> ks = node.attrInts("kernel_shape");
    FRICTION_CHECK(kernel.empty() || ks == kernel,
                   node.describe() + ": kernel_shape " + Shape::fromStatic(ks).str() +
                       " does not match the weight's spatial shape " + Shape::fromStatic(kernel).str());
    kernel = ks;
  }
  FRICTION_CHECK(!kernel.empty() || n == 0, node.describe() + ": kernel_shape is required");
  FRICTION_CHECK(kernel.size() == n, node.describe() + ": kernel has " + std::to_string(kernel.size()) +
                                         " spatial dims, input has " + std::to_string(n));
  w.kernel = kernel;
  w.strides = spatialAttr(node, "strides", n, 1);
  w.dilations = spatialAttr(node, "dilations", n, 1);
  w.ceilMode = node.attrInt("ceil_mode", 0) != 0;
  try {
    w.pads = resolvePads(node.attrString("auto_pad", "NOTSET"), inSpatial, w.kernel, w.strides, w.dilations,
                         node.attrInts("pads"));
  } catch (const Error& e) {
    throw Error(node.describe() + ": " + e.what());
  }
  for (int64_t p : w.pads) FRICTION_CHECK(p >= 0, node.describe() + ": pads must be non-negative");
  return w;
}

TransposeGeometry resolveConvTranspose(const Node& node, const std::vector<int64_t>& inSpatial,
                                       const std::vector<int64_t>& kernel) {
  size_t n = inSpatial.size();
  TransposeGeometry g;
  Window& w = g.window;
  if (node.hasAttr("kernel_shape"))
    FRICTION_CHECK(node.attrInts("kernel_shape") == kernel,
                   node.describe() + ": kernel_shape does not match the weight's spatial shape");
  FRICTION_CHECK(kernel.size() == n, node.describe() + ": weight has " + std::to_string(kernel.size()) +
                                         " spatial dims, input has " + std::to_string(n));
  w.kernel = kernel;
  w.strides = spatialAttr(node, "strides", n, 1);
  w.dilations = spatialAttr(node, "dilations", n, 1);
  std::vector<int64_t> outPad = node.attrInts("output_padding", std::vector<int64_t>(n, 0));
  FRICTION_CHECK(outPad.size() == n, node.describe() + ": output_padding has wrong length");
  std::string autoPad = node.attrString("auto_pad", "NOTSET");
  std::vector<int64_t> outShape = node.attrInts("output_shape");
  // output_shape may include the N and C dims; keep the spatial tail.
  if (outShape.size() > n) outShape.erase(outShape.begin(), outShape.end() - long(n));
  FRICTION_CHECK(outShape.empty() || outShape.size() == n, node.describe() + ": output_shape has wrong length");
  if (outShape.empty() && (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER"))
    for (size_t i = 0; i < n; ++i) outShape.push_back(inSpatial[i] * w.strides[i]);

  std::vector<int64_t> full(n);  // extent before removing pads
  for (size_t i = 0; i < n; ++i)
    full[i] = w.strides[i] * (inSpatial[i] - 1) + outPad[i] + (kernel[i] - 1) * w.dilations[i] + 1;
  w.pads.assign(2 * n, 0);
  if (!outShape.empty()) {
    for (size_t i = 0; i < n; ++i) {
      int64_t total = full[i] - outShape[i];
      int64_t half = floorDiv2(total);
      w.pads[i] = autoPad == "SAME_UPPER" ? half : total - half;
      w.pads[i + n] = total - w.pads[i];
    }
    g.outSpatial = outShape;
    return g;
  }
  if (autoPad == "NOTSET" || autoPad.empty()) {
    std::vector<int64_t> p = node.attrInts("pads", std::vector<int64_t>(2 * n, 0));
    FRICTION_CHECK(p.size() == 2 * n, node.describe() + ": pads has wrong length");
    w.pads = p;
  } else {
    FRICTION_CHECK(autoPad == "VALID", node.describe() + ": unknown auto_pad '" + autoPad + "'");
  }
  g.outSpatial.resize(n);
  for (size_t i = 0; i < n; ++i) {
    g.outSpatial[i] = full[i] - w.pads[i] - w.pads[i + n];
    FRICTION_CHECK(g.outSpatial[i] >= 0, node.describe() + ": negative output size");
  }
  return g;
}

EinsumSpec parseEinsum(const std::string& equation, const std::vector<size_t>& ranks) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  auto fail = [&](const std::string& msg) { throw Error("Einsum '" + equation + "': " + msg); };
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size())
    fail(std::to_string(terms.size()) + " input terms for " + std::to_string(ranks.size()) + " inputs");

  auto label = [&](char c) -> int {
    if (c >= 'a' && c <= 'z') return c - 'a';
    if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
    throw Error("Einsum '" + equation + "': invalid character '" + c + "'");
  };
  // Count letters per term and find the broadcast ellipsis rank.
  EinsumSpec spec;
  std::vector<int> letterCount(52, 0);
  for (size_t t = 0; t < terms.size(); ++t) {
    size_t dots = terms[t].find("...");
    size_t letters = terms[t].size() - (dots == std::string::npos ? 0 : 3);
    if (dots == std::string::npos ? letters != ranks[t] : letters > ranks[t])
      fail("term '" + terms[t] + "' does not match input rank " + std::to_string(ranks[t]));
    if (dots != std::string::npos) spec.ellipsisRank = std::max(spec.ellipsisRank, int(ranks[t] - letters));
  }
  for (size_t t = 0; t < terms.size(); ++t) {
    std::vector<int> labels;
    const std::string& s = terms[t];
    for (size_t i = 0; i < s.size(); ++i) {
      if (s.compare(i, 3, "...") == 0) {
        int e = int(ranks[t]) - int(s.size() - 3);
        for (int j = 0; j < e; ++j) labels.push_back(52 + spec.ellipsisRank - e + j);  // right-aligned
        i += 2;
      } else {
        int l = label(s[i]);
        labels.push_back(l);
        letterCount[size_t(l)]++;
      }
    }
    spec.inputs.push_back(labels);
  }
  if (arrow != std::string::npos) {
    std::string rhs = eq.substr(arrow + 2);
    for (size_t i = 0; i < rhs.size(); ++i) {
      if (rhs.compare(i, 3, "...") == 0) {
        for (int j = 0; j < spec.ellipsisRank; ++j) spec.output.push_back(52 + j);
        i += 2;
        continue;
      }
      int l = label(rhs[i]);
      if (!letterCount[size_t(l)]) fail(std::string("output label '") + rhs[i] + "' is not in any input");
      if (std::count(spec.output.begin(), spec.output.end(), l)) fail("repeated output label");
      spec.output.push_back(l);
    }
  } else {
    // Implicit form: ellipsis dims, then labels used once, in alphabetical (ASCII) order.
    for (int j = 0; j < spec.ellipsisRank; ++j) spec.output.push_back(52 + j);
    for (int c = 'A'; c <= 'z'; ++c)
      if (std::isalpha(c) && letterCount[size_t(label(char(c)))] == 1) spec.output.push_back(label(char(c)));
  }
  return spec;
}

}  // namespace friction
