// Ahead-of-time artifacts of the cpu backend (Aot.h). No MLIR headers: the
// object file comes from MlirLowering.cpp (emitKernelObject), the program
// from CpuBackend.cpp (compileCpuWithKernels with a dlsym kernel source).
#include "codegen/Aot.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "codegen/Microkernels.h"
#include "ir/Error.h"
#include "ir/TextFormat.h"

#ifndef FRICTION_GIT_REVISION
#define FRICTION_GIT_REVISION "unknown"
#endif

namespace fs = std::filesystem;

namespace friction::codegen {
namespace {

// Bumped whenever the artifact layout, the kernel calling convention or the
// microkernel signatures change: an artifact of another ABI is refused.
constexpr int64_t kAotAbi = 1;
constexpr const char* kFormat = "friction-aot";

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

void writeFile(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  FRICTION_CHECK(f.good(), "aot: cannot write '" + p.string() + "'");
}

std::string readFile(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A temporary folder removed on scope exit (kept with FRICTION_AOT_KEEP=1).
struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "friction-aot-XXXXXX").string();
    FRICTION_CHECK(mkdtemp(t.data()) != nullptr, "aot: cannot create a temporary folder in " +
                                                      fs::temp_directory_path().string());
    path = t;
  }
  ~TempDir() {
    if (std::getenv("FRICTION_AOT_KEEP")) {
      std::fprintf(stderr, "note: aot: temporary files kept in %s\n", path.c_str());
      return;
    }
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string shellQuote(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

// The assembly stub: embedded manifest and graph, the microkernel slot table,
// and one trampoline per microkernel jumping through its slot.
std::string stubAssembly(const fs::path& manifest, const fs::path& graph, const std::vector<std::string>& microkernels) {
  std::ostringstream s;
  auto blob = [&](const char* sym, const fs::path& file) {
    s << "  .section .rodata\n  .balign 64\n  .globl " << sym << "\n  .type " << sym << ",@object\n"
      << sym << ":\n  .incbin \"" << file.string() << "\"\n  .byte 0\n  .globl " << sym << "_end\n"
      << sym << "_end:\n";
  };
  blob("friction_aot_manifest", manifest);
  blob("friction_aot_graph", graph);
  s << "  .data\n  .balign 8\n  .globl friction_aot_slots\n  .type friction_aot_slots,@object\nfriction_aot_slots:\n"
    << ".Lslots:\n  .zero " << 8 * std::max<size_t>(1, microkernels.size()) << "\n  .text\n";
  for (size_t i = 0; i < microkernels.size(); ++i) {
    const std::string& m = microkernels[i];
    s << "  .globl " << m << "\n  .type " << m << ",@function\n  .balign 16\n" << m << ":\n";
#if defined(__x86_64__)
    s << "  jmp *.Lslots+" << 8 * i << "(%rip)\n";
#elif defined(__aarch64__)
    s << "  adrp x16, .Lslots+" << 8 * i << "\n  ldr x16, [x16, :lo12:.Lslots+" << 8 * i << "]\n  br x16\n";
#else
#error "aot: trampolines for this architecture are not written"
#endif
  }
  s << "  .section .note.GNU-stack,\"\",@progbits\n";
  return s.str();
}

std::string typeString(const Value* v) { return v->type().str(); }

}  // namespace

bool isArtifactPath(const std::string& spec) {
  return spec.size() > 3 && spec.compare(spec.size() - 3, 3, ".so") == 0 && spec.rfind("zoo:", 0) != 0;
}

AotCompileReport compileArtifact(const Graph& g, const std::string& outPath, const AotCompileOptions& options) {
  AotCompileReport r;
  auto start = Clock::now();
  for (const Value* v : g.inputs())
    FRICTION_CHECK(v->shape().isStatic(), "aot: input '" + v->name() + "' has shape " + v->shape().str() +
                                              ": bind the batch (--batch N) before compiling");
  TempDir tmp;
  // 1. The kernels the cpu backend needs, exactly as compile() would build them.
  auto t = Clock::now();
  auto kernels = cpuKernelsOf(g, options.codegen);
  r.programMs = msSince(t);
  // 2. One object for all kernels; when that fails, one per kernel (a kernel
  //    that still fails is listed as failed: its nodes run on the interpreter).
  std::vector<const Node*> nodes;
  std::vector<std::string> names;
  for (size_t i = 0; i < kernels.size(); ++i) {
    nodes.push_back(kernels[i].second);
    names.push_back("friction_k" + std::to_string(i));
  }
  std::vector<fs::path> objects;
  nlohmann::json jk = nlohmann::json::array(), jf = nlohmann::json::array();
  auto account = [&](const ObjectStats& s) { r.buildMs += s.buildMs, r.lowerMs += s.lowerMs, r.objectMs += s.objectMs; };
  if (!nodes.empty()) {
    try {
      fs::path o = tmp.path / "kernels.o";
      account(emitKernelObject(nodes, names, options.codegen, o.string()));
      objects.push_back(o);
      for (size_t i = 0; i < nodes.size(); ++i) jk.push_back({{"key", kernels[i].first}, {"symbol", packedSymbol(names[i])}});
    } catch (const Error&) {
      for (size_t i = 0; i < nodes.size(); ++i) {
        fs::path o = tmp.path / ("kernel_" + std::to_string(i) + ".o");
        try {
          account(emitKernelObject({nodes[i]}, {names[i]}, options.codegen, o.string()));
          objects.push_back(o);
          jk.push_back({{"key", kernels[i].first}, {"symbol", packedSymbol(names[i])}});
        } catch (const Error& e) {
          jf.push_back({{"key", kernels[i].first}, {"error", std::string(e.what()).substr(0, 2000)}});
        }
      }
    }
  }
  r.kernels = int64_t(jk.size());
  r.failedKernels = int64_t(jf.size());
  // 3. Graph text, manifest, stub; link.
  t = Clock::now();
  std::string text = printGraph(g);
  r.graphBytes = int64_t(text.size());
  writeFile(tmp.path / "graph.fir", text);
  text.clear();
  text.shrink_to_fit();
  HostCpu host = hostCpu();
  r.cpu = host.name;
  std::vector<std::string> micro;
  for (const auto& [name, address] : microkernelSymbols()) micro.push_back(name);
  nlohmann::json m;
  m["format"] = kFormat;
  m["abi"] = kAotAbi;
  m["friction_revision"] = FRICTION_GIT_REVISION;
  m["model"] = options.model;
  m["batch"] = options.batch;
  m["passes"] = options.passes;
  m["codegen"] = {{"ukernels", options.codegen.ukernels}};
  m["target"] = {{"cpu", host.name}, {"features", host.features}};
  m["microkernels"] = micro;
  m["kernels"] = jk;
  m["failed_kernels"] = jf;
  for (const Value* v : g.inputs()) m["inputs"].push_back({{"name", v->name()}, {"type", typeString(v)}});
  for (const Value* v : g.outputs()) m["outputs"].push_back({{"name", v->name()}, {"type", typeString(v)}});
  m["compile_ms"] = {{"program", r.programMs}, {"build", r.buildMs}, {"lower", r.lowerMs}, {"object", r.objectMs}};
  writeFile(tmp.path / "manifest.json", m.dump(1));
  writeFile(tmp.path / "stub.S", stubAssembly(tmp.path / "manifest.json", tmp.path / "graph.fir", micro));
  fs::path out = fs::absolute(outPath);
  if (out.has_parent_path()) fs::create_directories(out.parent_path());
  fs::path partial = out;
  partial += ".partial";
  const char* cxx = std::getenv("FRICTION_AOT_CXX");
  std::string cmd = std::string(cxx && *cxx ? cxx : "c++") + " -shared -fPIC -o " + shellQuote(partial.string());
  for (const auto& o : objects) cmd += " " + shellQuote(o.string());
  cmd += " " + shellQuote((tmp.path / "stub.S").string());
  fs::path runnerUtils = FRICTION_MLIR_C_RUNNER_UTILS;  // memrefCopy, should bufferization emit copies
  cmd += " -Wl,-Bsymbolic -Wl,--as-needed -lm " + shellQuote(runnerUtils.string()) + " -Wl,-rpath," +
         shellQuote(runnerUtils.parent_path().string());
  fs::path log = tmp.path / "link.log";
  cmd += " > " + shellQuote(log.string()) + " 2>&1";
  int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::error_code ec;
    fs::remove(partial, ec);
    throw Error("aot: linking '" + out.string() + "' failed (exit " + std::to_string(rc) + "): " + cmd + "\n" +
                readFile(log).substr(0, 4000));
  }
  fs::rename(partial, out);
  r.linkMs = msSince(t);
  r.bytes = int64_t(fs::file_size(out));
  r.totalMs = msSince(start);
  return r;
}

// ---- loading ----

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
  CompiledBatch kernels(const std::vector<const Node*>& nodes, const std::vector<std::string>& keys) override {
    CompiledBatch b;
    b.owner = owner_;
    for (size_t i = 0; i < keys.size(); ++i) {
      auto f = failed_.find(keys[i]);
      if (f != failed_.end()) {
        b.entries.push_back(nullptr);
        b.errors.push_back("failed when the artifact was compiled: " + f->second);
        continue;
      }
      auto it = symbols_.find(keys[i]);
      FRICTION_CHECK(it != symbols_.end(), "'" + path_ + "' does not match its graph: no kernel for " +
                                               nodes[i]->describe() +
                                               " (the artifact was written by a different friction build?)");
      void* fn = dlsym(handle_, it->second.c_str());
      FRICTION_CHECK(fn, "'" + path_ + "': kernel symbol " + it->second + " is missing");
      b.entries.push_back(reinterpret_cast<PackedFn>(fn));
      b.errors.emplace_back();
    }
    return b;
  }

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
  FRICTION_CHECK(!m.is_discarded() && m.is_object() && m.value("format", "") == kFormat,
                 "'" + path + "' is not a friction artifact (its manifest is not readable)");
  ArtifactInfo& info = a->info_;
  info.abi = m.value("abi", int64_t(0));
  info.revision = m.value("friction_revision", "");
  FRICTION_CHECK(info.abi == kAotAbi, "'" + path + "' is a friction artifact of ABI " + std::to_string(info.abi) +
                                          " (written by friction " + info.revision + "); this friction (" +
                                          FRICTION_GIT_REVISION + ") loads ABI " + std::to_string(kAotAbi) +
                                          ": compile the model again");
  info.model = m.value("model", "");
  info.batch = m.value("batch", int64_t(0));
  info.passes = m.value("passes", std::vector<std::string>{});
  info.codegen.ukernels = m["codegen"].value("ukernels", true);
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
  auto inner = compileCpuWithKernels(g, info_.codegen, source, what);
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
