// The structure of graphs and nodes without their names: graphs that differ
// only in value and node names print alike. One printer serves every place
// that compares structure: the tests (before/expected graphs), the kernel
// cache (equal keys share one compiled kernel) and dedup-patterns (equal
// blocks share one body).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "ir/Graph.h"

namespace friction {

struct StructureOptions {
  // Tensor data as its type and a 64-bit content hash instead of in full
  // (keys over weights stay short; the tests print data in full).
  bool hashTensors = false;
  // Types carry tracked integer contents (shape arithmetic), e.g. i64[2]{N,4}.
  bool knownContents = false;
};

// A graph's structure: one line per input, constant, node and output, values
// numbered in order of definition (%0, %1, ...), bodies of Fused and other
// graph attributes nested and indented. Node names and `provenance` (names
// of the nodes a region replaced) are left out.
std::string structuralText(const Graph& g, const StructureOptions& options = {});

// One node without its wiring: op, input and output types (an input that is
// the same value as an earlier one is marked "=#j": Mul(x, x) differs from
// Mul(x, y)) and attributes, graphs structurally.
std::string nodeStructure(const Node& n, const StructureOptions& options = {});

// A value's type as structure ("f32[N,4]", with known contents "i64[2]{N,4}").
std::string structuralType(const Value* v, const StructureOptions& options = {});
// One attribute as structure (graph attributes as their nested structuralText).
std::string structuralAttribute(const Attribute& a, const StructureOptions& options = {});

// FNV-1a, 64 bits: content hashes of structure strings and tensor bytes.
uint64_t fnv1a64(std::string_view bytes);
// Sixteen lowercase hex digits.
std::string hex64(uint64_t h);

}  // namespace friction
