#include "runtime/Backend.h"

#include <chrono>

#include "ir/Error.h"
#include "ir/Spec.h"
#include "runtime/interp/Interpreter.h"

namespace friction {
namespace {

class InterpModel : public CompiledModel {
 public:
  explicit InterpModel(const Graph& g) : graph_(g) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override { return interp::run(graph_, inputs); }
  int64_t interpNodes() const override { return int64_t(graph_.nodes().size()); }
  bool leavesCoresBusy() const override { return false; }

 private:
  const Graph& graph_;
};

class InterpBackend : public Backend {
 public:
  std::string name() const override { return "interp"; }
  std::unique_ptr<CompiledModel> compile(const Graph& g) override { return std::make_unique<InterpModel>(g); }
};

std::map<std::string, BackendFactory>& registry() {
  static std::map<std::string, BackendFactory> r = {
      {"interp", [](const std::map<std::string, std::string>& o) -> std::unique_ptr<Backend> {
         FRICTION_CHECK(o.empty(), "backend interp takes no options");
         return std::make_unique<InterpBackend>();
       }}};
  return r;
}

}  // namespace

TimedRuns CompiledModel::timeRuns(const std::vector<Tensor>& inputs, int n) {
  TimedRuns t;
  for (int i = 0; i < n; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    run(inputs);
    double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    double inside = lastRunMs();
    t.internal = inside >= 0;
    t.ms.push_back(t.internal ? inside : wall);
  }
  return t;
}

void registerBackend(const std::string& name, BackendFactory factory) { registry()[name] = std::move(factory); }

std::vector<std::string> availableBackends() {
  std::vector<std::string> r;
  for (const auto& [name, f] : registry()) r.push_back(name);
  return r;
}

std::unique_ptr<Backend> createBackend(const std::string& spec) {
  Spec parsed = Spec::parse(spec, "backend");
  const std::string& name = parsed.name();
  auto it = registry().find(name);
  if (it != registry().end()) return it->second(parsed.optionMap());
  std::string known;
  for (const auto& b : availableBackends()) known += (known.empty() ? "" : ", ") + b;
  static const char* planned[] = {"cpu", "cuda", "halide", "ort", "openvino", "tvm", "iree", "onednn", "tensorrt"};
  for (const char* p : planned)
    if (name == p) throw Error("backend '" + name + "' is not available in this build (available: " + known + ")");
  throw Error("unknown backend '" + name + "' (available: " + known + ")");
}

}  // namespace friction
