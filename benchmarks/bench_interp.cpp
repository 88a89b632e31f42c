// Reference-interpreter speed on published-size zoo models: median latency
// over repetitions after one warm-up. Target (issue 2): ResNet-50 batch 1
// under 10 s on 2 cores. Usage: bench_interp [reps] [spec ...]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "frontend/zoo/Zoo.h"
#include "ir/Specialize.h"
#include "runtime/interp/Interpreter.h"

using namespace friction;

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::stoi(argv[1]) : 3;
  std::vector<std::string> specs;
  for (int i = 2; i < argc; ++i) specs.push_back(argv[i]);
  if (specs.empty()) specs = {"resnet?preset=resnet50", "mobilenetv2?preset=mobilenetv2", "vit?preset=vit_b"};
  for (const auto& spec : specs) {
    auto g = zoo::build(zoo::parseSpec(spec));
    bindInputDims(*g, batchBindings(*g, 1));
    std::vector<Tensor> inputs;
    for (const Value* in : g->inputs()) {
      Tensor t(in->dtype(), in->shape().staticDims());
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float(i % 255) / 255.0f - 0.5f;
      inputs.push_back(t);
    }
    interp::run(*g, inputs);  // warm-up
    std::vector<double> ms;
    for (int r = 0; r < reps; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      interp::run(*g, inputs);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%-32s batch 1: median %8.1f ms over %d runs (min %.1f, max %.1f)\n", spec.c_str(), ms[ms.size() / 2],
                reps, ms.front(), ms.back());
  }
  return 0;
}
