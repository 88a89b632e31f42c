#include "vendor_bridge/PythonBridge.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <set>

#include "frontend/onnx/OnnxExport.h"
#include "ir/Error.h"
#include "ir/Spec.h"
#include "runtime/Backend.h"
#include "vendor_bridge/Bridges.h"
#include "vendor_bridge/Npy.h"
#include "vendor_bridge/PythonWorker.h"

namespace fs = std::filesystem;

namespace friction::vendor {
namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// A new folder friction-<what>-<pid>-<n> in the system's temp directory, removed with its owner. As a member it
// is removed also when the owner's constructor throws after creating it (a vendor that cannot load the model).
class TempDir {
 public:
  explicit TempDir(const std::string& what) {
    static std::atomic<int> next = 0;  // models are compiled from several threads at once (layout epochs)
    path_ = fs::temp_directory_path() /
            ("friction-" + what + "-" + std::to_string(::getpid()) + "-" + std::to_string(next++));
    fs::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Backend name -> its vendor switches (filled by registerPythonBridge).
std::map<std::string, std::vector<std::string>>& switchTable() {
  static std::map<std::string, std::vector<std::string>> t;
  return t;
}

class PythonBridgeModel : public CompiledModel {
 public:
  // `artifacts`: the folder where a vendor that can save its compiled model keeps it (worker_common.py), one file
  // per exported model and options; a model prepared again (a layout epoch) loads it instead of compiling.
  PythonBridgeModel(const PythonBridgeSpec& spec, const Graph& g, const std::map<std::string, std::string>& options,
                    const fs::path& artifacts)
      : dir_(spec.name),
        worker_(std::string(FRICTION_SOURCE_DIR) + "/vendor_bridge/python/" + spec.script),
        inputs_(g.inputs().size()) {
    onnxio::exportOnnxFile(g, (dir_.path() / "model.onnx").string());
    nlohmann::json opts(options);
    const fs::path model = dir_.path() / "model.onnx";
    auto reply = worker_.request({{"cmd", "load"}, {"model", model.string()}, {"options", opts},
                                  {"artifact", (artifacts / artifactName(model, opts)).string()}});
    // Vendor, version and settings; the vendor's own compile time (imports and
    // ONNX export excluded), which the harness's compile_ms includes.
    char compile[64];
    std::snprintf(compile, sizeof compile, " (vendor compile %.1f ms)", reply.value("load_ms", -1.0));
    description_ = reply.value("vendor", spec.name) + " " + reply.value("version", std::string("?")) + " " +
                   opts.dump() + compile;
    if (reply.contains("threads_used")) description_ += ", threads used: " + reply["threads_used"].get<std::string>();
    if (reply.value("artifact_reused", false)) description_ += ", compiled model reused";
  }
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    writeInputs(inputs);
    auto reply = worker_.request({{"cmd", "run"}, {"dir", dir_.path().string()}, {"inputs", inputs.size()}});
    lastMs_ = reply.at("ms").get<double>();
    std::vector<Tensor> outs;
    for (int i = 0; i < reply.at("outputs").get<int>(); ++i)
      outs.push_back(readNpy((dir_.path() / ("output_" + std::to_string(i) + ".npy")).string()));
    return outs;
  }
  double lastRunMs() const override { return lastMs_; }
  // The worker runs the model n times back to back, timing each run alone
  // (worker_common.py's "time" command); no outputs come back.
  TimedRuns timeRuns(const std::vector<Tensor>& inputs, int n) override {
    writeInputs(inputs);
    auto reply = worker_.request(
        {{"cmd", "time"}, {"dir", dir_.path().string()}, {"inputs", inputs.size()}, {"repeat", n}});
    return {reply.at("ms").get<std::vector<double>>(), true};
  }
  std::string description() const override { return description_; }
  bool park() override { return worker_.park(); }
  bool runsApart() const override { return true; }

 private:
  void writeInputs(const std::vector<Tensor>& inputs) {
    FRICTION_CHECK(inputs.size() == inputs_, "model takes " + std::to_string(inputs_) + " inputs, got " +
                                                 std::to_string(inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i)
      writeNpy((dir_.path() / ("input_" + std::to_string(i) + ".npy")).string(), inputs[i]);
  }

  // The exported model's bytes and the options, hashed: the same graph compiled twice gets the same name.
  static std::string artifactName(const fs::path& model, const nlohmann::json& opts) {
    std::ifstream in(model, std::ios::binary);
    std::string key((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    char name[32];
    std::snprintf(name, sizeof name, "model-%016zx", std::hash<std::string>{}(key + opts.dump()));
    return name;
  }

  TempDir dir_;  // the exported model, inputs and outputs; declared before the worker: removed after it quits
  PythonWorker worker_;
  size_t inputs_;
  double lastMs_ = -1;
  std::string description_;
};

class PythonBridgeBackend : public Backend {
 public:
  PythonBridgeBackend(const PythonBridgeSpec& spec, std::map<std::string, std::string> options)
      : spec_(spec), options_(std::move(options)) {
    for (const auto& [k, v] : options_)
      FRICTION_CHECK(std::find(spec_.options.begin(), spec_.options.end(), k) != spec_.options.end(),
                     "backend " + spec_.name + ": unknown option '" + k + "' (options: " + joined(spec_.options) + ")");
    if (spec_.closedSwitches && options_.count("disable")) {
      std::string list = options_.at("disable");
      for (size_t b = 0; b <= list.size();) {
        size_t e = std::min(list.find(',', b), list.size());
        std::string s = list.substr(b, e - b);
        FRICTION_CHECK(s.empty() || std::find(spec_.switches.begin(), spec_.switches.end(), s) != spec_.switches.end(),
                       "backend " + spec_.name + ": unknown switch '" + s + "' (switches: " + joined(spec_.switches) + ")");
        b = e + 1;
      }
    }
  }
  std::string name() const override { return spec_.name; }
  std::unique_ptr<CompiledModel> compile(const Graph& g) override {
    if (!artifacts_) artifacts_.emplace(spec_.name + "-artifacts");
    return std::make_unique<PythonBridgeModel>(spec_, g, options_, artifacts_->path());
  }

 private:
  PythonBridgeSpec spec_;
  std::map<std::string, std::string> options_;
  std::optional<TempDir> artifacts_;  // compiled models (worker_common.py, "artifact"), made on first use
};

// The bridges that take a threads= option.
std::set<std::string>& threadedBridges() {
  static std::set<std::string> names;
  return names;
}

}  // namespace

void registerPythonBridge(PythonBridgeSpec spec) {
  switchTable()[spec.name] = spec.switches;
  if (std::find(spec.options.begin(), spec.options.end(), "threads") != spec.options.end())
    threadedBridges().insert(spec.name);
  registerBackend(spec.name, [spec](const std::map<std::string, std::string>& o) {
    return std::make_unique<PythonBridgeBackend>(spec, o);
  });
}

std::vector<std::string> vendorSwitches(const std::string& backendSpec) {
  if (auto b = booleanSwitches(backendSpec); !b.empty()) return b;  // e.g. onednn's postops
  auto it = switchTable().find(Spec::parse(backendSpec, "backend").name());
  return it == switchTable().end() ? std::vector<std::string>{} : it->second;
}

std::string withThreads(const std::string& backendSpec, int threads) {
  Spec spec = Spec::parse(backendSpec, "backend");
  if (threads <= 0 || spec.has("threads") || !threadedBridges().count(spec.name())) return backendSpec;
  spec.set("threads", std::to_string(threads));
  return spec.print();
}

std::string withSwitchesOff(const std::string& backendSpec, const std::vector<std::string>& off) {
  if (off.empty()) return backendSpec;
  if (!booleanSwitches(backendSpec).empty()) return withBooleanSwitchesOff(backendSpec, off);
  Spec spec = Spec::parse(backendSpec, "backend");
  FRICTION_CHECK(!spec.has("disable"), "ablating vendor switches needs a backend spec without its own disable= list");
  std::string list;
  for (const auto& s : off) list += (list.empty() ? "" : ",") + s;
  spec.set("disable", list);
  return spec.print();
}

}  // namespace friction::vendor
