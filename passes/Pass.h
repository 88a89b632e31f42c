// What a pass sees: the graph and a context for statistics and options.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/Graph.h"

namespace friction {

struct PassContext {
  // Counters a pass reports ("nodes removed", "patterns found", ...), printed per pass.
  std::map<std::string, int64_t> stats;
  void count(const std::string& what, int64_t n = 1) { stats[what] += n; }
};

using PassFn = void (*)(Graph&, PassContext&);

struct PassInfo {
  std::string name;
  std::string summary;
  std::vector<std::string> prerequisites;
  std::vector<std::string> invalidates;
  PassFn run;
};

// Every pass, in default pipeline order (from PassRegistry.def).
const std::vector<PassInfo>& allPasses();
const PassInfo* findPass(const std::string& name);  // nullptr when unknown

#define FRICTION_PASS(fn, name, summary, prereq, invalidates) void fn(Graph&, PassContext&);
#include "passes/PassRegistry.def"
#undef FRICTION_PASS

// fold-constants restricted to shape arithmetic: nodes with integer or
// boolean results, or computed from integers and booleans alone (Shape ->
// Gather -> Concat -> Reshape, Range, Equal/Where on dims, a dim cast to
// float, ConstantOfShape). A compiled backend evaluates these when it builds
// a program, so that shapes are static with every pass off; f32 computation
// on constants stays fold-constants' business.
// Returns the number of nodes folded.
int64_t foldShapeArithmetic(Graph& g);
// What foldShapeArithmetic may fold: a node with integer or boolean results,
// or with integer or boolean operands only.
bool isShapeArithmetic(const Node& n);

// widen-half's rewrite (passes/WidenHalf.cpp), which a compiled backend also applies to what the passes left
// in half precision (all passes off, region bodies): f16/bf16 ops on f32 values, each result rounded by
// ReducePrecision. Returns the number of nodes rewritten.
int64_t widenHalfPrecision(Graph& g);
// Whether any node computes on f16/bf16 values (what widenHalfPrecision rewrites).
bool hasHalfArithmetic(const Graph& g);

}  // namespace friction
