// Builds the Program of a graph for a code generator: walks the graph once,
// deciding per node what runs how (native microkernel, compiled kernel, a
// zero-copy view, the body of a region as a nested program, or the
// interpreter's kernel), keeps
// one compiled kernel per structural key (a cache shared across compiles of
// one backend), takes the kernels new to the cache from a KernelSource in one
// request, sends nodes whose kernel failed to the interpreter, and places
// intermediates in the plan-memory arena. Code generators differ only in the
// KernelSource.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "codegen/CodegenOptions.h"
#include "codegen/Program.h"

namespace friction::codegen {

// Compiled kernels by structural key.
using KernelCache = std::unordered_map<std::string, std::shared_ptr<KernelEntry>>;

class ProgramBuilder {
 public:
  // `options` decide what the code generator compiles (ukernels=off: convolutions too).
  ProgramBuilder(KernelCache& cache, ProgramStats& stats, CodegenOptions options = {})
      : cache_(cache), stats_(stats), options_(std::move(options)) {}

  // The steps of `g`; kernels it needs that are not in the cache become
  // pending. Shape arithmetic left in `g` (fold-constants off) is evaluated
  // first, on a copy the program keeps, so that its shapes are static; ops
  // without kernels of their own are rewritten there too (Legalize.h).
  std::unique_ptr<Program> build(const Graph& g);
  // The distinct kernels build() found missing: structural key and a node
  // computing it, in the order they were met.
  const std::vector<std::pair<std::string, const Node*>>& pending() const { return pending_; }
  // Takes the pending kernels from `source` (in one request) into the cache.
  void compilePending(KernelSource& source);
  // Steps whose kernel could not be made run on the interpreter; then the
  // intermediates plan-memory placed get their arena offsets.
  void finish(Program& p, const Graph& g);
  // All of the above: the program of `g` with kernels from `source`.
  std::unique_ptr<Program> buildProgram(const Graph& g, KernelSource& source);

  // Distinct kernels the programs built so far use.
  size_t distinctKernels() const { return used_.size(); }
  // Per distinct kernel: what it computes, its calls, its compile phases.
  std::vector<KernelCompileStat> kernelStats() const;
  // Why the last kernel that could not be made failed ("" when none failed).
  const std::string& lastError() const { return lastError_; }

 private:
  // `outerOf` maps the inputs of a region body to the values feeding them at
  // the top level, so constant weights are seen as constants (and packed
  // once) inside regions too, e.g. in every instance of a dedup pattern.
  using OuterMap = std::unordered_map<const Value*, const Value*>;
  std::unique_ptr<Program> build(const Graph& g, const OuterMap& outerOf);
  // build() of `g` after folding its shape arithmetic (regions too: resolveRegionTypes) and legalizing,
  // on a copy the program keeps.
  std::unique_ptr<Program> buildResolved(const Graph& g, const OuterMap& outerOf);
  // The step of a node or region that analyzeKernel accepts; false when it needs nothing compiled.
  bool compiledStep(Step& s, Program& p, const std::function<const Value*(const Value*)>& resolve);
  void useKernel(Step& s);
  void demoteFailed(Program& p);
  // The values of p that g's plan (plan-memory's metadata) placed get their arena offsets; returns how many,
  // and the arena bytes they need. Allocates nothing.
  std::pair<int64_t, int64_t> placeInArena(Program& p, const Graph& g);
  // The pattern instances among p's steps (and theirs, a level at a time) get their bodies' plans.
  void placePatternArenas(Program& p);

  KernelCache& cache_;
  ProgramStats& stats_;
  CodegenOptions options_;
  std::vector<std::pair<std::string, const Node*>> pending_;
  std::vector<std::shared_ptr<KernelEntry>> pendingEntries_;
  std::map<std::string, std::pair<std::shared_ptr<KernelEntry>, int64_t>> used_;  // key -> kernel, calls
  std::string lastError_;
};

}  // namespace friction::codegen
