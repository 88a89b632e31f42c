// The `ort` backend: the graph (after friction's passes) is exported to ONNX
// and run by ONNX Runtime's CPU provider in a Python worker. Options map to
// ORT's own switches: level = disabled|basic|extended|layout|all (graph
// optimization level, default all), disable = optimizer names, threads.
#include <unistd.h>

#include <filesystem>

#include "frontend/onnx/OnnxExport.h"
#include "ir/Error.h"
#include "runtime/Backend.h"
#include "vendor_bridge/Bridges.h"
#include "vendor_bridge/Npy.h"
#include "vendor_bridge/PythonWorker.h"

namespace fs = std::filesystem;

namespace friction::vendor {
namespace {

class OrtModel : public CompiledModel {
 public:
  OrtModel(const Graph& g, const std::map<std::string, std::string>& options)
      : dir_(fs::temp_directory_path() / ("friction-ort-" + std::to_string(::getpid()) + "-" + std::to_string(next_++))),
        worker_(std::string(FRICTION_SOURCE_DIR) + "/vendor_bridge/python/ort_worker.py"), inputs_(g.inputs().size()) {
    fs::create_directories(dir_);
    onnxio::exportOnnxFile(g, (dir_ / "model.onnx").string());
    nlohmann::json opts(options);
    auto reply = worker_.request({{"cmd", "load"}, {"model", (dir_ / "model.onnx").string()}, {"options", opts}});
    description_ = "onnxruntime " + reply.value("version", std::string("?")) + " " + opts.dump();
  }
  ~OrtModel() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    FRICTION_CHECK(inputs.size() == inputs_, "model takes " + std::to_string(inputs_) + " inputs, got " +
                                                 std::to_string(inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i) writeNpy((dir_ / ("input_" + std::to_string(i) + ".npy")).string(), inputs[i]);
    auto reply = worker_.request({{"cmd", "run"}, {"dir", dir_.string()}, {"inputs", inputs.size()}});
    lastMs_ = reply.at("ms").get<double>();
    std::vector<Tensor> outs;
    for (int i = 0; i < reply.at("outputs").get<int>(); ++i)
      outs.push_back(readNpy((dir_ / ("output_" + std::to_string(i) + ".npy")).string()));
    return outs;
  }
  double lastRunMs() const override { return lastMs_; }
  std::string description() const override { return description_; }

 private:
  static inline int next_ = 0;
  fs::path dir_;
  PythonWorker worker_;
  size_t inputs_;
  double lastMs_ = -1;
  std::string description_;
};

class OrtBackend : public Backend {
 public:
  explicit OrtBackend(std::map<std::string, std::string> options) : options_(std::move(options)) {
    for (const auto& [k, v] : options_)
      FRICTION_CHECK(k == "level" || k == "disable" || k == "threads",
                     "backend ort: unknown option '" + k + "' (options: level, disable, threads)");
  }
  std::string name() const override { return "ort"; }
  std::unique_ptr<CompiledModel> compile(const Graph& g) override { return std::make_unique<OrtModel>(g, options_); }

 private:
  std::map<std::string, std::string> options_;
};

// ONNX Runtime's CPU graph optimizers by the names `disabled_optimizers`
// takes (basic and extended levels); see docs/vendor-mapping.md.
const std::vector<std::string> kOrtOptimizers = {
    "ConstantFolding",     "CommonSubexpressionElimination", "ConvBNFusion",    "ConvAddFusion",
    "ConvMulFusion",       "ConvActivationFusion",           "GemmActivationFusion", "MatMulAddFusion",
    "GeluFusion",          "LayerNormFusion",                "SkipLayerNormFusion",  "BiasGeluFusion",
    "AttentionFusion",     "TransposeOptimizer",             "NchwcTransformer"};

}  // namespace

std::vector<std::string> vendorSwitches(const std::string& backendSpec) {
  return backendSpec.substr(0, backendSpec.find('?')) == "ort" ? kOrtOptimizers : std::vector<std::string>{};
}

std::string withSwitchesOff(const std::string& backendSpec, const std::vector<std::string>& off) {
  if (off.empty()) return backendSpec;
  std::string list;
  for (const auto& s : off) list += (list.empty() ? "" : ",") + s;
  FRICTION_CHECK(backendSpec.find("disable=") == std::string::npos,
                 "ablating vendor switches needs a backend spec without its own disable= list");
  return backendSpec + (backendSpec.find('?') == std::string::npos ? "?" : "&") + "disable=" + list;
}

void registerOrtBackend() {
  registerBackend("ort", [](const std::map<std::string, std::string>& o) { return std::make_unique<OrtBackend>(o); });
}

}  // namespace friction::vendor
