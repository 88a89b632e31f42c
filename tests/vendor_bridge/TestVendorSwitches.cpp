// The switch lists of the IREE and TVM bridges live twice: in their C++
// registration (so `friction ablate --backend iree` enumerates them without
// starting Python) and in each worker script, which maps them to the vendor's
// flags. This test keeps the two equal.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "ir/Error.h"
#include "vendor_bridge/Bridges.h"

namespace friction {
namespace {

// SWITCHES of vendor_bridge/python/<module>.py, in order (the workers import their vendor lazily, so any
// Python 3 reads them).
std::vector<std::string> workerSwitches(const std::string& module) {
  std::string venv = FRICTION_SOURCE_DIR "/.venv/bin/python";
  std::string python = std::filesystem::exists(venv) ? venv : "python3";
  std::string cmd = python + " -c \"import sys; sys.path.insert(0, '" FRICTION_SOURCE_DIR
                             "/vendor_bridge/python'); import " + module + " as w; print('\\n'.join(w.SWITCHES))\"";
  std::vector<std::string> out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char line[256];
  while (std::fgets(line, sizeof line, p)) {
    std::string s(line);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    if (!s.empty()) out.push_back(s);
  }
  EXPECT_EQ(pclose(p), 0) << cmd;
  return out;
}

TEST(VendorSwitches, CppRegistrationMatchesWorkerScripts) {
  vendor::registerVendorBridges();
  for (const auto& [backend, module] : std::vector<std::pair<std::string, std::string>>{{"iree", "iree_worker"},
                                                                                         {"tvm", "tvm_worker"}}) {
    SCOPED_TRACE(backend);
    std::vector<std::string> script = workerSwitches(module);
    EXPECT_FALSE(script.empty());
    EXPECT_EQ(vendor::vendorSwitches(backend), script);
  }
}

// The ablated spec is a stored executor name (and part of the cell key a resumed ablation looks up): the
// user's options keep their order, the switches come last.
TEST(VendorSwitches, SwitchedOffSpecKeepsTheUsersOptionOrder) {
  vendor::registerVendorBridges();
  EXPECT_EQ(vendor::withSwitchesOff("ort?threads=2&level=all", {"ConstantFolding", "LayerNormFusion"}),
            "ort?threads=2&level=all&disable=ConstantFolding,LayerNormFusion");
  EXPECT_EQ(vendor::withSwitchesOff("ort", {"ConstantFolding"}), "ort?disable=ConstantFolding");
  EXPECT_EQ(vendor::withSwitchesOff("ort?threads=2", {}), "ort?threads=2");
  EXPECT_THROW(vendor::withSwitchesOff("ort?disable=A", {"ConstantFolding"}), Error);
  EXPECT_EQ(vendor::withBooleanSwitchesOff("onednn?threads=2", {"postops"}), "onednn?threads=2&postops=off");
  EXPECT_THROW(vendor::withBooleanSwitchesOff("onednn?postops=on", {"postops"}), Error);
}

// `--threads N` reaches a bridge's own thread pool as its threads= option (OpenMP settings stay in friction's
// process); a spec's own threads= wins, and friction's backends are left to OpenMP.
TEST(VendorSwitches, ThreadsReachTheBridgesThatTakeThem) {
  vendor::registerVendorBridges();
  EXPECT_EQ(vendor::withThreads("ort", 2), "ort?threads=2");
  EXPECT_EQ(vendor::withThreads("ort?level=all", 2), "ort?level=all&threads=2");
  EXPECT_EQ(vendor::withThreads("ort?threads=4", 2), "ort?threads=4");
  for (const char* b : {"openvino", "iree", "tvm"}) EXPECT_EQ(vendor::withThreads(b, 3), std::string(b) + "?threads=3");
  EXPECT_EQ(vendor::withThreads("cpu", 2), "cpu");
  EXPECT_EQ(vendor::withThreads("ort", 0), "ort");
}

}  // namespace
}  // namespace friction
