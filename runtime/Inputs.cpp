#include "runtime/Inputs.h"

#include <map>
#include <random>
#include <string>

#include "ir/Error.h"

namespace friction {
namespace {

// Checks a runtime tensor against a declared type, binding symbolic dims consistently.
void checkInput(const Value& decl, const Tensor& t, std::map<std::string, int64_t>& bindings) {
  FRICTION_CHECK(t.defined(), "input '" + decl.name() + "' is missing");
  FRICTION_CHECK(t.dtype() == decl.dtype(), "input '" + decl.name() + "' has dtype " +
                                                std::string(dtypeName(t.dtype())) + ", model expects " +
                                                std::string(dtypeName(decl.dtype())));
  const Shape& s = decl.shape();
  if (!s.hasRank()) return;
  FRICTION_CHECK(t.rank() == s.rank(), "input '" + decl.name() + "' has shape " + t.type().shape.str() +
                                           ", model expects " + s.str());
  for (size_t i = 0; i < s.rank(); ++i) {
    const Dim& d = s[i];
    if (d.isStatic()) {
      FRICTION_CHECK(t.shape()[i] == d.value, "input '" + decl.name() + "' has shape " + t.type().shape.str() +
                                                  ", model expects " + s.str());
    } else if (!d.isUnknown()) {
      auto [it, fresh] = bindings.emplace(d.symbol, t.shape()[i]);
      FRICTION_CHECK(fresh || it->second == t.shape()[i],
                     "input '" + decl.name() + "': dim '" + d.symbol + "' is " + std::to_string(t.shape()[i]) +
                         " here but " + std::to_string(it->second) + " in another input");
    }
  }
}

}  // namespace

void checkInputs(const Graph& graph, const std::vector<Tensor>& inputs) {
  FRICTION_CHECK(inputs.size() == graph.inputs().size(),
                 "model takes " + std::to_string(graph.inputs().size()) + " inputs, got " + std::to_string(inputs.size()));
  std::map<std::string, int64_t> bindings;
  for (size_t i = 0; i < inputs.size(); ++i) checkInput(*graph.inputs()[i], inputs[i], bindings);
}


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
