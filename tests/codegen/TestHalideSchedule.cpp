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
// both iterations of the outer loop. Then the squares with the rows split
// twice, as Adams2019 splits: by 32 and 16 (rounding up the inner split adds
// nothing), by 12 and 8 on two threads (rounded up, the first block of 12
// rows would update rows 12-15 too, which the second block updates), by 12
// and 4 with the 3 blocks of 4 split by 2 and vectorized over 2 blocks
// (rounded up, 4 blocks of 4); and as a pipeline's output.
struct GuardedVectorUpdates {
  static constexpr int kRows = 17, kColumns = 32;
  HL::ImageParam in{HL::Float(32), 2, "in"};
  HL::Var c{"c"}, k{"k"}, r{"r"}, ro{"ro"}, ri{"ri"}, rio{"rio"}, rii{"rii"}, rioo{"rioo"}, rioi{"rioi"};
  HL::RDom column{0, kColumns, "column"};
  HL::Func x{"x"}, sum{"sum"};
  HL::Buffer<float> values{kColumns, kRows};
  GuardedVectorUpdates() {
    in.dim(0).set_bounds(0, kColumns).set_stride(1);
    in.dim(1).set_bounds(0, kRows).set_stride(kColumns);
    x(c, r) = in(HL::clamp(c, 0, kColumns - 1), HL::clamp(r, 0, kRows - 1));
    sum(k, r) = 0.f;
    sum(0, r) += x(column, r);
    sum.compute_root().split(r, ro, ri, 16).vectorize(ri).parallel(ro);
    sum.update().split(r, ro, ri, 16, HL::TailStrategy::GuardWithIf).vectorize(ri).parallel(ro);
    for (int j = 0; j < kRows; ++j)
      for (int i = 0; i < kColumns; ++i) values(i, j) = float((i * 7 + j * 3) % 11);
    in.set(values);
  }
  // The squared deviations, its pure definition vectorized by 16 at the root.
  HL::Func squares(const std::string& name) {
    HL::Func f(name);
    HL::Expr deviation = x(column, r) - sum(0, r) / kColumns;
    f(k, r) = 0.f;
    f(0, r) += deviation * deviation;
    f.compute_root().split(r, ro, ri, 16).vectorize(ri).parallel(ro);
    return f;
  }
  // An output of every column of `statistic`'s rows.
  HL::Func reading(const HL::Func& statistic) {
    HL::Func out(statistic.name() + "_out");
    out(c, r) = statistic(0, r);
    out.output_buffer().dim(0).set_bounds(0, kColumns).dim(1).set_bounds(0, kRows);
    return out;
  }
  // Row j's squared deviations, in double.
  float want(int j) const {
    double s = 0, q = 0;
    for (int i = 0; i < kColumns; ++i) s += values(i, j);
    for (int i = 0; i < kColumns; ++i) q += (values(i, j) - s / kColumns) * (values(i, j) - s / kColumns);
    return float(q);
  }
  // `out` realized (its parallel loops on Halide's thread pool), column 0 against want().
  void expectRows(HL::Func out, int width, const std::string& what) {
    SCOPED_TRACE(what);
    HL::Buffer<float> got = out.realize({width, kRows});
    for (int j = 0; j < kRows; ++j) EXPECT_NEAR(got(0, j), want(j), 1e-3 * want(j)) << "row " << j;
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
// the pipeline owns the Func's buffer and rounding adds rows past the end
// only, scalar otherwise and in an output's update. The pure definitions keep
// their schedule.
TEST(HalideSchedule, AnUpdatesVectorsOverAGuardedTailAreComputedWhole) {
  using HL::TailStrategy;
  GuardedVectorUpdates p;
  HL::Func once = p.squares("once"), blocks = p.squares("blocks"), overlapping = p.squares("overlapping"),
           outerOfInner = p.squares("outerOfInner");
  once.update().split(p.r, p.ro, p.ri, 16, TailStrategy::GuardWithIf).vectorize(p.ri).parallel(p.ro);
  blocks.update().split(p.r, p.ro, p.ri, 32, TailStrategy::GuardWithIf)
      .split(p.ri, p.rio, p.rii, 16, TailStrategy::GuardWithIf).vectorize(p.rii).parallel(p.ro);
  overlapping.update().split(p.r, p.ro, p.ri, 12, TailStrategy::GuardWithIf)
      .split(p.ri, p.rio, p.rii, 8, TailStrategy::GuardWithIf).vectorize(p.rii).parallel(p.ro);
  outerOfInner.update().split(p.r, p.ro, p.ri, 12, TailStrategy::GuardWithIf)
      .split(p.ri, p.rio, p.rii, 4, TailStrategy::GuardWithIf)
      .split(p.rio, p.rioo, p.rioi, 2, TailStrategy::GuardWithIf).vectorize(p.rioi).parallel(p.ro);
  HL::Func output = p.squares("output");  // the statistic as the pipeline's output: [1, rows]
  output.update().split(p.r, p.ro, p.ri, 16, TailStrategy::GuardWithIf).vectorize(p.ri);
  output.output_buffer().dim(0).set_bounds(0, 1).dim(1).set_bounds(0, GuardedVectorUpdates::kRows);
  std::vector<HL::Func> outs = {p.reading(once), p.reading(blocks), p.reading(overlapping), p.reading(outerOfInner)};
  for (const HL::Func& out : outs) repairAutoschedule({out});
  repairAutoschedule({output});
  for (const HL::Func& f : {p.sum, once}) {
    EXPECT_EQ(splitTail(f, 0, "ro"), TailStrategy::RoundUp) << f.name();
    EXPECT_EQ(loopType(f, 1, "ri"), ForType::Vectorized) << f.name();
    EXPECT_EQ(loopType(f, 0, "ri"), ForType::Vectorized) << f.name() << "'s pure definition";
  }
  EXPECT_EQ(splitTail(blocks, 0, "ro"), TailStrategy::RoundUp);
  EXPECT_EQ(splitTail(blocks, 0, "rio"), TailStrategy::RoundUp) << "16 divides the inner 32";
  EXPECT_EQ(loopType(blocks, 1, "rii"), ForType::Vectorized);
  EXPECT_EQ(splitTail(overlapping, 0, "rio"), TailStrategy::GuardWithIf) << "8 does not divide the inner 12";
  EXPECT_EQ(loopType(overlapping, 1, "rii"), ForType::Serial);
  EXPECT_EQ(splitTail(outerOfInner, 0, "rioo"), TailStrategy::GuardWithIf) << "2 does not divide the 3 blocks";
  EXPECT_EQ(loopType(outerOfInner, 1, "rioi"), ForType::Serial);
  EXPECT_EQ(splitTail(output, 0, "ro"), TailStrategy::GuardWithIf) << "an output's buffer cannot grow";
  EXPECT_EQ(loopType(output, 1, "ri"), ForType::Serial);
  EXPECT_EQ(loopType(output, 0, "ri"), ForType::Vectorized) << "its pure definition";
  for (const HL::Func& out : outs) p.expectRows(out, GuardedVectorUpdates::kColumns, out.name());
  p.expectRows(output, 1, "the statistic as the output");
}

}  // namespace
}  // namespace friction::codegen::halide
