// Attention (opsets 23-25) written with supported ops, as the onnx reference computes it
// (onnx/reference/ops/op_attention.py): scores = Q K^T * scale, softcapped, plus a bias of 0 and -inf from
// attn_mask, is_causal, the sliding window and nonpad_kv_seqlen; a softmax over the keys, where a row with every
// key masked gives zeros rather than NaN; times V. The masks that depend on nothing at run time become one
// constant, so a causal decoder's attention is MatMul, Mul, Add, Softmax, MatMul as a PyTorch export writes it.
// f16/bf16 inputs are computed in f32 and the outputs rounded back once. RotaryEmbedding (23), the other op
// of a modern decoder's attention, is at the end of the file.
#include <cmath>
#include <limits>
#include <numeric>

#include "frontend/onnx/AdapterUtil.h"
#include "ir/Error.h"
#include "ir/OpRegistry.h"

namespace friction::onnxio {
namespace {

constexpr double kMasked = -std::numeric_limits<double>::infinity();

struct AttentionRewrite : NodeRewrite {
  DType compute;  // f32 for f16/bf16 inputs, else the inputs' type

  using NodeRewrite::scalar;
  Value* scalar(double v, const std::string& what) { return scalar(v, compute, what); }
  // [B, S, H*D] -> [B, H, S, D].
  Value* splitHeads(Value* x, int64_t heads, const char* what) {
    int64_t hidden = staticDim(x, 2, what);
    FRICTION_CHECK(heads > 0 && hidden % heads == 0, n.describe() + ": " + what + "'s " + std::to_string(hidden) +
                                                         " features do not split into " + std::to_string(heads) + " heads");
    Value* split = op("Reshape", {x, ints({0, 0, heads, hidden / heads}, "heads")});
    return op("Transpose", {split}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  }
  // [B, Hkv, T, D] -> [B, Hkv * reps, T, D], each head repeated in place (h0 h0 h1 h1 ...).
  Value* repeatHeads(Value* x, int64_t reps, const char* what) {
    int64_t heads = staticDim(x, 1, what), t = staticDim(x, 2, what), d = staticDim(x, 3, what);
    Value* wide = op("Expand", {op("Unsqueeze", {x, ints({2}, "axis")}), ints({1, 1, reps, 1, 1}, "reps")});
    return op("Reshape", {wide, ints({0, heads * reps, t, d}, "shape")});
  }
  // 0 where `allowed`, -inf elsewhere, in the compute type (or the reverse, for a mask of the keys not allowed).
  Value* biasOf(Value* allowed, bool notAllowed = false) {
    Value *zero = scalar(0.0, "zero"), *masked = scalar(kMasked, "masked");
    return notAllowed ? op("Where", {allowed, masked, zero}) : op("Where", {allowed, zero, masked});
  }
};

// Which keys a query may attend for a causal mask and a sliding window: query i at offset `offset` attends key j
// iff j <= i + offset (causal) and -right <= i + offset - j <= left (a negative bound is no bound).
struct Frontier {
  bool causal;
  int64_t left, right;
  bool any() const { return causal || left >= 0 || right >= 0; }
  bool allows(int64_t diff) const {
    return !(causal && diff < 0) && !(left >= 0 && diff > left) && !(right >= 0 && -diff > right);
  }
};

}  // namespace

void decomposeAttention(Graph& g, Node& n) {
  Value *q = n.input(0), *k = n.input(1), *v = n.input(2);
  Value *mask = n.input(3), *pastKey = n.input(4), *pastValue = n.input(5), *nonpad = n.input(6);
  FRICTION_CHECK(k && v, n.describe() + ": needs Q, K and V");
  FRICTION_CHECK(!pastKey == !pastValue, n.describe() + ": past_key and past_value go together");
  FRICTION_CHECK(!(nonpad && pastKey), n.describe() + ": nonpad_kv_seqlen cannot be combined with past_key");
  const DType type = q->dtype();
  FRICTION_CHECK(isFloat(type), n.describe() + ": Q must be a float tensor");
  int64_t rank = knownRank(n);
  FRICTION_CHECK((rank == 3 || rank == 4) && k->shape().hasRank() && v->shape().hasRank() &&
                     int64_t(k->shape().rank()) == rank && int64_t(v->shape().rank()) == rank,
                 n.describe() + ": Q, K and V must all be 3-D or all 4-D");
  AttentionRewrite r{{g, n}, isHalf(type) ? DType::F32 : type};
  q = r.cast(q, r.compute), k = r.cast(k, r.compute), v = r.cast(v, r.compute);
  int64_t qHeads = n.attrInt("q_num_heads", 0), kvHeads = n.attrInt("kv_num_heads", 0);
  if (rank == 3) {
    FRICTION_CHECK(qHeads > 0 && kvHeads > 0, n.describe() + ": 3-D inputs need q_num_heads and kv_num_heads");
    q = r.splitHeads(q, qHeads, "Q"), k = r.splitHeads(k, kvHeads, "K"), v = r.splitHeads(v, kvHeads, "V");
  }
  qHeads = r.staticDim(q, 1, "Q"), kvHeads = r.staticDim(k, 1, "K");
  FRICTION_CHECK(r.staticDim(v, 1, "V") == kvHeads, n.describe() + ": K and V have different head counts");
  if (pastKey) {  // the cache update: present = past followed by the new keys and values
    k = r.op("Concat", {r.cast(pastKey, r.compute), k}, {{"axis", int64_t(2)}});
    v = r.op("Concat", {r.cast(pastValue, r.compute), v}, {{"axis", int64_t(2)}});
  }
  Value *presentKey = k, *presentValue = v;
  const int64_t queries = r.staticDim(q, 2, "Q"), keys = r.staticDim(k, 2, "K"), headSize = r.staticDim(q, 3, "Q");
  FRICTION_CHECK(r.staticDim(v, 2, "V") == keys, n.describe() + ": K and V have different sequence lengths");
  if (qHeads != kvHeads) {  // grouped-query attention: each K/V head serves qHeads / kvHeads query heads
    FRICTION_CHECK(qHeads % kvHeads == 0, n.describe() + ": " + std::to_string(qHeads) +
                                              " query heads are not a multiple of " + std::to_string(kvHeads) + " key heads");
    k = r.repeatHeads(k, qHeads / kvHeads, "K"), v = r.repeatHeads(v, qHeads / kvHeads, "V");
  }

  double scale = n.hasAttr("scale") ? double(n.attrFloat("scale", 1.0f)) : 1.0 / std::sqrt(double(headSize));
  Value* keysT = r.op("Transpose", {k}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  Value* scores = r.op("Mul", {r.op("MatMul", {q, keysT}), r.scalar(scale, "scale")});
  if (float cap = n.attrFloat("softcap", 0.0f); cap > 0)
    scores = r.op("Mul", {r.op("Tanh", {r.op("Div", {scores, r.scalar(cap, "softcap")})}), r.scalar(cap, "softcap")});

  // The bias: a sum of 0/-inf terms, each broadcasting to [B, H, queries, keys].
  std::vector<Value*> terms;
  bool rowsMayBeEmpty = false;
  if (mask) {
    int64_t maskKeys = r.staticDim(mask, -1, "attn_mask");
    FRICTION_CHECK(maskKeys <= keys, n.describe() + ": attn_mask covers " + std::to_string(maskKeys) + " keys of " +
                                         std::to_string(keys));
    Value* term = mask->dtype() == DType::Bool ? r.biasOf(mask) : r.cast(mask, r.compute);
    if (maskKeys < keys) {  // keys past the mask's end are masked
      std::vector<int64_t> pads(2 * mask->shape().rank(), 0);
      pads.back() = keys - maskKeys;
      term = r.op("Pad", {term, r.ints(pads, "pads"), r.scalar(kMasked, "masked")});
    }
    terms.push_back(term);
    rowsMayBeEmpty = true;
  }
  Frontier frontier{n.attrInt("is_causal", 0) != 0, n.attrInt("left_window_size", -1), n.attrInt("right_window_size", -1)};
  Value* perBatch = nullptr;  // nonpad_kv_seqlen's keys, [B, 1, 1, 1]
  if (nonpad) perBatch = r.op("Unsqueeze", {r.cast(nonpad, DType::I64), r.ints({1, 2, 3}, "axes")});
  std::vector<int64_t> rows(static_cast<size_t>(queries)), cols(static_cast<size_t>(keys));
  std::iota(rows.begin(), rows.end(), 0);
  std::iota(cols.begin(), cols.end(), 0);
  Value* colIndex = perBatch ? r.constant(Tensor::fromVector<int64_t>(DType::I64, {1, keys}, cols), "cols") : nullptr;
  if (frontier.any() && perBatch) {  // an external cache: the offset is each row's valid keys less the queries
    Value* offset = r.op("Sub", {perBatch, r.ints({queries}, "queries")});
    Value* rowIndex = r.constant(Tensor::fromVector<int64_t>(DType::I64, {queries, 1}, rows), "rows");
    Value* diff = r.op("Sub", {r.op("Add", {rowIndex, offset}), colIndex});  // i + offset - j, [B, 1, q, k]
    Value* outside = nullptr;
    auto orWith = [&](Value* c) { outside = outside ? r.op("Or", {outside, c}) : c; };
    if (frontier.causal) orWith(r.op("Less", {diff, r.ints({0}, "zero")}));
    if (frontier.left >= 0) orWith(r.op("Greater", {diff, r.ints({frontier.left}, "left")}));
    if (frontier.right >= 0) orWith(r.op("Less", {diff, r.ints({-frontier.right}, "right")}));
    terms.push_back(r.biasOf(outside, /*notAllowed=*/true));
    rowsMayBeEmpty = true;
  } else if (frontier.any()) {  // a fixed offset: the past's length, or 0
    int64_t offset = pastKey ? r.staticDim(pastKey, 2, "past_key") : 0;
    std::vector<double> bias(size_t(queries * keys));
    for (int64_t i = 0; i < queries; ++i) {
      bool anyAllowed = false;
      for (int64_t j = 0; j < keys; ++j) {
        bool allowed = frontier.allows(i + offset - j);
        anyAllowed |= allowed;
        bias[size_t(i * keys + j)] = allowed ? 0.0 : kMasked;
      }
      rowsMayBeEmpty |= !anyAllowed;
    }
    terms.push_back(r.constant(Tensor::fromVector<double>(DType::F64, {queries, keys}, bias).castTo(r.compute), "frontier"));
  }
  if (perBatch) {  // keys past a row's nonpad_kv_seqlen are padding
    terms.push_back(r.biasOf(r.op("Less", {colIndex, perBatch})));
    rowsMayBeEmpty = true;
  }
  Value* bias = nullptr;
  for (Value* t : terms) bias = bias ? r.op("Add", {bias, t}) : t;

  Value* withBias = bias ? r.op("Add", {scores, bias}) : scores;
  Value* probs = r.op("Softmax", {withBias}, {{"axis", int64_t(-1)}});
  if (rowsMayBeEmpty) {  // a row with no key to attend gives zeros, as the reference says, not NaN
    Value* rowMax = r.op("ReduceMax", {bias}, {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t(1)}});
    probs = r.op("Where", {r.op("Equal", {rowMax, r.scalar(kMasked, "masked")}), r.scalar(0.0, "zero"), probs});
  }
  // The optional outputs, from the last: qk_matmul_output (its mode: 0 and 1 the scores after any softcap, 2
  // with the bias, 3 the probabilities), present_value, present_key.
  int64_t mode = n.attrInt("qk_matmul_output_mode", 0);
  FRICTION_CHECK(mode >= 0 && mode <= 3, n.describe() + ": qk_matmul_output_mode must be 0-3, got " + std::to_string(mode));
  FRICTION_CHECK(n.numOutputs() <= 4, n.describe() + ": Attention has at most 4 outputs");
  Value* outputs[] = {nullptr, presentKey, presentValue, mode == 3 ? probs : mode == 2 ? withBias : scores};
  const std::map<std::string, Attribute> castBack{{"to", int64_t(dtypeToOnnxCode(type))}};
  while (n.numOutputs() > 1) {
    Value* out = outputs[n.numOutputs() - 1];
    inferNode(out->dtype() == type ? *g.addNodeTakingLastOutput(n, "Identity", {out})
                                   : *g.addNodeTakingLastOutput(n, "Cast", {out}, castBack));
  }

  // Y = probs V, heads merged back for 3-D inputs; the node itself becomes Y's last op.
  if (rank == 4 && r.compute == type) return becomes(n, "MatMul", {probs, v});
  Value* y = r.op("MatMul", {probs, v});
  if (rank == 3) {
    Value* merged = r.op("Transpose", {y}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
    if (r.compute == type) return becomes(n, "Reshape", {merged, r.ints({0, 0, -1}, "merge")});
    y = r.op("Reshape", {merged, r.ints({0, 0, -1}, "merge")});
  }
  becomes(n, "Cast", {y}, castBack);
}

}  // namespace friction::onnxio

namespace friction::onnxio {

// RotaryEmbedding-23 as the onnx reference computes it: in [B, S, H, D] (a 4-D [B, H, S, D] input transposed, a
// 3-D [B, S, H*D] one split into num_heads), the first rotary_embedding_dim features of each head (all by
// default) taken as pairs (x1, x2) - its two halves, or its even and odd features when interleaved - and rotated
// by the caches' angle at each token's position (cos_cache/sin_cache [positions, dim/2] read at position_ids, or
// given per token as [B, S, dim/2]): (cos x1 - sin x2, sin x1 + cos x2), put back in place.
void decomposeRotaryEmbedding(Graph& g, Node& n) {
  NodeRewrite r{g, n};
  Value *x = n.input(0), *cosCache = n.input(1), *sinCache = n.input(2), *positions = n.input(3);
  FRICTION_CHECK(cosCache && sinCache, n.describe() + ": needs cos_cache and sin_cache");
  const int64_t rank = knownRank(n);
  FRICTION_CHECK(rank == 3 || rank == 4, n.describe() + ": the input must be 3-D or 4-D");
  const int64_t heads = n.attrInt("num_heads", 0);
  FRICTION_CHECK(rank == 4 || heads > 0, n.describe() + ": a 3-D input needs num_heads");
  const std::vector<int64_t> swap = {0, 2, 1, 3};
  Value* tokens = rank == 4 ? r.op("Transpose", {x}, {{"perm", swap}})  // [B, S, H, D]
                            : r.op("Reshape", {x, r.ints({0, 0, heads, -1}, "heads")});
  const int64_t size = r.staticDim(tokens, 3, "the head size");
  int64_t dim = n.attrInt("rotary_embedding_dim", 0);
  if (dim == 0) dim = size;
  FRICTION_CHECK(dim > 0 && dim <= size && dim % 2 == 0, n.describe() + ": rotary_embedding_dim " + std::to_string(dim) +
                                                             " must be even and at most the head size " + std::to_string(size));
  auto slice = [&](Value* v, int64_t from, int64_t to, int64_t step) {
    return r.op("Slice", {v, r.ints({from}, "start"), r.ints({to}, "end"), r.ints({3}, "axis"), r.ints({step}, "step")});
  };
  Value* rotated = dim == size ? tokens : slice(tokens, 0, dim, 1);
  const bool interleaved = n.attrInt("interleaved", 0) != 0;
  Value* x1 = interleaved ? slice(rotated, 0, dim, 2) : slice(rotated, 0, dim / 2, 1);
  Value* x2 = interleaved ? slice(rotated, 1, dim, 2) : slice(rotated, dim / 2, dim, 1);
  auto angle = [&](Value* cache) {  // [B, S, 1, dim/2]
    Value* perToken = positions ? r.op("Gather", {cache, positions}) : cache;
    return r.op("Unsqueeze", {perToken, r.ints({2}, "axis")});
  };
  Value *cos = angle(cosCache), *sin = angle(sinCache);
  Value* real = r.op("Sub", {r.op("Mul", {cos, x1}), r.op("Mul", {sin, x2})});
  Value* imag = r.op("Add", {r.op("Mul", {sin, x1}), r.op("Mul", {cos, x2})});
  Value* turned;
  if (interleaved) {  // (real, imag) pairs back in the even and odd features
    Value* pairs = r.op("Concat", {r.op("Unsqueeze", {real, r.ints({4}, "axis")}), r.op("Unsqueeze", {imag, r.ints({4}, "axis")})},
                        {{"axis", int64_t(4)}});
    turned = r.op("Reshape", {pairs, r.ints({0, 0, 0, dim}, "pairs")});
  } else {
    turned = r.op("Concat", {real, imag}, {{"axis", int64_t(3)}});
  }
  if (dim < size) turned = r.op("Concat", {turned, slice(tokens, dim, size, 1)}, {{"axis", int64_t(3)}});
  if (rank == 4) return becomes(n, "Transpose", {turned}, {{"perm", swap}});
  becomes(n, "Reshape", {turned, r.ints({0, 0, -1}, "merge")});
}

}  // namespace friction::onnxio
