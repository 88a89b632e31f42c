// The `onednn` backend: the friction graph (after whatever passes the user
// selected) runs directly on oneDNN primitives (f32), in this process.
// Spec: onednn?postops=on|off&threads=N
//   postops  on (default): a Conv/MatMul/Gemm and its epilogue chain (bias,
//            activation, residual Add; a Fused "epilogue" region, or the same
//            chain found in an unfused graph) become ONE primitive with oneDNN
//            eltwise/binary post-ops; off: every node is its own primitive.
//   threads  OpenMP threads for run() (default: OpenMP's).
// Ops without an exact oneDNN mapping run the reference interpreter's kernels.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "runtime/Backend.h"

namespace friction::vendor {

// Compile statistics of one model compiled by the onednn backend.
struct OnednnStats {
  int64_t primitives = 0;          // primitive executions per run (Fused bodies counted inside)
  int64_t postOps = 0;             // post-ops attached to those primitives (eltwise + binary)
  int64_t fusedEpilogues = 0;      // epilogue chains that run as one primitive with post-ops
  int64_t weightReorders = 0;      // weights reordered at compile time to the primitive's format
  int64_t fallbackNodes = 0;       // nodes on the interpreter's kernels
  std::map<std::string, int64_t> fallbackOps;     // op -> count
  std::map<std::string, int64_t> primitiveKinds;  // "convolution" -> count
  double compileMs = 0;
};

// Statistics of a model compiled by the onednn backend (nullptr for other models).
const OnednnStats* onednnStats(const CompiledModel& model);

// "2.6.3" from dnnl_version().
std::string onednnVersion();

}  // namespace friction::vendor
