#include "frontend/zoo/Zoo.h"

#include <cmath>
#include <functional>
#include <random>
#include <set>

#include "ir/Builder.h"
#include "ir/Error.h"

namespace friction::zoo {
namespace {

// Knob access that rejects unknown keys and bad numbers with a clear message.
class Knobs {
 public:
  Knobs(const ZooSpec& s, std::set<std::string> allowed) : spec_(s) {
    for (const auto& [k, v] : s.params)
      FRICTION_CHECK(allowed.count(k), "zoo:" + s.arch + ": unknown knob '" + k + "' (knobs: " + join(allowed) + ")");
  }
  int64_t get(const std::string& k, int64_t def, int64_t lo = 1, int64_t hi = int64_t(1) << 20) const {
    auto it = spec_.params.find(k);
    if (it == spec_.params.end()) return def;
    int64_t v;
    try {
      size_t used;
      v = std::stoll(it->second, &used);
      FRICTION_CHECK(used == it->second.size(), "");
    } catch (const std::exception&) {
      throw Error("zoo:" + spec_.arch + ": knob " + k + "='" + it->second + "' is not an integer");
    }
    FRICTION_CHECK(v >= lo && v <= hi, "zoo:" + spec_.arch + ": knob " + k + "=" + std::to_string(v) +
                                           " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v;
  }
  // The batch dim: a positive number, or a symbol (default "N").
  Dim batch() const {
    auto it = spec_.params.find("batch");
    if (it == spec_.params.end()) return Dim::sym("N");
    if (!it->second.empty() && std::isdigit(static_cast<unsigned char>(it->second[0]))) return Dim(get("batch", 1));
    return Dim::sym(it->second);
  }

 private:
  static std::string join(const std::set<std::string>& s) {
    std::string r;
    for (const auto& x : s) r += (r.empty() ? "" : ", ") + x;
    return r;
  }
  const ZooSpec& spec_;
};

// Deterministic weights: uniform in +-sqrt(3/fan_in) (variance 1/fan_in), so
// activations stay O(1) through deep stacks.
class Weights {
 public:
  explicit Weights(uint64_t seed) : rng_(seed) {}
  Tensor uniform(std::vector<int64_t> shape, double bound) {
    Tensor t(DType::F32, std::move(shape));
    std::uniform_real_distribution<float> d(float(-bound), float(bound));
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng_);
    return t;
  }
  Tensor scaled(std::vector<int64_t> shape, int64_t fanIn) { return uniform(std::move(shape), std::sqrt(3.0 / double(fanIn))); }
  Tensor around(std::vector<int64_t> shape, float center, float spread) {
    Tensor t = uniform(std::move(shape), spread);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] += center;
    return t;
  }

 private:
  std::mt19937_64 rng_;
};

struct Net {
  Graph* graph;
  GraphBuilder b;
  Weights w;
  Net(Graph& g, uint64_t seed) : graph(&g), b(g), w(seed) {}

  Value* conv(Value* x, int64_t cin, int64_t cout, int64_t k, int64_t stride, const std::string& name) {
    Value* weight = b.constant(w.scaled({cout, cin, k, k}, cin * k * k), name + ".weight");
    int64_t p = k / 2;
    return b.op("Conv", {x, weight},
                {{"kernel_shape", std::vector<int64_t>{k, k}}, {"strides", std::vector<int64_t>{stride, stride}},
                 {"pads", std::vector<int64_t>{p, p, p, p}}},
                name);
  }
  Value* batchNorm(Value* x, int64_t c, const std::string& name) {
    return b.op("BatchNormalization",
                {x, b.constant(w.around({c}, 1.0f, 0.1f), name + ".scale"), b.constant(w.around({c}, 0.0f, 0.1f), name + ".bias"),
                 b.constant(w.around({c}, 0.0f, 0.1f), name + ".mean"), b.constant(w.around({c}, 1.0f, 0.1f), name + ".var")},
                {{"epsilon", 1e-5f}}, name);
  }
  Value* linear(Value* x, int64_t in, int64_t out, const std::string& name) {
    return b.op("Gemm", {x, b.constant(w.scaled({out, in}, in), name + ".weight"), b.constant(w.around({out}, 0, 0.01f), name + ".bias")},
                {{"transB", int64_t(1)}}, name);
  }
};

// ResNet-style stack of `depth` identical basic blocks at one width: the
// repeated-block archetype the depth studies grow.
std::unique_ptr<Graph> buildResnet(const ZooSpec& spec) {
  Knobs k(spec, {"depth", "width", "resolution", "classes", "batch", "seed"});
  int64_t depth = k.get("depth", 2, 0, 4096), width = k.get("width", 16), res = k.get("resolution", 32, 4, 4096);
  int64_t classes = k.get("classes", 10);
  auto g = std::make_unique<Graph>("resnet");
  Net n(*g, uint64_t(k.get("seed", 0, 0)));
  Value* x = n.b.input("input", {DType::F32, Shape({k.batch(), 3, res, res})});
  Value* h = n.b.op("Relu", {n.batchNorm(n.conv(x, 3, width, 3, 2, "stem.conv"), width, "stem.bn")}, {}, "stem.relu");
  for (int64_t i = 0; i < depth; ++i) {
    std::string p = "block" + std::to_string(i);
    Value* y = n.b.op("Relu", {n.batchNorm(n.conv(h, width, width, 3, 1, p + ".conv1"), width, p + ".bn1")}, {}, p + ".relu1");
    y = n.batchNorm(n.conv(y, width, width, 3, 1, p + ".conv2"), width, p + ".bn2");
    h = n.b.op("Relu", {n.b.op("Add", {y, h}, {}, p + ".add")}, {}, p + ".relu2");
  }
  Value* pooled = n.b.op("Flatten", {n.b.op("GlobalAveragePool", {h}, {}, "head.pool")}, {{"axis", int64_t(1)}}, "head.flatten");
  n.b.output(n.linear(pooled, width, classes, "head.fc"));
  return g;
}

std::unique_ptr<Graph> buildMlp(const ZooSpec& spec) {
  Knobs k(spec, {"depth", "width", "inputs", "classes", "batch", "seed"});
  int64_t depth = k.get("depth", 2, 0, 4096), width = k.get("width", 64), inputs = k.get("inputs", 64);
  int64_t classes = k.get("classes", 10);
  auto g = std::make_unique<Graph>("mlp");
  Net n(*g, uint64_t(k.get("seed", 0, 0)));
  Value* h = n.b.input("input", {DType::F32, Shape({k.batch(), inputs})});
  int64_t in = inputs;
  for (int64_t i = 0; i < depth; ++i) {
    std::string p = "layer" + std::to_string(i);
    h = n.b.op("Relu", {n.linear(h, in, width, p + ".fc")}, {}, p + ".relu");
    in = width;
  }
  n.b.output(n.linear(h, in, classes, "head.fc"));
  return g;
}

struct Arch {
  ArchInfo info;
  std::function<std::unique_ptr<Graph>(const ZooSpec&)> build;
};

const std::vector<Arch>& archs() {
  static const std::vector<Arch> a = {
      {{"resnet", "stem conv + `depth` identical basic residual blocks (Conv-BN-Relu-Conv-BN-Add-Relu)",
        {"depth=2", "width=16", "resolution=32", "classes=10", "batch=N", "seed=0"}},
       buildResnet},
      {{"mlp", "`depth` Gemm+Relu layers", {"depth=2", "width=64", "inputs=64", "classes=10", "batch=N", "seed=0"}},
       buildMlp},
  };
  return a;
}

}  // namespace

ZooSpec parseSpec(const std::string& text) {
  ZooSpec s;
  size_t q = text.find('?');
  s.arch = text.substr(0, q);
  FRICTION_CHECK(!s.arch.empty(), "zoo spec '" + text + "' names no architecture");
  if (q == std::string::npos) return s;
  std::string rest = text.substr(q + 1);
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t amp = rest.find('&', pos);
    std::string kv = rest.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
    if (!kv.empty()) {
      size_t eq = kv.find('=');
      FRICTION_CHECK(eq != std::string::npos && eq > 0, "zoo spec '" + text + "': expected key=value, got '" + kv + "'");
      s.params[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    if (amp == std::string::npos) break;
    pos = amp + 1;
  }
  return s;
}

std::unique_ptr<Graph> build(const ZooSpec& spec) {
  for (const auto& a : archs())
    if (a.info.name == spec.arch) return a.build(spec);
  std::string known;
  for (const auto& a : archs()) known += (known.empty() ? "" : ", ") + a.info.name;
  throw Error("unknown zoo architecture '" + spec.arch + "' (available: " + known + ")");
}

std::vector<ArchInfo> list() {
  std::vector<ArchInfo> r;
  for (const auto& a : archs()) r.push_back(a.info);
  return r;
}

}  // namespace friction::zoo
