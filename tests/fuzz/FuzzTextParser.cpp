// libFuzzer target: arbitrary text through the .fir parser. It must parse
// (and then print/parse to a fixed point) or throw friction::Error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "ir/Error.h"
#include "ir/TextFormat.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto g = friction::parseGraph(text, "fuzz.fir");
    std::string printed = friction::printGraph(*g);
    if (friction::printGraph(*friction::parseGraph(printed, "fuzz.fir")) != printed) std::abort();
  } catch (const friction::Error&) {
  }
  return 0;
}
