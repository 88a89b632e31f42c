// The Python-worker bridges whose vendor can save its compiled model (IREE's vmfb, TVM's library): a second
// compile of one graph by one backend, as a layout epoch asks for (docs/metrics.md), starts a new worker that
// loads the saved model instead of compiling again, and computes the same outputs. Skips a vendor the project
// venv lacks (scripts/setup.sh installs them).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "frontend/zoo/Zoo.h"
#include "ir/Error.h"
#include "ir/Specialize.h"
#include "runtime/Backend.h"
#include "runtime/Inputs.h"
#include "vendor_bridge/Bridges.h"

namespace friction {
namespace {

TEST(BridgeArtifacts, ASecondCompileLoadsTheSavedModel) {
  vendor::registerVendorBridges();
  auto g = zoo::build(zoo::parseSpec("mlp?depth=2&width=16"));
  bindInputDims(*g, batchBindings(*g, 2));
  const auto inputs = seededInputs(*g, 5);
  for (const char* spec : {"iree?threads=1", "tvm?threads=1"}) {
    SCOPED_TRACE(spec);
    auto backend = createBackend(spec);
    std::unique_ptr<CompiledModel> first;
    try {
      first = backend->compile(*g);
    } catch (const Error& e) {
      const std::string why = e.what();
      if (why.find("not installed") == std::string::npos && why.find("venv is missing") == std::string::npos) throw;
      std::printf("SKIP %s: %s\n", spec, e.what());
      continue;
    }
    auto second = backend->compile(*g);  // the first is still alive, as when an epoch begins
    EXPECT_EQ(first->description().find("reused"), std::string::npos) << first->description();
    EXPECT_NE(second->description().find("compiled model reused"), std::string::npos) << second->description();
    auto a = first->run(inputs), b = second->run(inputs);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].numel(), b[i].numel());
      for (int64_t k = 0; k < a[i].numel(); ++k) ASSERT_EQ(a[i].data<float>()[k], b[i].data<float>()[k]) << "output " << i;
    }
    // Another graph is another model: compiled, not reused.
    auto other = zoo::build(zoo::parseSpec("mlp?depth=1&width=16"));
    bindInputDims(*other, batchBindings(*other, 2));
    EXPECT_EQ(backend->compile(*other)->description().find("reused"), std::string::npos);
  }
}

}  // namespace
}  // namespace friction
