// libFuzzer target: arbitrary bytes through the ONNX importer. Any input must
// either import (and then verify and round-trip through the text IR) or fail
// with friction::Error; crashes, hangs and sanitizer reports are bugs.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "frontend/onnx/OnnxImport.h"
#include "ir/Error.h"
#include "ir/TextFormat.h"
#include "ir/Verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<friction::Graph> g;
  try {
    g = friction::onnxio::importOnnxBytes(data, size, "fuzz.onnx");
    friction::verify(*g);
  } catch (const friction::Error&) {
    return 0;
  }
  // An imported graph must print and parse back to the same text.
  std::string text = friction::printGraph(*g);
  if (friction::printGraph(*friction::parseGraph(text, "fuzz.fir")) != text) std::abort();
  return 0;
}
