// Runs ONNX backend-test cases (<case>/model.onnx with test_data_set_*/
// input_*.pb and output_*.pb) on a backend and compares outputs.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "passes/PassManager.h"
#include "runtime/Backend.h"

namespace friction {

struct ConformanceCase {
  enum class Status { Passed, Failed, Skipped };
  std::string name;
  Status status = Status::Skipped;
  std::string reason;  // why it failed or was skipped
  int64_t interpNodes = -1;  // the most nodes any of its runs left to the interpreter (CompiledModel::interpNodes)
};

struct ConformanceReport {
  std::vector<ConformanceCase> cases;
  int passed = 0, failed = 0, skipped = 0;
};

struct ConformanceOptions {
  std::string backend = "interp";
  std::string filter;  // ECMAScript regex matched against the case name; empty: all
  double rtol = 1e-3, atol = 1e-7;  // the ONNX backend-test defaults
  // When true, rtol is relative to the largest |expected| of each output
  // (max|got - want| <= atol + rtol * max|want|) instead of to each element:
  // the usual criterion for deep networks, whose small logits carry the
  // absolute rounding error of the large ones.
  bool scaleRelative = false;
  std::function<void(const ConformanceCase&)> onCase;  // progress callback
  // When set, each test data set runs on the model with its batch bound to
  // the inputs' (axis 0 of the first input) and optimized with this pipeline,
  // as `friction run` would: passes and compiled backends are checked against
  // the expected outputs, not just the plain graph.
  std::optional<PipelineOptions> pipeline;
  // When set, every case compiles on this backend (so a compiled backend's
  // kernel cache serves all cases and runs); else each case creates its own
  // from `backend`.
  std::shared_ptr<Backend> sharedBackend;
};

// Walks `dir` recursively for folders holding model.onnx.
ConformanceReport runConformance(const std::string& dir, const ConformanceOptions& options);

}  // namespace friction
