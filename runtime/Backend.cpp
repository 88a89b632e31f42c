#include "runtime/Backend.h"

#include "ir/Error.h"
#include "runtime/interp/Interpreter.h"

namespace friction {
namespace {

class InterpModel : public CompiledModel {
 public:
  explicit InterpModel(const Graph& g) : graph_(g) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override { return interp::run(graph_, inputs); }

 private:
  const Graph& graph_;
};

class InterpBackend : public Backend {
 public:
  std::string name() const override { return "interp"; }
  std::unique_ptr<CompiledModel> compile(const Graph& g) override { return std::make_unique<InterpModel>(g); }
};

}  // namespace

std::vector<std::string> availableBackends() { return {"interp"}; }

std::unique_ptr<Backend> createBackend(const std::string& name) {
  if (name == "interp") return std::make_unique<InterpBackend>();
  std::string known;
  for (const auto& b : availableBackends()) known += (known.empty() ? "" : ", ") + b;
  static const char* planned[] = {"cpu", "cuda", "ort", "openvino", "tvm", "iree", "onednn", "tensorrt"};
  for (const char* p : planned)
    if (name == p) throw Error("backend '" + name + "' is not available in this build (available: " + known + ")");
  throw Error("unknown backend '" + name + "' (available: " + known + ")");
}

}  // namespace friction
