#include "runtime/Inputs.h"

#include <random>

#include "ir/Error.h"

namespace friction {

std::vector<Tensor> seededInputs(const Graph& graph, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<Tensor> inputs;
  for (const Value* in : graph.inputs()) {
    FRICTION_CHECK(in->shape().isStatic(), "input '" + in->name() + "' has shape " + in->shape().str() +
                                               ": only a symbolic batch at axis 0 can be bound (--batch); "
                                               "give the inputs with --inputs DIR");
    Tensor t(in->dtype(), in->shape().staticDims());
    if (isFloat(in->dtype())) {
      Tensor f(DType::F64, t.shape());
      for (int64_t i = 0; i < f.numel(); ++i) f.data<double>()[i] = u(rng);
      t = f.castTo(in->dtype());
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

}  // namespace friction
