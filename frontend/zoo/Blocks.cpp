#include "frontend/zoo/Blocks.h"

#include <cctype>
#include <cmath>

#include "ir/Error.h"
#include "ir/Spec.h"

namespace friction::zoo {

// ---- Knobs ----

namespace {
std::pair<std::string, std::string> splitKnob(const std::string& kv) {
  size_t eq = kv.find('=');
  return {kv.substr(0, eq), eq == std::string::npos ? "" : kv.substr(eq + 1)};
}

std::optional<int64_t> parseInt(const std::string& s) {
  try {
    size_t used;
    int64_t v = std::stoll(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}
}  // namespace

Knobs::Knobs(const ZooSpec& spec, const ArchInfo& info) : spec_(spec) {
  std::string names;
  for (const auto& kv : info.knobs) {
    auto [k, v] = splitKnob(kv);
    values_[k] = v;
    names += (names.empty() ? "" : ", ") + k;
  }
  for (const auto& [k, v] : spec.params)
    FRICTION_CHECK(k == "preset" || values_.count(k),
                   "zoo:" + spec.arch + ": unknown knob '" + k + "' (knobs: " + names + ", preset)");
  if (auto it = spec.params.find("preset"); it != spec.params.end()) {
    const PresetInfo* preset = nullptr;
    std::string known;
    for (const auto& p : info.presets) {
      if (p.name == it->second) preset = &p;
      known += (known.empty() ? "" : ", ") + p.name;
    }
    FRICTION_CHECK(preset, "zoo:" + spec.arch + ": unknown preset '" + it->second + "' (presets: " +
                               (known.empty() ? "none" : known) + ")");
    for (const auto& [k, v] : parseSpec("p?" + preset->knobs).params) {
      values_[k] = v;
      origin_[k] = "preset " + preset->name;
    }
  }
  for (const auto& [k, v] : spec.params)
    if (k != "preset") {
      values_[k] = v;
      origin_.erase(k);
    }
}

std::string Knobs::err(const std::string& k) const {
  auto o = origin_.find(k);
  return "zoo:" + spec_.arch + ": knob " + k + "='" + values_.at(k) + "'" +
         (o == origin_.end() ? "" : " (from " + o->second + ")");
}

int64_t Knobs::get(const std::string& k, int64_t lo, int64_t hi) const {
  auto v = parseInt(values_.at(k));
  FRICTION_CHECK(v, err(k) + " is not an integer");
  FRICTION_CHECK(*v >= lo && *v <= hi,
                 err(k) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return *v;
}

std::string Knobs::choice(const std::string& k, const std::set<std::string>& choices) const {
  const std::string& v = values_.at(k);
  if (choices.count(v)) return v;
  throw Error(err(k) + " must be one of " + Spec::alternatives(choices));
}

Dim Knobs::batch() const {
  const std::string& v = values_.at("batch");
  if (!v.empty() && std::isdigit(static_cast<unsigned char>(v[0]))) return Dim(get("batch", 1));
  bool ident = !v.empty() && (std::isalpha(static_cast<unsigned char>(v[0])) || v[0] == '_');
  for (char c : v) ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  FRICTION_CHECK(ident, err("batch") + " must be a positive integer or a symbol name such as N");
  return Dim::sym(v);
}

std::vector<int64_t> Knobs::stages(size_t n) const {
  int64_t depth = get("depth", 0, 4096);
  std::string list = values_.at("stages");
  if (isExplicit("depth") && !isExplicit("stages")) list = "auto";  // an explicit depth beats a preset's stages
  std::vector<int64_t> r;
  if (list == "auto") {
    for (size_t s = 0; s < n; ++s) r.push_back(depth / int64_t(n) + (s >= n - size_t(depth) % n ? 1 : 0));
    return r;
  }
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    auto v = parseInt(list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    FRICTION_CHECK(v && *v >= 0 && *v <= 4096, err("stages") + " must be a comma-separated list of block counts");
    r.push_back(*v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  FRICTION_CHECK(r.size() == n, err("stages") + " must list " + std::to_string(n) + " stages");
  int64_t sum = 0;
  for (int64_t v : r) sum += v;
  FRICTION_CHECK(!isExplicit("depth") || sum == depth,
                 err("stages") + " has " + std::to_string(sum) + " blocks but depth=" + std::to_string(depth));
  return r;
}

// ---- Weights ----

namespace {
inline uint64_t mix64(uint64_t z) {  // the splitmix64 finalizer
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
}  // namespace

Tensor Weights::uniform(const std::string& name, std::vector<int64_t> shape, float center, float spread) const {
  Tensor t(DType::F32, std::move(shape));
  uint64_t key = seed_ * 0x9e3779b97f4a7c15ULL;
  for (char c : name) key = (key ^ uint8_t(c)) * 0x100000001b3ULL;  // FNV-1a over the name
  key = mix64(key);
  // Counter-based: element pair i comes from mix64(key + i), so the loop has
  // no carried state and vectorizes; two 24-bit uniforms per draw.
  float* p = t.data<float>();
  int64_t n = t.numel();
  const float scale = 2.0f * spread / float(1 << 24), lo = center - spread;
  for (int64_t i = 0; i < n / 2; ++i) {
    uint64_t r = mix64(key + uint64_t(i) * 0x9e3779b97f4a7c15ULL);
    p[2 * i] = lo + float(r & 0xffffff) * scale;
    p[2 * i + 1] = lo + float(r >> 40) * scale;
  }
  if (n % 2) p[n - 1] = lo + float(mix64(key + uint64_t(n) * 0x9e3779b97f4a7c15ULL) >> 40) * scale;
  return t;
}

// ---- Net ----

Value* Net::param(const std::string& name, std::vector<int64_t> shape, float center, float spread) {
  return b.constant(w.uniform(name, std::move(shape), center, spread), name);
}

Value* Net::weight(const std::string& name, std::vector<int64_t> shape, int64_t fanIn) {
  return param(name, std::move(shape), 0.0f, float(std::sqrt(3.0 / double(fanIn))));
}

Value* Net::scalar(float v) {
  auto [it, fresh] = scalars_.try_emplace(v, nullptr);
  if (fresh) it->second = b.constant(Tensor::scalarF32(v), "const");
  return it->second;
}

Value* Net::ints(const std::vector<int64_t>& v) {
  auto [it, fresh] = ints_.try_emplace(v, nullptr);
  if (fresh) it->second = b.constant(Tensor::vectorI64(v), "shape");
  return it->second;
}

Value* Net::conv(Value* x, int64_t cin, int64_t cout, int64_t k, int64_t stride, const std::string& name,
                 int64_t group, bool bias, int64_t pad) {
  int64_t p = pad < 0 ? k / 2 : pad;
  std::vector<Value*> in = {x, weight(name + ".weight", {cout, cin / group, k, k}, cin / group * k * k)};
  if (bias) in.push_back(param(name + ".bias", {cout}, 0.0f, 0.01f));
  std::map<std::string, Attribute> attrs = {{"kernel_shape", std::vector<int64_t>{k, k}},
                                            {"strides", std::vector<int64_t>{stride, stride}},
                                            {"pads", std::vector<int64_t>{p, p, p, p}}};
  if (group != 1) attrs["group"] = group;
  return b.op("Conv", in, attrs, name);
}

Value* Net::batchNorm(Value* x, int64_t c, const std::string& name) {
  return b.op("BatchNormalization",
              {x, param(name + ".scale", {c}, 1.0f, 0.1f), param(name + ".bias", {c}, 0.0f, 0.1f),
               param(name + ".mean", {c}, 0.0f, 0.1f), param(name + ".var", {c}, 1.0f, 0.1f)},
              {{"epsilon", 1e-5f}}, name);
}

Value* Net::convBn(Value* x, int64_t cin, int64_t cout, int64_t k, int64_t stride, const std::string& name,
                   const std::string& act, int64_t group) {
  Value* y = batchNorm(conv(x, cin, cout, k, stride, name, group), cout, name + ".bn");
  if (act == "relu") return relu(y, name + ".relu");
  if (act == "relu6") return relu6(y, name + ".relu6");
  return y;
}

Value* Net::transpose(Value* x, std::vector<int64_t> perm, const std::string& name) {
  return b.op("Transpose", {x}, {{"perm", std::move(perm)}}, name);
}

Value* Net::reshape(Value* x, const std::vector<int64_t>& dims, const std::string& name) {
  return b.op("Reshape", {x, ints(dims)}, {}, name);
}

Value* Net::linear(Value* x, int64_t in, int64_t out, const std::string& name) {
  Value* bias = param(name + ".bias", {out}, 0.0f, 0.01f);
  if (x->shape().rank() == 2)
    return b.op("Gemm", {x, weight(name + ".weight", {out, in}, in), bias}, {{"transB", int64_t(1)}}, name);
  // [in, out] so that MatMul applies it to the last axis of any rank.
  Value* y = b.op("MatMul", {x, weight(name + ".weight", {in, out}, in)}, {}, name);
  return b.op("Add", {y, bias}, {}, name + ".add_bias");
}

Value* Net::layerNorm(Value* x, int64_t c, const std::string& name) {
  return b.op("LayerNormalization", {x, param(name + ".scale", {c}, 1.0f, 0.1f), param(name + ".bias", {c}, 0.0f, 0.1f)},
              {{"axis", int64_t(-1)}, {"epsilon", 1e-6f}}, name);
}

Value* Net::channelLayerNorm(Value* x, int64_t c, const std::string& name) {
  Value* y = layerNorm(transpose(x, {0, 2, 3, 1}, name + ".to_nhwc"), c, name);
  return transpose(y, {0, 3, 1, 2}, name + ".to_nchw");
}

Value* Net::gelu(Value* x, const std::string& name) {
  Value* e = b.op("Erf", {b.op("Div", {x, scalar(float(std::sqrt(2.0)))}, {}, name + ".div")}, {}, name + ".erf");
  Value* y = b.op("Mul", {x, b.op("Add", {e, scalar(1.0f)}, {}, name + ".add")}, {}, name + ".mul");
  return b.op("Mul", {y, scalar(0.5f)}, {}, name + ".half");
}

Value* Net::mlp(Value* x, int64_t d, int64_t hidden, const std::string& name) {
  return linear(gelu(linear(x, d, hidden, name + ".fc1"), name + ".gelu"), hidden, d, name + ".fc2");
}

Value* Net::attention(Value* x, int64_t d, int64_t heads, const std::string& name) {
  int64_t hd = d / heads;
  // [N, T, d] -> [N, T, heads, hd] -> perm: queries/values [N, heads, T, hd], keys [N, heads, hd, T].
  auto project = [&](const std::string& what, std::vector<int64_t> perm) {
    std::string p = name + "." + what;
    return transpose(reshape(linear(x, d, d, p), {0, 0, heads, hd}, p + ".split_heads"), std::move(perm), p + ".heads");
  };
  Value* q = project("q", {0, 2, 1, 3});
  Value* k = project("k", {0, 2, 3, 1});
  Value* v = project("v", {0, 2, 1, 3});
  Value* s = b.op("Mul", {b.op("MatMul", {q, k}, {}, name + ".scores"), scalar(float(1.0 / std::sqrt(double(hd))))}, {},
                  name + ".scale");
  Value* a = b.op("Softmax", {s}, {{"axis", int64_t(-1)}}, name + ".softmax");
  Value* ctx = transpose(b.op("MatMul", {a, v}, {}, name + ".context"), {0, 2, 1, 3}, name + ".merge_heads");
  return linear(reshape(ctx, {0, 0, d}, name + ".merge"), d, d, name + ".proj");
}

Value* Net::patchEmbed(Value* x, int64_t d, int64_t patch, const std::string& name) {
  Value* y = conv(x, 3, d, patch, patch, name + ".conv", 1, /*bias=*/true, /*pad=*/0);
  return transpose(reshape(y, {0, 0, -1}, name + ".flatten"), {0, 2, 1}, name + ".to_tokens");
}

Value* Net::globalPool(Value* x, const std::string& name) {
  return b.op("Flatten", {b.op("GlobalAveragePool", {x}, {}, name)}, {{"axis", int64_t(1)}}, name + ".flatten");
}

Value* imageInput(Net& n, const Knobs& k, int64_t res) {
  return n.b.input("input", {DType::F32, Shape({k.batch(), 3, res, res})});
}

std::vector<std::string> withCommonKnobs(std::vector<std::string> knobs) {
  for (const char* kv : {"classes=10", "batch=N", "seed=0"}) knobs.emplace_back(kv);
  return knobs;
}

}  // namespace friction::zoo
