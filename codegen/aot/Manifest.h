// What the writer (Compile.cpp) and the loader (Artifact.cpp) of artifacts
// agree on.
#pragma once
#include <chrono>
#include <cstdint>

namespace friction::codegen {

// Bumped whenever the artifact layout, the manifest, the kernel keys, the
// kernel calling convention or the microkernel signatures change: an
// artifact of another ABI is refused. 2: structural keys from ir/Structural.h,
// codegen options as disabled stages. 3: elementwise kernels split at their
// first dim of extent >= 2 (KernelView::splitDim), not always dim 0.
constexpr int64_t kArtifactAbi = 3;
constexpr const char* kArtifactFormat = "friction-aot";

using Clock = std::chrono::steady_clock;
inline double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace friction::codegen
