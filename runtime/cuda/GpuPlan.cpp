#include "runtime/cuda/GpuPlan.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "ir/DType.h"
#include "ir/Error.h"
#include "ir/Shell.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace friction::gpu {
namespace {

// ir/Shell's readFile, which reads a missing file as "", made to say which file is missing.
std::string readExisting(const fs::path& p) {
  FRICTION_CHECK(fs::is_regular_file(p), "cuda plan: cannot read " + p.string());
  return readFile(p);
}

json valueJson(const GpuValue& v) {
  return {{"name", v.name}, {"dtype", v.dtype}, {"shape", v.shape}, {"offset", v.offset}, {"bytes", v.bytes}};
}
GpuValue valueOf(const json& j) {
  GpuValue v;
  j.at("name").get_to(v.name);
  j.at("dtype").get_to(v.dtype);
  j.at("shape").get_to(v.shape);
  j.at("offset").get_to(v.offset);
  j.at("bytes").get_to(v.bytes);
  return v;
}

json launchJson(const GpuLaunch& l) {
  json args = json::array();
  for (const GpuLaunchArg& a : l.args)
    args.push_back(a.buffer >= 0 ? json{{"buffer", a.buffer}}
                   : a.isFloat   ? json{{"f32", a.real}}
                                 : json{{"int", a.integer}, {"bits", a.bits}});
  return {{"function", l.function},
          {"grid", {l.grid[0], l.grid[1], l.grid[2]}},
          {"block", {l.block[0], l.block[1], l.block[2]}},
          {"args", args}};
}
GpuLaunch launchOf(const json& j) {
  GpuLaunch l;
  j.at("function").get_to(l.function);
  for (int i = 0; i < 3; ++i) {
    l.grid[i] = j.at("grid").at(size_t(i)).get<int64_t>();
    l.block[i] = j.at("block").at(size_t(i)).get<int64_t>();
  }
  for (const json& a : j.at("args")) {
    GpuLaunchArg arg;
    if (a.contains("buffer")) {
      a.at("buffer").get_to(arg.buffer);
    } else if (a.contains("f32")) {
      arg.isFloat = true;
      a.at("f32").get_to(arg.real);
    } else {
      a.at("int").get_to(arg.integer);
      a.at("bits").get_to(arg.bits);
    }
    l.args.push_back(arg);
  }
  return l;
}

}  // namespace

int64_t GpuPlan::launches() const {
  int64_t n = 0;
  for (const GpuCall& c : calls) n += int64_t(kernels[size_t(c.kernel)].launches.size());
  return n;
}

int64_t GpuPlan::bytesBetweenKernels() const {
  int64_t n = 0;
  for (const GpuCall& c : calls)
    for (int b = 0; b < kernels[size_t(c.kernel)].buffers; ++b) n += c.bytes[size_t(b)];
  return n;
}

void writePlan(const GpuPlan& p, const std::string& dir) {
  fs::create_directories(dir);
  json j{{"format", "friction-cuda-plan 1"}, {"chip", p.chip}, {"arena_bytes", p.arenaBytes},
         {"intermediate_bytes", p.intermediateBytes}};
  for (const char* key : {"inputs", "outputs", "kernels", "calls", "constants"}) j[key] = json::array();
  for (const GpuValue& v : p.inputs) j["inputs"].push_back(valueJson(v));
  for (const GpuValue& v : p.outputs) j["outputs"].push_back(valueJson(v));
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const GpuKernel& kernel = p.kernels[k];
    std::string file = "k" + std::to_string(k) + ".ptx";
    writeFile(fs::path(dir) / file, kernel.ptx);
    json launches = json::array();
    for (const GpuLaunch& l : kernel.launches) launches.push_back(launchJson(l));
    j["kernels"].push_back({{"label", p.kernelLabels[k]}, {"ptx", file}, {"buffers", kernel.buffers},
                            {"inputs", kernel.inputs}, {"scratch", kernel.scratch}, {"launches", launches}});
  }
  for (const GpuCall& c : p.calls)
    j["calls"].push_back({{"kernel", c.kernel}, {"buffers", c.buffers}, {"bytes", c.bytes}, {"step", c.step}});
  for (const GpuConstant& c : p.constants) j["constants"].push_back({c.offset, c.bytes, c.from});
  writeFile(fs::path(dir) / "weights.bin", p.weights);
  writeFile(fs::path(dir) / "plan.json", j.dump(1) + "\n");
}

GpuPlan readPlan(const std::string& dir) {
  const fs::path file = fs::path(dir) / "plan.json";
  FRICTION_CHECK(fs::is_directory(dir), "cuda plan: '" + dir + "' is not a folder (`friction compile --backend cuda -o DIR`)");
  GpuPlan p;
  try {
    json j = json::parse(readExisting(file));
    FRICTION_CHECK(j.value("format", "") == "friction-cuda-plan 1",
                   "cuda plan: " + file.string() + " is not a friction cuda plan (format field)");
    j.at("chip").get_to(p.chip);
    j.at("arena_bytes").get_to(p.arenaBytes);
    j.at("intermediate_bytes").get_to(p.intermediateBytes);
    for (const json& v : j.at("inputs")) p.inputs.push_back(valueOf(v));
    for (const json& v : j.at("outputs")) p.outputs.push_back(valueOf(v));
    for (const json& k : j.at("kernels")) {
      GpuKernel kernel;
      kernel.ptx = readExisting(fs::path(dir) / k.at("ptx").get<std::string>());
      k.at("buffers").get_to(kernel.buffers);
      k.at("inputs").get_to(kernel.inputs);
      k.at("scratch").get_to(kernel.scratch);
      for (const json& l : k.at("launches")) kernel.launches.push_back(launchOf(l));
      p.kernels.push_back(std::move(kernel));
      p.kernelLabels.push_back(k.at("label").get<std::string>());
    }
    for (const json& c : j.at("calls")) {
      GpuCall call;
      c.at("kernel").get_to(call.kernel);
      c.at("buffers").get_to(call.buffers);
      c.at("bytes").get_to(call.bytes);
      c.at("step").get_to(call.step);
      p.calls.push_back(std::move(call));
    }
    for (const json& c : j.at("constants"))
      p.constants.push_back({c.at(0).get<int64_t>(), c.at(1).get<int64_t>(), c.at(2).get<int64_t>()});
  } catch (const json::exception& e) {
    throw Error("cuda plan: " + file.string() + ": " + e.what());
  }
  // Without weights.bin (left behind as too large to carry) the plan still loads; the executor refuses it
  // unless the caller fills the weights.
  if (fs::exists(fs::path(dir) / "weights.bin")) p.weights = readExisting(fs::path(dir) / "weights.bin");
  // Every offset the executor will touch lies inside what it allocates and reads.
  auto inArena = [&](int64_t offset, int64_t bytes) { return offset >= 0 && bytes >= 0 && offset + bytes <= p.arenaBytes; };
  for (const auto* values : {&p.inputs, &p.outputs})
    for (const GpuValue& v : *values) {
      int64_t numel = 1;
      for (int64_t d : v.shape) numel *= d;
      FRICTION_CHECK(inArena(v.offset, v.bytes) && v.bytes == numel * int64_t(dtypeSize(dtypeFromName(v.dtype))),
                     "cuda plan: " + file.string() + ": value '" + v.name + "' lies outside the arena or is not its shape's size");
    }
  for (const GpuConstant& c : p.constants)
    FRICTION_CHECK(inArena(c.offset, c.bytes) && c.from >= 0, "cuda plan: " + file.string() + ": a constant lies outside the arena");
  for (size_t i = 0; i < p.calls.size(); ++i) {
    const GpuCall& c = p.calls[i];
    FRICTION_CHECK(c.kernel >= 0 && size_t(c.kernel) < p.kernels.size(),
                   "cuda plan: " + file.string() + ": call " + std::to_string(i) + " names no kernel");
    const GpuKernel& k = p.kernels[size_t(c.kernel)];
    FRICTION_CHECK(c.buffers.size() == size_t(k.buffers) + k.scratch.size() && c.bytes.size() == c.buffers.size(),
                   "cuda plan: " + file.string() + ": call " + std::to_string(i) + " (" + c.step +
                       ") passes another number of buffers than its kernel takes");
    for (size_t b = 0; b < c.buffers.size(); ++b)
      FRICTION_CHECK(inArena(c.buffers[b], c.bytes[b]),
                     "cuda plan: " + file.string() + ": call " + std::to_string(i) + " (" + c.step + ") reaches outside the arena");
    for (const GpuLaunch& l : k.launches)
      for (const GpuLaunchArg& a : l.args)
        FRICTION_CHECK(a.buffer < int(c.buffers.size()), "cuda plan: " + file.string() + ": kernel " +
                                                             std::to_string(c.kernel) + " launches with a buffer it does not have");
  }
  return p;
}

}  // namespace friction::gpu
