// Ahead-of-time compilation for the `cpu` backend (docs/codegen.md, "Ahead of
// time"). `friction compile MODEL -o OUT.so` writes ONE self-contained shared
// library holding
//   - the compiled kernels: the same MLIR pipeline as the JIT, then LLVM O2 for
//     the host CPU into a PIC object (codegen/mlir/Codegen.h), linked with the
//     system compiler;
//   - the optimized, batch-bound graph as friction text IR (ir/TextFormat.h),
//     symbol `friction_aot_graph`;
//   - a JSON manifest (symbol `friction_aot_manifest`): artifact ABI, friction
//     revision, model, batch, passes, codegen options, the CPU and features the
//     code was compiled for, and the kernels by structural key;
//   - one trampoline per microkernel (`_mlir_ciface_friction_sgemm*`) jumping
//     through a slot table (`friction_aot_slots`) that the loader fills with
//     the running friction's microkernels: no symbol of the executable is
//     needed (no -rdynamic), any program linking friction_codegen can load it.
// Loading dlopens the file, checks the manifest and the CPU, parses the graph
// and builds the cpu backend's program over it exactly as compile() does,
// with a KernelSource that takes kernel entries from dlsym instead of the
// JIT: no MLIR or LLVM work. Compile.cpp writes artifacts, Artifact.cpp
// loads them.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/CodegenOptions.h"
#include "codegen/CpuBackend.h"
#include "ir/Graph.h"
#include "runtime/Backend.h"

namespace friction::codegen {

struct AotCompileOptions {
  std::string model;              // the MODEL spec (recorded in the manifest)
  int64_t batch = 1;              // the batch the graph is bound to
  std::vector<std::string> passes;  // passes that ran, in order (recorded)
  CodegenOptions codegen;
};

struct AotCompileReport {
  double programMs = 0;  // walking the graph: which nodes become kernels (weights packed, as compile() does)
  double buildMs = 0;    // building the MLIR
  double lowerMs = 0;    // pass pipeline down to the LLVM dialect
  double objectMs = 0;   // LLVM IR, O2, machine code into the object file
  double linkMs = 0;     // graph text, manifest, trampolines, `c++ -shared`
  double totalMs = 0;
  int64_t kernels = 0;        // distinct kernels in the artifact
  int64_t failedKernels = 0;  // kernels that failed to compile (their nodes run on the interpreter)
  int64_t bytes = 0;          // artifact size
  int64_t graphBytes = 0;     // of which the embedded graph text
  std::string cpu;            // compiled for this CPU (LLVM name)
};

// Compiles `optimized` (batch bound, passes already run) into the artifact
// `outPath` (written atomically). Throws Error on failure. The compiler used
// to link is $FRICTION_AOT_CXX, else `c++`; FRICTION_AOT_KEEP=1 keeps the
// temporary folder (object, stub, manifest) and prints its path.
AotCompileReport compileArtifact(const Graph& optimized, const std::string& outPath, const AotCompileOptions& options);

// What the manifest says.
struct ArtifactInfo {
  std::string path, revision, model, cpu, triple;
  int64_t abi = 0, batch = 0;
  std::vector<std::string> passes, features;
  CodegenOptions codegen;
  int64_t kernels = 0, failedKernels = 0;
};

// An opened artifact (dlopen'ed, manifest and CPU checked). Errors (missing
// file, not a friction artifact, other ABI, a CPU lacking a feature the code
// was compiled for) throw Error with a message naming the file.
// FRICTION_AOT_HOST_FEATURES=f1,f2,.. replaces the detected host features
// (for testing the CPU check).
class Artifact : public std::enable_shared_from_this<Artifact> {
 public:
  static std::shared_ptr<Artifact> open(const std::string& path);
  ~Artifact();
  const ArtifactInfo& info() const { return info_; }
  // The embedded optimized graph, parsed.
  std::unique_ptr<Graph> graph() const;
  // The cpu program over `g` (the result of graph(); it must outlive the
  // model) with the artifact's kernels. run() checks the inputs' shapes
  // against the compiled batch.
  std::unique_ptr<CompiledModel> instantiate(const Graph& g) const;
  double openMs() const { return openMs_; }

 private:
  Artifact() = default;
  void* handle_ = nullptr;
  ArtifactInfo info_;
  std::vector<std::pair<std::string, std::string>> kernels_;  // key -> symbol
  std::vector<std::pair<std::string, std::string>> failed_;   // key -> why
  const char* graph_ = nullptr;
  size_t graphSize_ = 0;
  double openMs_ = 0;
};

// Opens, parses and instantiates in one go (what `friction run OUT.so` does).
struct LoadedArtifact {
  std::shared_ptr<Artifact> artifact;
  std::unique_ptr<Graph> graph;          // declared before model: destroyed after it
  std::unique_ptr<CompiledModel> model;  // runs over `graph`
  double openMs = 0, parseMs = 0, programMs = 0;
};
LoadedArtifact loadArtifact(const std::string& path);

// MODEL specs naming an artifact: paths ending in ".so".
bool isArtifactPath(const std::string& spec);
// The backend behind `--backend cpu?aot=FILE`: compile(graph) instantiates the
// artifact over `graph` (which must be the artifact's graph, see
// Artifact::graph(); the CLI loads it so for an OUT.so MODEL).
std::unique_ptr<Backend> createAotBackend(const std::string& path);
// Statistics of a model from Artifact::instantiate (kernelsCompiled is 0,
// kernelsLoaded the artifact's kernels); nullptr for other models.
const CpuStats* artifactStats(const CompiledModel& model);

}  // namespace friction::codegen
