// The vocabulary of the onednn backend's files: how a friction value is seen
// by a primitive (Operand), how a region body's values map to the program's
// (Scope), a post-op (Post) and a primitive under construction (Draft).
// Internal to vendor_bridge/onednn/.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/Graph.h"

namespace friction::vendor::onednn {

using dnnl::algorithm;
using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;
constexpr auto kInference = dnnl::prop_kind::forward_inference;

// Thrown while drafting a primitive for something without an exact mapping.
struct Unmapped {};
inline void need(bool ok) {
  if (!ok) throw Unmapped{};
}

struct Context {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
};

// A value's static dims (a scalar as {1}).
memory::dims dimsOf(const Value* v);
// The plain (row-major) format tag of a rank.
Tag plainTag(size_t rank);

// A value bound at run time (or a constant), viewed as `dims` in layout `tag`.
struct Operand {
  const Value* v = nullptr;
  memory::dims dims;
  Tag tag = Tag::undef;
  memory::dims strides;  // instead of `tag` when not empty (a permuted view)
  memory::desc md() const { return strides.empty() ? memory::desc(dims, kF32, tag) : memory::desc(dims, kF32, strides); }
};

// How the values of one graph map to the program's: region bodies bind their
// inputs to the Fused node's inputs; constants are known at compile time.
struct Scope {
  const std::unordered_map<const Value*, const Value*>* subst = nullptr;
  const std::unordered_map<const Value*, Tensor>* consts = nullptr;
  const Value* outer(const Value* v) const {
    if (subst) {
      auto it = subst->find(v);
      if (it != subst->end()) return it->second;
    }
    return v;
  }
  const Tensor* constOf(const Value* v) const {
    if (!v) return nullptr;
    if (consts) {
      auto it = consts->find(v);
      if (it != consts->end()) return &it->second;
    }
    v = outer(v);
    if (v->isConstant()) return &v->constant();
    if (consts) {
      auto it = consts->find(v);
      if (it != consts->end()) return &it->second;
    }
    return nullptr;
  }
};

inline std::optional<float> scalarConst(const Scope& sc, const Value* v) {
  const Tensor* t = sc.constOf(v);
  if (!t || t->numel() != 1 || t->dtype() != DType::F32) return std::nullopt;
  return t->data<float>()[0];
}

struct Post {
  enum Kind { Eltwise, Binary } kind = Eltwise;
  algorithm alg = algorithm::undef;
  float alpha = 0, beta = 0;
  Operand src1;                     // Binary: its view in the primitive's dst dims
  const Tensor* constant = nullptr;  // Binary with a compile-time operand
};

// A primitive under construction.
struct Draft {
  dnnl::primitive prim;
  std::vector<std::pair<int, Operand>> rt;
  std::vector<std::pair<int, memory>> fixed;
  memory::desc dst;
  std::string kind;
  int postOps = 0, reorders = 0;
  int fusedNodes = 0;  // epilogue nodes folded into this primitive (bias and post-ops)
};

// Memory holding a copy of constant `t` in layout `md`.
memory constMemory(Context& ctx, const Tensor& t, const memory::desc& md);
// Binds the weights: a constant once, reordered to the primitive's choice
// `want`; otherwise the run-time operand in its plain layout.
void bindWeights(Context& ctx, Draft& d, const Tensor* constant, const Operand& plain, const memory::desc& want);

}  // namespace friction::vendor::onednn
