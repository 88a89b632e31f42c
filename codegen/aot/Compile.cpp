// Writing ahead-of-time artifacts (Artifact.h): the kernels the cpu program
// of a graph needs (codegen/ProgramBuilder.h), compiled into an object file
// (codegen/mlir/Codegen.h), linked with the embedded graph, manifest and
// microkernel trampolines into one shared library.
#include "codegen/aot/Artifact.h"

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
#include "codegen/ProgramBuilder.h"
#include "codegen/aot/Manifest.h"
#include "codegen/mlir/Codegen.h"
#include "ir/Error.h"
#include "ir/Shell.h"
#include "ir/Revision.h"
#include "ir/TextFormat.h"

namespace fs = std::filesystem;

namespace friction::codegen {
namespace {

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

}  // namespace

AotCompileReport compileArtifact(const Graph& g, const std::string& outPath, const AotCompileOptions& options) {
  AotCompileReport r;
  auto start = Clock::now();
  for (const Value* v : g.inputs())
    FRICTION_CHECK(v->shape().isStatic(), "aot: input '" + v->name() + "' has shape " + v->shape().str() +
                                              ": bind the batch (--batch N) before compiling");
  TempDir tmp("friction-aot", "FRICTION_AOT_KEEP");
  // 1. The kernels the cpu backend needs, exactly as compile() would build them.
  auto t = Clock::now();
  KernelCache cache;
  ProgramStats stats;
  ProgramBuilder builder(cache, stats, options.codegen);
  auto program = builder.build(g);
  const auto& kernels = builder.pending();
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
  auto account = [&](const CompileTimes& s) { r.buildMs += s.buildMs, r.lowerMs += s.lowerMs, r.objectMs += s.jitMs; };
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
  m["format"] = kArtifactFormat;
  m["abi"] = kArtifactAbi;
  m["friction_revision"] = friction::revision();
  m["model"] = options.model;
  m["batch"] = options.batch;
  m["passes"] = options.passes;
  m["codegen"] = {{"disabled_stages", options.codegen.disabled}};
  m["target"] = {{"cpu", host.name}, {"features", host.features}};
  m["microkernels"] = micro;
  m["kernels"] = jk;
  m["failed_kernels"] = jf;
  for (const Value* v : g.inputs()) m["inputs"].push_back({{"name", v->name()}, {"type", v->type().str()}});
  for (const Value* v : g.outputs()) m["outputs"].push_back({{"name", v->name()}, {"type", v->type().str()}});
  m["compile_ms"] = {{"program", r.programMs}, {"build", r.buildMs}, {"lower", r.lowerMs}, {"object", r.objectMs}};
  writeFile(tmp.path / "manifest.json", m.dump(1));
  writeFile(tmp.path / "stub.S", stubAssembly(tmp.path / "manifest.json", tmp.path / "graph.fir", micro));
  fs::path out = fs::absolute(outPath);
  if (out.has_parent_path()) fs::create_directories(out.parent_path());
  fs::path partial = out;
  partial += ".partial";
  const char* cxx = std::getenv("FRICTION_AOT_CXX");
  fs::path runnerUtils = FRICTION_MLIR_C_RUNNER_UTILS;  // memrefCopy, should bufferization emit copies
  std::vector<std::string> argv = {cxx && *cxx ? cxx : "c++", "-shared", "-fPIC", "-o", partial.string()};
  for (const auto& o : objects) argv.push_back(o.string());
  for (std::string a : {(tmp.path / "stub.S").string(), std::string("-Wl,-Bsymbolic"), std::string("-Wl,--as-needed"),
                        std::string("-lm"), runnerUtils.string(), "-Wl,-rpath," + runnerUtils.parent_path().string()})
    argv.push_back(a);
  fs::path log = tmp.path / "link.log";
  int rc = runCommand(argv, log.string(), /*withStderr=*/true);
  if (rc != 0) {
    std::error_code ec;
    fs::remove(partial, ec);
    throw Error("aot: linking '" + out.string() + "' failed (exit " + std::to_string(rc) + "): " + shellCommand(argv) +
                "\n" + readFile(log).substr(0, 4000));
  }
  fs::rename(partial, out);
  r.linkMs = msSince(t);
  r.bytes = int64_t(fs::file_size(out));
  r.totalMs = msSince(start);
  return r;
}

}  // namespace friction::codegen
