// Replays a cuda plan's writes (runtime/cuda/GpuPlan.h) byte by byte: every
// buffer a call reads holds what one earlier call wrote there, or lies in a
// graph input or constant that no call writes; no call writes over another
// buffer it passes; the outputs likewise at the end. Shared by the plan's tests and the ptxas sweep over the fixtures.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cuda/GpuPlan.h"

namespace friction::test {

inline void expectConsistentPlan(const gpu::GpuPlan& p, const std::string& name) {
  constexpr int kNever = -1, kFixed = -2;  // no call wrote it; a graph input or constant
  ASSERT_LE(p.arenaBytes, int64_t(64) << 20) << name << ": the check replays byte by byte; use a smaller model";
  std::vector<int> writer(size_t(p.arenaBytes), kNever);
  auto mark = [&](int64_t offset, int64_t bytes, int who) {
    for (int64_t b = offset; b < offset + bytes; ++b) writer[size_t(b)] = who;
  };
  for (const gpu::GpuValue& v : p.inputs) mark(v.offset, v.bytes, kFixed);
  for (const gpu::GpuConstant& c : p.constants) mark(c.offset, c.bytes, kFixed);
  // One writer over the whole range, and not "never".
  auto expectWhole = [&](int64_t offset, int64_t bytes, const std::string& what) {
    int who = bytes > 0 ? writer[size_t(offset)] : kFixed;
    for (int64_t b = offset; b < offset + bytes; ++b)
      if (writer[size_t(b)] != who) {
        ADD_FAILURE() << name << ": " << what << " reads bytes two calls wrote (" << who << " and " << writer[size_t(b)] << ")";
        return;
      }
    EXPECT_NE(who, kNever) << name << ": " << what << " reads bytes no call wrote";
  };
  for (size_t c = 0; c < p.calls.size(); ++c) {
    const gpu::GpuCall& call = p.calls[c];
    const gpu::GpuKernel& k = p.kernels[size_t(call.kernel)];
    for (int i = 0; i < k.inputs; ++i)
      expectWhole(call.buffers[size_t(i)], call.bytes[size_t(i)], "call " + std::to_string(c) + " (" + call.step + ")");
    // A kernel reads and writes at once: what it writes (outputs, scratch) overlaps nothing else it passes.
    for (size_t w = size_t(k.inputs); w < call.buffers.size(); ++w)
      for (size_t o = 0; o < call.buffers.size(); ++o)
        if (o != w && call.bytes[w] > 0 && call.bytes[o] > 0 && call.buffers[w] < call.buffers[o] + call.bytes[o] &&
            call.buffers[o] < call.buffers[w] + call.bytes[w])
          ADD_FAILURE() << name << ": call " << c << " (" << call.step << ") writes buffer " << w << " over its buffer " << o;
    for (size_t b = size_t(k.inputs); b < call.buffers.size(); ++b) {
      for (int64_t x = call.buffers[b]; x < call.buffers[b] + call.bytes[b]; ++x)
        if (writer[size_t(x)] == kFixed) {
          ADD_FAILURE() << name << ": call " << c << " (" << call.step << ") writes over a graph input or constant";
          break;
        }
      mark(call.buffers[b], call.bytes[b], int(c));
    }
  }
  for (const gpu::GpuValue& v : p.outputs) expectWhole(v.offset, v.bytes, "output '" + v.name + "'");
}

}  // namespace friction::test
