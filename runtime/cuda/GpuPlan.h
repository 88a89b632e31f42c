// What the cuda backend runs: the PTX of every distinct kernel with its
// launches, and the model as a list of kernel calls over one device arena
// (inputs, outputs, weights and intermediates at fixed offsets). No MLIR and
// no friction IR: codegen/cuda/GpuPlanBuilder.h makes a plan from a compiled
// program, GpuExecutor.h runs it, and `friction compile --backend cuda -o DIR`
// writes it as a folder that `friction-cuda-run DIR` loads on a machine
// without the compiler (it links friction_ir alone, no MLIR or protobuf).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace friction::gpu {

// One argument of a launch: a buffer of the kernel (its inputs, then its
// outputs, then its scratch buffers, passed as a device pointer), or a
// constant.
struct GpuLaunchArg {
  int buffer = -1;  // >= 0: the kernel's buffer of this index
  bool isFloat = false;
  int bits = 64;        // width of an integer constant (index: 64)
  int64_t integer = 0;  // an index or integer constant (buffer < 0, !isFloat)
  double real = 0;      // an f32 constant (isFloat)
};
// One launch of a GPU kernel: the gpu.func in the kernel's PTX, grid and
// block sizes, and the arguments in order.
struct GpuLaunch {
  std::string function;
  int64_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  std::vector<GpuLaunchArg> args;
};
// A kernel for the GPU: one PTX module and the launches, in order, that
// compute the kernel (a fill, a contraction, an epilogue: one each).
struct GpuKernel {
  std::string ptx;
  std::vector<GpuLaunch> launches;
  int buffers = 0;                            // the kernel's inputs and outputs (GpuLaunchArg::buffer below it)
  int inputs = 0;                             // of which inputs (the first ones)
  std::vector<std::vector<int64_t>> scratch;  // f32 scratch buffers, GpuLaunchArg::buffer `buffers` and on
};

// A graph input or output: where it lives in the arena.
struct GpuValue {
  std::string name, dtype;  // dtype as friction names it ("f32", "i64")
  std::vector<int64_t> shape;
  int64_t offset = 0, bytes = 0;
};
// A constant, uploaded once: `bytes` of the weights blob from `from` to the arena's `offset`.
struct GpuConstant {
  int64_t offset = 0, bytes = 0, from = 0;
};
// One step of the model on the GPU: a kernel and the arena offset of each of its buffers.
struct GpuCall {
  int kernel = 0;
  std::vector<int64_t> buffers;  // GpuKernel::buffers + scratch.size() offsets
  std::vector<int64_t> bytes;    // the size of each
  std::string step;              // "node -> f32[1,64,56,56]", as the profile names it
};

struct GpuPlan {
  std::string chip;                       // what the PTX was made for ("sm_90")
  std::vector<GpuKernel> kernels;         // distinct kernels
  std::vector<std::string> kernelLabels;  // what each computes, as the cpu profile names kernels
  std::vector<GpuCall> calls;             // in order: a run of the model
  std::vector<GpuValue> inputs, outputs;
  std::vector<GpuConstant> constants;
  std::string weights;  // the constants' bytes
  int64_t arenaBytes = 0;
  int64_t intermediateBytes = 0;  // of which intermediates and scratch, reused by lifetime

  int64_t launches() const;
  // Bytes the kernel calls of a run read and write in the arena, counting each
  // call's inputs and outputs once each, whole (not scratch): the traffic
  // between kernels that fusion saves.
  int64_t bytesBetweenKernels() const;
};

// The plan as a folder: plan.json, k<i>.ptx per kernel, weights.bin.
void writePlan(const GpuPlan& plan, const std::string& dir);
// Throws friction::Error naming the file and field that is missing or wrong.
GpuPlan readPlan(const std::string& dir);

}  // namespace friction::gpu
