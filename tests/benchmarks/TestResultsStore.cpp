// The cell key: sweeps and ablations resume a stored database by it, so its spelling must not change.
#include <gtest/gtest.h>

#include "benchmarks/ResultsStore.h"

namespace friction {
namespace {

TEST(CellRecord, KeyKeepsTheStoredFormat) {
  bench::CellRecord r;
  r.experiment = "sweep:study", r.modelHash = "9f86d081884c7d65", r.backend = "ort?threads=2&level=all";
  r.batch = 8, r.passes = "fold-constants,eliminate-dead-code";
  EXPECT_EQ(r.key(2), "sweep:study|9f86d081884c7d65|ort?threads=2&level=all|8|fold-constants,eliminate-dead-code|t2");
  r.experiment = "ablate:loo", r.passes = "";
  EXPECT_EQ(r.key(0), "ablate:loo|9f86d081884c7d65|ort?threads=2&level=all|8||t0");
}

}  // namespace
}  // namespace friction
