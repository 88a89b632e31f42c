#include "codegen/cuda/GpuCompile.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <unordered_map>

#include "codegen/ProgramBuilder.h"
#include "codegen/cuda/GpuPlanBuilder.h"
#include "codegen/mlir/Codegen.h"
#include "ir/Error.h"
#include "ir/Shell.h"

namespace fs = std::filesystem;

namespace friction::codegen {
namespace {

// Calls per kernel entry, and the steps no GPU kernel covers, over `p` and its regions.
void walkSteps(const Program& p, std::unordered_map<const KernelEntry*, int64_t>& calls, GpuCompileReport& r) {
  for (const Step& s : p.steps) {
    switch (s.kind) {
      case Step::Compiled: calls[s.kernel.get()]++; break;
      case Step::Sub: walkSteps(*s.sub, calls, r); break;
      case Step::View: r.views++; break;
      case Step::Native:  // a native anchor may have a compiled epilogue
        r.hostSteps["native " + s.native->describe()]++;
        if (s.kernel) calls[s.kernel.get()]++;
        break;
      case Step::Interp: r.hostSteps["interp " + s.node->op()]++; break;
    }
  }
}

// "Fused(epilogue: Conv+Relu) -> f32[1,16,8,8]" as a file name: k3-Fused-epilogue-Conv-Relu.
std::string fileName(size_t index, const std::string& label) {
  std::string head = label.substr(0, label.find(" -> ")), name = "k" + std::to_string(index) + "-";
  for (char c : head) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  name = std::regex_replace(name, std::regex("-+"), "-");
  while (name.back() == '-') name.pop_back();
  return name.substr(0, 80);
}

}  // namespace

int64_t GpuCompileReport::failed() const {
  int64_t n = 0;
  for (const auto& k : kernels) n += !k.error.empty();
  return n;
}

GpuCompileReport compileForGpu(const Graph& g, CodegenOptions options) {
  options.target = Target::Cuda;
  GpuCompileReport r;
  r.chip = options.gpuChip;
  KernelCache cache;
  ProgramStats stats;
  ProgramBuilder builder(cache, stats, options);
  auto program = builder.build(g);
  std::unordered_map<const KernelEntry*, int64_t> calls;
  walkSteps(*program, calls, r);
  std::unordered_map<const KernelEntry*, int> kernelOf;
  for (const auto& [key, node] : builder.pending()) {
    GpuCompiledKernel k;
    const KernelEntry* entry = cache.at(key).get();
    kernelOf[entry] = int(r.kernels.size());
    k.label = entry->label;
    k.calls = calls[entry];
    k.file = fileName(r.kernels.size(), k.label);
    try {
      k.code = compileGpuKernel(*node, options, r.times);
    } catch (const Error& e) {
      k.error = e.what();
    }
    r.kernelCalls += k.calls;
    r.launches += k.calls * int64_t(k.code.launches.size());
    r.kernels.push_back(std::move(k));
  }
  r.plan.chip = r.chip;
  for (const GpuCompiledKernel& k : r.kernels) {
    r.plan.kernels.push_back(k.code);
    r.plan.kernelLabels.push_back(k.label);
  }
  try {
    FRICTION_CHECK(r.failed() == 0, "cuda: " + std::to_string(r.failed()) + " kernels failed to compile");
    planGpuCalls(*program, g, kernelOf, r.plan);
  } catch (const Error& e) {
    r.planError = e.what();
    r.plan = {};
  }
  return r;
}

void writePtxFolder(const GpuCompileReport& r, const std::string& dir) {
  fs::create_directories(dir);
  nlohmann::json m{{"chip", r.chip}, {"kernel_calls", r.kernelCalls}, {"launches", r.launches}, {"views", r.views}};
  m["host_steps"] = r.hostSteps;
  m["kernels"] = nlohmann::json::array();
  for (const GpuCompiledKernel& k : r.kernels) {
    nlohmann::json j{{"label", k.label}, {"calls", k.calls}};
    if (!k.error.empty()) {
      j["error"] = k.error;
    } else {
      j["ptx"] = k.file + ".ptx";
      j["buffers"] = k.code.buffers;
      if (!k.code.scratch.empty()) j["scratch"] = k.code.scratch;
      writeFile(fs::path(dir) / (k.file + ".ptx"), k.code.ptx);
      for (const gpu::GpuLaunch& l : k.code.launches) {
        nlohmann::json args = nlohmann::json::array();
        for (const gpu::GpuLaunchArg& a : l.args)
          args.push_back(a.buffer >= 0 ? nlohmann::json{{"buffer", a.buffer}}
                                       : a.isFloat ? nlohmann::json{{"f32", a.real}} : nlohmann::json{{"index", a.integer}});
        j["launches"].push_back({{"function", l.function},
                                 {"grid", {l.grid[0], l.grid[1], l.grid[2]}},
                                 {"block", {l.block[0], l.block[1], l.block[2]}},
                                 {"args", args}});
      }
    }
    m["kernels"].push_back(j);
  }
  writeFile(fs::path(dir) / "kernels.json", m.dump(1) + "\n");
}

std::string findPtxas() {
  std::vector<fs::path> candidates;
  for (const std::string& root : cudaToolkitRoots()) candidates.push_back(fs::path(root) / "bin/ptxas");
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    for (size_t at = 0; at <= p.size();) {
      size_t end = p.find(':', at);
      if (end == std::string::npos) end = p.size();
      if (end > at) candidates.push_back(fs::path(p.substr(at, end - at)) / "ptxas");
      at = end + 1;
    }
  }
  for (const fs::path& c : candidates)
    if (::access(c.c_str(), X_OK) == 0) return c.string();
  return "";
}

PtxasResult runPtxas(const std::string& ptxas, const std::string& ptx, const std::string& chip) {
  TempDir tmp("friction-ptxas");
  writeFile(tmp.path / "k.ptx", ptx);
  fs::path log = tmp.path / "ptxas.log";
  PtxasResult r;
  int rc = runCommand({ptxas, "-v", "-arch=" + chip, (tmp.path / "k.ptx").string(), "-o", (tmp.path / "k.cubin").string()},
                      log.string(), /*withStderr=*/true);
  r.message = readFile(log);
  r.ok = rc == 0;
  std::smatch m;
  std::string text = r.message;
  while (std::regex_search(text, m, std::regex("Used ([0-9]+) registers"))) {
    r.registers = std::max(r.registers, std::stoi(m[1]));
    text = m.suffix();
  }
  return r;
}

}  // namespace friction::codegen
