// repairAutoschedule (codegen/halide/HalideSchedule.cpp) on a schedule written by
// hand the way an autoscheduler writes one: which unrolled loops it makes
// serial, and that the pipeline still computes the same values.
#include <Halide.h>
#include <gtest/gtest.h>

#include <string>

#include "codegen/halide/HalideSchedule.h"

namespace friction::codegen::halide {
namespace {

namespace HL = Halide;
using HL::Internal::ForType;

// The loop over `var` (a Var's name, or the last part of a split's) of
// `f`'s stage `stage` (0: its pure definition).
ForType loopType(const HL::Func& f, int stage, const std::string& var) {
  const HL::Internal::Function fn = f.function();
  const HL::Internal::Definition& def = stage == 0 ? fn.definition() : fn.update(stage - 1);
  for (const HL::Internal::Dim& d : def.schedule().dims())  // a split's loops are named "x.xo"
    if (d.var == var || HL::Internal::ends_with(d.var, "." + var)) return d.for_type;
  ADD_FAILURE() << "no loop " << var << " in stage " << stage << " of " << f.name();
  return ForType::Serial;
}

// A pipeline scheduled by hand the way an autoscheduler schedules: Funcs
// computed inside the output's row loop with loops unrolled over whole dims,
// split loops and a reduction; a guarded split at the root.
struct Scheduled {
  HL::Var x{"x"}, y{"y"}, xo{"xo"}, xi{"xi"}, yo{"yo"}, yi{"yi"};
  HL::RDom r{0, 3, "r"};
  HL::Func input{"input"}, guarded{"guarded"}, inner{"inner"}, sum{"sum"}, out{"out"};
  Scheduled() {
    input(x, y) = HL::cast<float>(x * 7 + y * 3);
    guarded(x, y) = input(x, y) * 0.5f;
    inner(x, y) = input(x, y) * 2.f + guarded(x + 1, y);
    sum(x, y) = 0.f;
    sum(x, y) += inner(x + r, y);
    out(x, y) = sum(x, y) + sum(x, y + 1);

    out.split(y, yo, yi, 2).unroll(yi);
    input.compute_root().split(y, yo, yi, 2).unroll(yo);
    guarded.compute_root().split(x, xo, xi, 3, HL::TailStrategy::GuardWithIf).unroll(xo);
    inner.compute_at(out, yo).split(x, xo, xi, 4).unroll(xi).unroll(xo).unroll(y);
    sum.compute_at(out, yo).unroll(y);
    sum.update().unroll(r).unroll(y);
    out.output_buffer().dim(0).set_bounds(0, 16).dim(1).set_bounds(0, 8);
  }
  // Realized over [16, 8] against the formula.
  void expectValues() {
    HL::Buffer<float> got = out.realize({16, 8});
    auto at = [](int i, int j) { return float(i * 7 + j * 3) * 2.f + float((i + 1) * 7 + j * 3) * 0.5f; };
    for (int j = 0; j < 8; ++j)
      for (int i = 0; i < 16; ++i) {
        float want = 0.f;
        for (int k = 0; k < 3; ++k) want += at(i + k, j) + at(i + k, j + 1);
        ASSERT_EQ(got(i, j), want) << "at (" << i << ", " << j << ")";
      }
  }
};

// A guarded split's outer loop runs serially, even at the root: Halide 14
// unrolls such a loop up to a bound it derives, and one came out an
// iteration short (TestHalideBackend's small ViT). Every other unroll is
// kept: split loops, whole dims inside the consumer's loop, a reduction's.
TEST(HalideSchedule, AGuardedTailsUnrolledLoopRunsSerially) {
  Scheduled p;
  repairAutoschedule({p.out});
  EXPECT_EQ(loopType(p.guarded, 0, "xo"), ForType::Serial) << "the outer loop of a guarded split";
  EXPECT_EQ(loopType(p.guarded, 0, "xi"), ForType::Serial) << "never unrolled";
  EXPECT_EQ(loopType(p.inner, 0, "y"), ForType::Unrolled) << "a whole dim inside the consumer's loop";
  EXPECT_EQ(loopType(p.inner, 0, "xo"), ForType::Unrolled) << "a split's outer loop";
  EXPECT_EQ(loopType(p.inner, 0, "xi"), ForType::Unrolled) << "a split's inner loop";
  EXPECT_EQ(loopType(p.sum, 1, "y"), ForType::Unrolled) << "an update's whole dim";
  EXPECT_EQ(loopType(p.sum, 1, p.r.x.name()), ForType::Unrolled) << "a reduction's loop";
  EXPECT_EQ(loopType(p.input, 0, "yo"), ForType::Unrolled) << "a split's outer loop at the root";
  EXPECT_EQ(loopType(p.out, 0, "yi"), ForType::Unrolled) << "the output's split";
  p.expectValues();
}

// A row statistic the way Mullapudi2016 schedules a LayerNormalization of 17
// rows: a row's sum, then its squared deviations from the mean, each an update
// over the row's 32 columns vectorized over 16 rows, split with a guarded tail.
// The input's bounds are constant (as the backend declares every buffer's):
// then Halide 14 lowered the squares' update to the first vector alone, in
// both iterations of the outer loop. An output's update of the same kind too.
struct GuardedVectorUpdates {
  static constexpr int kRows = 17, kColumns = 32, kLanes = 16;
  HL::ImageParam in{HL::Float(32), 2, "in"};
  HL::Var c{"c"}, k{"k"}, r{"r"}, ro{"ro"}, ri{"ri"};
  HL::RDom column{0, kColumns, "column"};
  HL::Func x{"x"}, sum{"sum"}, squares{"squares"}, out{"out"}, outSquares{"outSquares"};
  HL::Buffer<float> values{kColumns, kRows};
  GuardedVectorUpdates() {
    in.dim(0).set_bounds(0, kColumns).set_stride(1);
    in.dim(1).set_bounds(0, kRows).set_stride(kColumns);
    x(c, r) = in(HL::clamp(c, 0, kColumns - 1), HL::clamp(r, 0, kRows - 1));
    sum(k, r) = 0.f;
    sum(0, r) += x(column, r);
    HL::Expr deviation = x(column, r) - sum(0, r) / kColumns;
    squares(k, r) = 0.f;
    squares(0, r) += deviation * deviation;
    out(c, r) = squares(0, r);
    outSquares(k, r) = 0.f;  // the same statistic as a pipeline's output
    outSquares(0, r) += deviation * deviation;
    for (HL::Func f : {sum, squares}) {
      f.compute_root().split(r, ro, ri, kLanes).vectorize(ri).parallel(ro);
      f.update().split(r, ro, ri, kLanes, HL::TailStrategy::GuardWithIf).vectorize(ri).parallel(ro);
    }
    outSquares.split(r, ro, ri, kLanes).vectorize(ri);
    outSquares.update().split(r, ro, ri, kLanes, HL::TailStrategy::GuardWithIf).vectorize(ri);
    out.output_buffer().dim(0).set_bounds(0, kColumns).dim(1).set_bounds(0, kRows);
    outSquares.output_buffer().dim(0).set_bounds(0, 1).dim(1).set_bounds(0, kRows);
    for (int j = 0; j < kRows; ++j)
      for (int i = 0; i < kColumns; ++i) values(i, j) = float((i * 7 + j * 3) % 11);
    in.set(values);
  }
  // Row j's squared deviations, in double.
  float want(int j) const {
    double s = 0, q = 0;
    for (int i = 0; i < kColumns; ++i) s += values(i, j);
    for (int i = 0; i < kColumns; ++i) q += (values(i, j) - s / kColumns) * (values(i, j) - s / kColumns);
    return float(q);
  }
};

// The tail strategy of the split of `f`'s update `update` that makes the loop
// named `outer`.
HL::TailStrategy splitTail(const HL::Func& f, int update, const std::string& outer) {
  for (const HL::Internal::Split& s : f.function().update(update).schedule().splits())
    if (s.is_split() && HL::Internal::ends_with(s.outer, "." + outer)) return s.tail;
  ADD_FAILURE() << "no split into " << outer << " in update " << update << " of " << f.name();
  return HL::TailStrategy::Auto;
}

// An update's vectors over a guarded tail are computed whole: rounded up where
// the pipeline owns the Func's buffer, scalar in an output's. The pure
// definitions keep their schedule.
TEST(HalideSchedule, AnUpdatesVectorsOverAGuardedTailAreComputedWhole) {
  GuardedVectorUpdates p;
  repairAutoschedule({p.out});
  repairAutoschedule({p.outSquares});
  for (const HL::Func& f : {p.sum, p.squares}) {
    EXPECT_EQ(splitTail(f, 0, "ro"), HL::TailStrategy::RoundUp) << f.name();
    EXPECT_EQ(loopType(f, 1, "ri"), ForType::Vectorized) << f.name();
    EXPECT_EQ(loopType(f, 0, "ri"), ForType::Vectorized) << f.name() << "'s pure definition";
  }
  EXPECT_EQ(splitTail(p.outSquares, 0, "ro"), HL::TailStrategy::GuardWithIf) << "an output's buffer cannot grow";
  EXPECT_EQ(loopType(p.outSquares, 1, "ri"), ForType::Serial);
  EXPECT_EQ(loopType(p.outSquares, 0, "ri"), ForType::Vectorized) << "its pure definition";
  HL::Buffer<float> got = p.out.realize({GuardedVectorUpdates::kColumns, GuardedVectorUpdates::kRows});
  HL::Buffer<float> gotOutput = p.outSquares.realize({1, GuardedVectorUpdates::kRows});
  for (int j = 0; j < GuardedVectorUpdates::kRows; ++j) {
    EXPECT_NEAR(got(0, j), p.want(j), 1e-3 * p.want(j)) << "row " << j;
    EXPECT_NEAR(gotOutput(0, j), p.want(j), 1e-3 * p.want(j)) << "row " << j << " of the output's update";
  }
}

}  // namespace
}  // namespace friction::codegen::halide
