// A KernelSource without a code generator, for tests that link no MLIR.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "codegen/KernelAbi.h"
#include "codegen/KernelSource.h"

namespace friction::test {

// Records what it is asked for; makes no code (every kernel "fails"), or
// serves one hand-written kernel for f32 Relu.
class FakeSource : public codegen::KernelSource {
 public:
  std::vector<std::vector<std::string>> requests;
  bool serveRelu = false;

  codegen::KernelBatch kernels(const std::vector<const Node*>& nodes, const std::vector<std::string>& keys) override {
    requests.push_back(keys);
    codegen::KernelBatch b;
    for (const Node* n : nodes) {
      codegen::CompiledKernel k;
      if (serveRelu && n->op() == "Relu") k.fn = &relu;
      else k.error = "the fake source makes no " + n->op();
      b.kernels.push_back(k);
    }
    return b;
  }
  bool compiles() const override { return true; }
  std::string describe() const override { return "fake"; }

 private:
  // The packed entry of Relu over [2, 8] f32: args[0] -> input descriptor, args[1] -> output.
  static void relu(void** args) {
    auto* in = *static_cast<codegen::StridedMemRef<float, 2>**>(args[0]);
    auto* out = *static_cast<codegen::StridedMemRef<float, 2>**>(args[1]);
    for (int64_t i = 0; i < in->sizes[0] * in->sizes[1]; ++i) out->aligned[i] = std::max(in->aligned[i], 0.f);
  }
};

}  // namespace friction::test
