// The ONNX backend tests shipped by Debian's libonnx-testdata, run on the
// reference interpreter. Cases of unsupported ops/types are skipped and
// listed; of the rest, at least 95% must pass. Failures are printed with
// their reasons (docs/conformance.md explains the known ones).
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include "tools/conformance/Conformance.h"

using namespace friction;

namespace {

const char* kDataRoot = "/usr/share/libonnx-testdata/data";

void runSuite(const std::string& sub, double minPassRate) {
  std::string dir = std::string(kDataRoot) + "/" + sub;
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << dir << " not found: install libonnx-testdata (scripts/setup.sh)";
  ConformanceReport r = runConformance(dir, {});
  for (const auto& c : r.cases)
    if (c.status == ConformanceCase::Status::Failed) std::cout << "FAILED " << c.name << ": " << c.reason << "\n";
  std::cout << sub << ": " << r.passed << " passed, " << r.failed << " failed, " << r.skipped << " skipped\n";
  ASSERT_GT(r.passed, 0);
  double rate = double(r.passed) / double(r.passed + r.failed);
  EXPECT_GE(rate, minPassRate) << "pass rate " << rate << " over supported cases";
}

}  // namespace

TEST(Conformance, NodeTests) { runSuite("node", 0.95); }
TEST(Conformance, PytorchConvertedTests) { runSuite("pytorch-converted", 0.95); }
TEST(Conformance, PytorchOperatorTests) { runSuite("pytorch-operator", 0.95); }
TEST(Conformance, SimpleTests) { runSuite("simple", 0.95); }
