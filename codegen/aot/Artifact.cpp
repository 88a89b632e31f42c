// Loading ahead-of-time artifacts (Artifact.h): dlopen, manifest and CPU
// checks, and the cpu program over the embedded graph with kernels looked up
// by dlsym (LibrarySource).
#include "codegen/aot/Artifact.h"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "codegen/Microkernels.h"
#include "codegen/aot/Manifest.h"
#include "codegen/mlir/Codegen.h"
#include "ir/Error.h"
#include "ir/Revision.h"
#include "ir/TextFormat.h"

namespace fs = std::filesystem;

namespace friction::codegen {

bool isArtifactPath(const std::string& spec) {
  return spec.size() > 3 && spec.compare(spec.size() - 3, 3, ".so") == 0 && spec.rfind("zoo:", 0) != 0;
}

namespace {

// Kernel entries by dlsym: the KernelSource the cpu program is built with.
class LibrarySource : public KernelSource {
 public:
  LibrarySource(std::shared_ptr<void> owner, void* handle, const std::string& path,
                const std::vector<std::pair<std::string, std::string>>& kernels,
                const std::vector<std::pair<std::string, std::string>>& failed)
      : owner_(std::move(owner)), handle_(handle), path_(path) {
    for (const auto& [k, s] : kernels) symbols_[k] = s;
    for (const auto& [k, e] : failed) failed_[k] = e;
  }
  KernelBatch kernels(const std::vector<const Node*>& nodes, const std::vector<std::string>& keys) override {
    KernelBatch b;
    for (size_t i = 0; i < keys.size(); ++i) {
      CompiledKernel k;
      k.owner = owner_;
      if (auto f = failed_.find(keys[i]); f != failed_.end()) {
        k.error = "failed when the artifact was compiled: " + f->second;
        b.kernels.push_back(std::move(k));
        continue;
      }
      auto it = symbols_.find(keys[i]);
      FRICTION_CHECK(it != symbols_.end(), "'" + path_ + "' does not match its graph: no kernel for " +
                                               nodes[i]->describe() +
                                               " (the artifact was written by a different friction build?)");
      void* fn = dlsym(handle_, it->second.c_str());
      FRICTION_CHECK(fn, "'" + path_ + "': kernel symbol " + it->second + " is missing");
      k.fn = reinterpret_cast<PackedFn>(fn);
      b.kernels.push_back(std::move(k));
    }
    return b;
  }
  bool compiles() const override { return false; }
  std::string describe() const override { return "AOT artifact " + path_; }

 private:
  std::shared_ptr<void> owner_;
  void* handle_;
  std::string path_;
  std::map<std::string, std::string> symbols_, failed_;
};

// The cpu model plus the artifact's checks: inputs must have the compiled shapes.
class AotModel : public CompiledModel {
 public:
  AotModel(std::shared_ptr<const Artifact> a, const Graph& g, std::unique_ptr<CompiledModel> inner)
      : artifact_(std::move(a)), graph_(g), inner_(std::move(inner)) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    const ArtifactInfo& info = artifact_->info();
    FRICTION_CHECK(inputs.size() == graph_.inputs().size(),
                   "'" + info.path + "' takes " + std::to_string(graph_.inputs().size()) + " inputs, got " +
                       std::to_string(inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Value* v = graph_.inputs()[i];
      const Tensor& t = inputs[i];
      if (t.dtype() == v->type().dtype && t.shape() == v->shape().staticDims()) continue;
      throw Error("'" + info.path + "' was compiled for batch " + std::to_string(info.batch) + ": input '" +
                  v->name() + "' must be " + v->type().str() + ", got " + t.type().str() +
                  " (compile the model again with --batch N for another batch)");
    }
    return inner_->run(inputs);
  }
  std::string description() const override { return inner_->description(); }
  int64_t interpNodes() const override { return inner_->interpNodes(); }
  bool leavesCoresBusy() const override { return inner_->leavesCoresBusy(); }
  bool park() override { return inner_->park(); }
  bool runsApart() const override { return inner_->runsApart(); }
  const CpuStats* stats() const { return cpuStats(*inner_); }

 private:
  std::shared_ptr<const Artifact> artifact_;
  const Graph& graph_;
  std::unique_ptr<CompiledModel> inner_;
};

class AotBackend : public Backend {
 public:
  explicit AotBackend(std::string path) : path_(std::move(path)) {}
  std::string name() const override { return "cpu"; }
  std::unique_ptr<CompiledModel> compile(const Graph& g) override {
    auto a = Artifact::open(path_);
    return a->instantiate(g);
  }

 private:
  std::string path_;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> r;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) r.push_back(item);
  return r;
}

}  // namespace

Artifact::~Artifact() {
  if (handle_) dlclose(handle_);
}

std::shared_ptr<Artifact> Artifact::open(const std::string& path) {
  auto t0 = Clock::now();
  std::error_code ec;
  FRICTION_CHECK(fs::exists(path, ec), "cannot open artifact '" + path + "': No such file");
  FRICTION_CHECK(fs::is_regular_file(path, ec), "cannot open artifact '" + path + "': not a regular file");
  {
    char magic[4] = {};
    std::ifstream f(path, std::ios::binary);
    f.read(magic, 4);
    FRICTION_CHECK(f.gcount() == 4 && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F',
                   "'" + path + "' is not a friction artifact (not an ELF shared library; make one with `friction compile`)");
  }
  std::shared_ptr<Artifact> a(new Artifact());
  a->info_.path = path;
  // An absolute path: dlopen would otherwise search the library path for a bare name.
  std::string abs = fs::absolute(path).string();
  a->handle_ = dlopen(abs.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!a->handle_) {
    const char* why = dlerror();
    throw Error("'" + path + "' is not a friction artifact: cannot load it (" + std::string(why ? why : "?") + ")");
  }
  auto* mBegin = static_cast<const char*>(dlsym(a->handle_, "friction_aot_manifest"));
  auto* mEnd = static_cast<const char*>(dlsym(a->handle_, "friction_aot_manifest_end"));
  auto* gBegin = static_cast<const char*>(dlsym(a->handle_, "friction_aot_graph"));
  auto* gEnd = static_cast<const char*>(dlsym(a->handle_, "friction_aot_graph_end"));
  auto** slots = static_cast<void**>(dlsym(a->handle_, "friction_aot_slots"));
  FRICTION_CHECK(mBegin && mEnd && gBegin && gEnd && slots && mEnd > mBegin && gEnd > gBegin,
                 "'" + path + "' is not a friction artifact (a shared library without friction's manifest; make one "
                 "with `friction compile`)");
  nlohmann::json m = nlohmann::json::parse(std::string(mBegin, size_t(mEnd - mBegin - 1)), nullptr, false);
  FRICTION_CHECK(!m.is_discarded() && m.is_object() && m.value("format", "") == kArtifactFormat,
                 "'" + path + "' is not a friction artifact (its manifest is not readable)");
  ArtifactInfo& info = a->info_;
  info.abi = m.value("abi", int64_t(0));
  info.revision = m.value("friction_revision", "");
  FRICTION_CHECK(info.abi == kArtifactAbi, "'" + path + "' is a friction artifact of ABI " + std::to_string(info.abi) +
                                          " (written by friction " + info.revision + "); this friction (" +
                                          friction::revision() + ") loads ABI " + std::to_string(kArtifactAbi) +
                                          ": compile the model again");
  info.model = m.value("model", "");
  info.batch = m.value("batch", int64_t(0));
  info.passes = m.value("passes", std::vector<std::string>{});
  info.codegen.disabled = m["codegen"].value("disabled_stages", defaultOffStages());
  info.cpu = m["target"].value("cpu", "");
  info.features = m["target"].value("features", std::vector<std::string>{});
  // The CPU: every feature the code was compiled for must be there.
  std::vector<std::string> hostFeatures;
  if (const char* fake = std::getenv("FRICTION_AOT_HOST_FEATURES")) hostFeatures = split(fake, ',');
  else hostFeatures = hostCpu().features;
  std::set<std::string> have(hostFeatures.begin(), hostFeatures.end());
  std::vector<std::string> missing;
  for (const std::string& f : info.features)
    if (!have.count(f)) missing.push_back(f);
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size() && i < 12; ++i) list += (i ? ", " : "") + missing[i];
    if (missing.size() > 12) list += ", ... (" + std::to_string(missing.size()) + " in all)";
    throw Error("'" + path + "' was compiled for a different CPU (" + info.cpu + "): this CPU lacks " + list +
                "; compile the model again on this machine");
  }
  // Microkernels: fill the trampolines' slots with this process's functions.
  auto micro = microkernelSymbols();
  std::vector<std::string> wanted = m.value("microkernels", std::vector<std::string>{});
  for (size_t i = 0; i < wanted.size(); ++i) {
    auto it = std::find_if(micro.begin(), micro.end(), [&](const auto& p) { return p.first == wanted[i]; });
    FRICTION_CHECK(it != micro.end(), "'" + path + "' calls microkernel " + wanted[i] + ", which this friction lacks");
    slots[i] = it->second;
  }
  for (const auto& k : m["kernels"]) a->kernels_.emplace_back(k.at("key").get<std::string>(), k.at("symbol").get<std::string>());
  for (const auto& k : m["failed_kernels"]) a->failed_.emplace_back(k.at("key").get<std::string>(), k.at("error").get<std::string>());
  info.kernels = int64_t(a->kernels_.size());
  info.failedKernels = int64_t(a->failed_.size());
  a->graph_ = gBegin;
  a->graphSize_ = size_t(gEnd - gBegin - 1);
  a->openMs_ = msSince(t0);
  return a;
}

std::unique_ptr<Graph> Artifact::graph() const {
  return parseGraph(std::string(graph_, graphSize_), info_.path + " (embedded graph)");
}

std::unique_ptr<CompiledModel> Artifact::instantiate(const Graph& g) const {
  FRICTION_CHECK(g.inputs().size() >= 1 || g.outputs().size() >= 1, "aot: empty graph");
  auto self = shared_from_this();
  LibrarySource source(std::shared_ptr<void>(self, handle_), handle_, info_.path, kernels_, failed_);
  std::string what = "AOT artifact " + info_.path + ", friction " + info_.revision + ", compiled for " + info_.cpu +
                     ", batch " + std::to_string(info_.batch);
  auto inner = compileCpuModel(g, source, what, info_.codegen);
  return std::make_unique<AotModel>(self, g, std::move(inner));
}

LoadedArtifact loadArtifact(const std::string& path) {
  LoadedArtifact r;
  r.artifact = Artifact::open(path);
  r.openMs = r.artifact->openMs();
  auto t = Clock::now();
  r.graph = r.artifact->graph();
  r.parseMs = msSince(t);
  t = Clock::now();
  r.model = r.artifact->instantiate(*r.graph);
  r.programMs = msSince(t);
  return r;
}

std::unique_ptr<Backend> createAotBackend(const std::string& path) { return std::make_unique<AotBackend>(path); }

const CpuStats* artifactStats(const CompiledModel& model) {
  auto* m = dynamic_cast<const AotModel*>(&model);
  return m ? m->stats() : nullptr;
}

}  // namespace friction::codegen
