// The microkernels compiled code calls (IREE-style ukernels): after
// bufferization, the `ukernels` stage (codegen/mlir/MicrokernelCalls.cpp)
// replaces each linalg.matmul / matmul_transpose_a|b / batch_matmul on
// buffers by a func.call of one of these; the JIT resolves the symbols to the
// functions in Microkernels.cpp (runtime/ukernels underneath), an AOT
// artifact's loader fills its trampolines with them.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace friction::codegen {

// Callee names as the generated code declares them (llvm.emit_c_interface:
// memref arguments arrive as pointers to strided descriptors):
//   friction_sgemm(A: memref<?x?xf32, strided<[?,1], offset:?>>, B, C, transA: i32, transB: i32, beta: f32)
//   friction_sgemm_batched(A: memref<?x?x?xf32, strided<[?,?,1], offset:?>>, B, C, transA, transB, beta)
// computing C = op(A) x op(B) + beta * C (per batch index for the batched form).
constexpr const char* kSgemmCallee = "friction_sgemm";
constexpr const char* kSgemmBatchedCallee = "friction_sgemm_batched";

// {C-interface symbol, address} of every microkernel, for the JIT's symbol map.
std::vector<std::pair<std::string, void*>> microkernelSymbols();

}  // namespace friction::codegen
