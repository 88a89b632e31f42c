// Fused regions as the IR sees them: a `Fused` node (ir/ops/RegionOps.cpp)
// holds a body graph that a code generator compiles as one kernel. Passes
// make them (their `kind` says which); codegen, the interpreter and the
// bridges read them through this accessor instead of picking attributes apart.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/Graph.h"

namespace friction {

enum class RegionKind {
  Generic,      // no `kind` attribute: nodes grouped with no promise about their shape
  Epilogue,     // fuse-epilogues: an anchor (Conv, MatMul, Gemm or an nhwc region) and the single-use chain after it
  Elementwise,  // fuse-elementwise: connected elementwise ops
  Reduction,    // fuse-reductions: a normalization (op or decomposed) or an Erf-GELU
  Pattern,      // dedup-patterns: one instance of a repeated block; instances share one body
  Nhwc,         // convert-layout: Transpose(to NCHW) -> op -> Transpose(to NHWC)
};

// The `kind` attribute's spelling ("epilogue", ...; "" for Generic).
std::string_view regionKindName(RegionKind kind);
// The kind spelled `name` ("" is Generic); throws Error naming the known kinds otherwise.
RegionKind parseRegionKind(std::string_view name);

class FusedRegion {
 public:
  // The region `n` is, or nullopt when `n` is not a Fused node.
  static std::optional<FusedRegion> of(const Node& n);

  const Node& node() const { return *node_; }
  RegionKind kind() const { return kind_; }
  const Graph& body() const { return *body_; }
  // "region epilogue" (or "region" for a Generic one): how profiles and statistics name it.
  std::string label() const;

  // The region's operand feeding body input `v`; nullptr when `v` is not a body input.
  const Value* operandFor(const Value* v) const;
  // The inputs of `inner` (a node of the body) as the region's caller sees
  // them: body inputs become the region's operands, values computed inside
  // the body stay as they are.
  std::vector<const Value*> outerInputs(const Node& inner) const;
  // The op of a convert-layout region (body: Transpose(to NCHW) -> op ->
  // Transpose(to NHWC), the op's other operands body inputs); nullptr for
  // any other region.
  const Node* nhwcOp() const;

 private:
  FusedRegion(const Node& n, RegionKind kind, const Graph& body) : node_(&n), kind_(kind), body_(&body) {}
  const Node* node_;
  RegionKind kind_;
  const Graph* body_;
};

// The attributes of a new Fused node: its body, kind and the names of the
// nodes it replaces (provenance, for per-node attribution).
std::map<std::string, Attribute> fusedAttrs(std::shared_ptr<Graph> body, RegionKind kind,
                                            std::vector<std::string> provenance);

}  // namespace friction
