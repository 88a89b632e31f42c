// Shared parts of the zoo archetypes: knob parsing (defaults < preset <
// explicit), deterministic weights, and `Net`, the block builders (conv, bn,
// linear, layer norm, GELU, attention, MLP) every archetype is made of.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "frontend/zoo/Zoo.h"
#include "ir/Builder.h"

namespace friction::zoo {

// An archetype: its description and its generator.
struct Arch {
  ArchInfo info;
  std::function<std::unique_ptr<Graph>(const ZooSpec&)> build;
};

Arch resnetArch();
Arch mobilenetV2Arch();
Arch convnextArch();
Arch vitArch();
Arch mixerArch();
Arch mlpArch();

// Knob values: the archetype's defaults (from ArchInfo::knobs), overridden by
// the preset's, overridden by the spec's. Unknown knobs and bad values throw
// Error naming the knob.
class Knobs {
 public:
  Knobs(const ZooSpec& spec, const ArchInfo& info);
  int64_t get(const std::string& k, int64_t lo = 1, int64_t hi = int64_t(1) << 20) const;
  // A string knob restricted to `choices`.
  std::string choice(const std::string& k, const std::set<std::string>& choices) const;
  // The batch dim: a positive number, or a symbol (default "N").
  Dim batch() const;
  uint64_t seed() const { return uint64_t(get("seed", 0, int64_t(1) << 62)); }
  // Blocks per stage for a staged CNN of `n` stages. `stages=a,b,..` lists
  // them; otherwise `depth` blocks are spread as evenly as possible, the
  // remainder going to the last stages (depth 6 over 4 stages: 1,1,2,2). An
  // explicit depth overrides a preset's stages.
  std::vector<int64_t> stages(size_t n) const;

 private:
  std::string err(const std::string& k) const;
  bool isExplicit(const std::string& k) const { return spec_.params.count(k) != 0; }
  const ZooSpec& spec_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::string> origin_;  // knob -> "preset NAME" when set by a preset
};

// Deterministic weights: every tensor's values depend only on (seed, tensor
// name), so growing a model keeps the weights of the blocks it already had.
// A counter-based splitmix64 fills the buffer in place (fast, no copies).
class Weights {
 public:
  explicit Weights(uint64_t seed) : seed_(seed) {}
  // Uniform in center +- spread.
  Tensor uniform(const std::string& name, std::vector<int64_t> shape, float center, float spread) const;

 private:
  uint64_t seed_;
};

struct Net {
  Graph& g;
  GraphBuilder b;
  Weights w;
  Net(Graph& graph, uint64_t seed) : g(graph), b(graph), w(seed) {}

  // ---- parameters and shared constants ----
  Value* param(const std::string& name, std::vector<int64_t> shape, float center, float spread);
  // Weight of fan-in `fanIn`: uniform +-sqrt(3/fanIn) (variance 1/fanIn), so
  // activations stay O(1) through deep stacks.
  Value* weight(const std::string& name, std::vector<int64_t> shape, int64_t fanIn);
  // One initializer per distinct value, shared by all blocks (so repeated
  // blocks stay structurally identical and constants don't inflate counts).
  Value* scalar(float v);
  Value* ints(const std::vector<int64_t>& v);

  // ---- layers; `name` names the node, its parameters are `name.weight` etc. ----
  Value* conv(Value* x, int64_t cin, int64_t cout, int64_t k, int64_t stride, const std::string& name,
              int64_t group = 1, bool bias = false, int64_t pad = -1 /* k/2 */);
  Value* batchNorm(Value* x, int64_t c, const std::string& name);
  // Conv (no bias) + BatchNormalization (+ activation "relu", "relu6" or "").
  Value* convBn(Value* x, int64_t cin, int64_t cout, int64_t k, int64_t stride, const std::string& name,
                const std::string& act, int64_t group = 1);
  Value* relu(Value* x, const std::string& name) { return b.op("Relu", {x}, {}, name); }
  Value* relu6(Value* x, const std::string& name) { return b.op("Clip", {x, scalar(0), scalar(6)}, {}, name); }
  Value* add(Value* x, Value* y, const std::string& name) { return b.op("Add", {x, y}, {}, name); }
  Value* transpose(Value* x, std::vector<int64_t> perm, const std::string& name);
  Value* reshape(Value* x, const std::vector<int64_t>& dims, const std::string& name);
  // Dense layer over the last axis: Gemm for 2-D inputs, MatMul + Add otherwise.
  Value* linear(Value* x, int64_t in, int64_t out, const std::string& name);
  // LayerNormalization over the last axis (`c` features).
  Value* layerNorm(Value* x, int64_t c, const std::string& name);
  // LayerNorm over the channels of an NCHW tensor (transpose to NHWC and back).
  Value* channelLayerNorm(Value* x, int64_t c, const std::string& name);
  // Exact GELU at opset 17: x * 0.5 * (1 + Erf(x / sqrt(2))).
  Value* gelu(Value* x, const std::string& name);
  // linear(d -> hidden), GELU, linear(hidden -> d).
  Value* mlp(Value* x, int64_t d, int64_t hidden, const std::string& name);
  // Multi-head self-attention over [N, T, d] with `heads` heads.
  Value* attention(Value* x, int64_t d, int64_t heads, const std::string& name);
  // Patch embedding: Conv(kernel = stride = patch) and flatten to tokens [N, (res/patch)^2, d].
  Value* patchEmbed(Value* x, int64_t d, int64_t patch, const std::string& name);
  // GlobalAveragePool + Flatten (NCHW -> [N, C]).
  Value* globalPool(Value* x, const std::string& name);

 private:
  std::map<float, Value*> scalars_;
  std::map<std::vector<int64_t>, Value*> ints_;
};

// The input image [batch, 3, res, res].
Value* imageInput(Net& n, const Knobs& k, int64_t res);
// Common knob lists ("key=default").
std::vector<std::string> withCommonKnobs(std::vector<std::string> knobs);

}  // namespace friction::zoo
