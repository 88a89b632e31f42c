// The one interface every executor sits behind: the reference interpreter,
// the compiled CPU/CUDA backends and the vendor bridges. `compile` does all
// ahead-of-time work; `run` is what the harness times.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ir/Graph.h"

namespace friction {

class CompiledModel {
 public:
  virtual ~CompiledModel() = default;
  // One tensor per graph input, in order; returns one tensor per graph output.
  virtual std::vector<Tensor> run(const std::vector<Tensor>& inputs) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // The graph must outlive the returned model.
  virtual std::unique_ptr<CompiledModel> compile(const Graph& graph) = 0;
};

// Backend names of the CLI contract; `createBackend` throws Error for names
// that are unknown or not built yet, listing the available ones.
std::vector<std::string> availableBackends();
std::unique_ptr<Backend> createBackend(const std::string& name);

}  // namespace friction
