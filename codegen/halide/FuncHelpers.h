// What the halide backend's kernel algorithms share (HalideKernels.cpp,
// StructuredFuncs.cpp): Funcs defined and read in friction's row-major index
// order (Halide's dim 0 is the innermost, so every access reverses it), and
// the build functions of the Structured ops, one per row of
// codegen/StructuredOps.def.
#pragma once
#include <algorithm>
#include <atomic>
#include <cctype>
#include <functional>
#include <string>
#include <vector>

#include "codegen/halide/HalideKernels.h"

namespace friction::codegen::halide {

using Ints = std::vector<int64_t>;
using Exprs = std::vector<HL::Expr>;
using Vars = std::vector<HL::Var>;

inline HL::Expr f32(double v) { return HL::Expr(float(v)); }
inline HL::Expr i32(int64_t v) { return HL::Expr(int(v)); }

// f(index), index in friction's (row-major) order.
inline HL::Expr at(const HL::Func& f, Exprs index) {
  std::reverse(index.begin(), index.end());
  return f(index);
}
inline HL::FuncRef ref(HL::Func& f, Exprs index) {
  std::reverse(index.begin(), index.end());
  return f(index);
}
inline Exprs exprs(const Vars& v) { return Exprs(v.begin(), v.end()); }
inline Vars vars(size_t rank) {
  Vars v;
  for (size_t i = 0; i < rank; ++i) v.emplace_back("d" + std::to_string(i));
  return v;
}
// A Halide name from a node's: letters, digits and '_' only ('.' separates
// Halide's own qualifiers), made unique in the process (a pipeline's Funcs
// must not share one).
inline std::string halideName(const std::string& name) {
  static std::atomic<uint64_t> next{0};
  std::string s = "f" + std::to_string(next++) + "_";
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}
// f(v) = e over `shape`.
inline ShapedFunc define(const std::string& name, const Ints& shape, const std::function<HL::Expr(const Exprs&)>& body) {
  HL::Func f(halideName(name));
  Vars v = vars(shape.size());
  Vars reversed(v.rbegin(), v.rend());
  f(reversed) = body(exprs(v));
  return {f, shape};
}
// A reduction's panel (ShapedFunc::panel): f(i) = body(i) with i in the panel's own order, the lanes' dim
// first, which is also Halide's: the dim first in `i` is stored innermost whoever schedules the panel (an
// autoscheduler sees that layout; a reversed definition left it the weights' OIHW, so a channels-last
// convolution's vector of output channels read its weights 2304 floats apart). Read with f(index), unreversed.
inline HL::Func definePanel(const std::string& name, size_t rank, const std::function<HL::Expr(const Exprs&)>& body) {
  HL::Func f(halideName(name));
  Vars v = vars(rank);
  f(v) = body(exprs(v));
  return f;
}
// Declares a buffer's shape and row-major strides as constants (the program
// passes every tensor dense, with the shape the kernel was built for): Halide
// then drops the guards of split loops and indexes with constant strides,
// 3.5x on a 1x1 convolution's inner loop. A call with another shape fails
// Halide's checks on entry, never reads past a buffer.
inline void denseStatic(HL::OutputImageParam buffer, const Ints& shape) {
  int stride = 1;
  for (size_t k = 0; k < shape.size(); ++k) {
    const int extent = int(shape[shape.size() - 1 - k]);
    buffer.dim(int(k)).set_bounds(0, extent).set_stride(stride);
    stride *= extent;
  }
}
// numpy broadcasting: a value of shape `s` read at the index `index` of a larger domain (right-aligned, size-1 dims at 0).
inline Exprs broadcastIndex(const Ints& s, const Ints& domain, const Exprs& index) {
  Exprs r;
  for (size_t i = 0, off = domain.size() - s.size(); i < s.size(); ++i)
    r.push_back(s[i] == domain[i + off] ? index[i + off] : i32(0));
  return r;
}
// The row-major flat index of `index` in `shape`, and back.
inline HL::Expr flatten(const Exprs& index, const Ints& shape) {
  HL::Expr flat = i32(0);
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * i32(shape[d]) + index[d];
  return flat;
}
inline Exprs unflatten(HL::Expr flat, const Ints& shape) {
  Exprs index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = d == 0 ? flat : flat % i32(shape[d]);
    if (d > 0) flat = flat / i32(shape[d]);
  }
  return index;
}
inline int64_t normalized(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }
inline HL::Expr clampIndex(HL::Expr i, int64_t extent) { return HL::clamp(i, 0, int(extent - 1)); }
// An [N, C, spatial...] index of the same element in [N, spatial..., C].
inline Exprs channelsLastIndex(const Exprs& nchw) {
  Exprs i = {nchw[0]};
  i.insert(i.end(), nchw.begin() + 2, nchw.end());
  i.push_back(nchw[1]);
  return i;
}
// A windowed op's hints when it is computed channels last: the channels in
// vector lanes, laid out innermost; the pixels of a row as the rows of its
// register tile (they share the weights); its image rows as its slices.
inline ShapedFunc channelsLast(ShapedFunc f) {
  f.laneDim = 1;
  f.rowDim = int(f.shape.size()) - 1;
  if (f.shape.size() >= 4) f.sliceDim = int(f.shape.size()) - 2;
  return f;
}
// `source` read with every index clamped into `shape` (what BoundaryConditions::repeat_edge computes), as a
// Func of a unique name: repeat_edge names every Func it makes "repeat_edge", and with two of them over two
// buffers in one kernel, Adams2019's greedy schedule of a strided conv computed wrong results (off by 100%;
// tests/codegen/TestHalideBackend.cpp); Funcs of unique names do not.
inline HL::Func clampedRead(const HL::Func& source, const Ints& shape, const std::string& name) {
  return define(name + "_clamped", shape, [&](const Exprs& i) {
    Exprs inside;
    // likely(): as repeat_edge marks it, so Halide's loop partitioning keeps the clamps out of the steady state.
    for (size_t d = 0; d < i.size(); ++d) inside.push_back(clampIndex(HL::likely(i[d]), shape[d]));
    return at(source, inside);
  }).func;
}
// An RDom over `extents` (at least one dim: a size-1 one when there is none).
inline HL::RDom rdom(const Ints& extents, const std::string& name) {
  std::vector<HL::Range> ranges;
  for (int64_t e : extents) ranges.emplace_back(0, int(e));
  if (ranges.empty()) ranges.emplace_back(0, 1);
  return HL::RDom(ranges, halideName(name));
}

// What the Structured build functions share: the node, the Funcs of its
// arguments (aligned with its inputs; undefined where an input is a
// constant), and where reductions they define go.
struct Structured {
  const Node& n;
  std::vector<HL::Func> args;
  std::vector<ShapedFunc>& producers;
  std::vector<HL::Buffer<>>& constants;  // the kernel's (KernelFuncs::constants): a table this op builds goes here
  // Input 0's channels-last source when input 0 is transposed from one in
  // this kernel (channelsLastSource); undefined otherwise. A windowed op
  // reads it in place.
  HL::Func channelsLastInput;

  Ints shapeOf(size_t input) const { return n.input(input)->shape().staticDims(); }
  Ints resultShape() const { return n.output(0)->shape().staticDims(); }
  HL::Expr read(size_t input, const Exprs& index) const { return at(args[input], index); }
  ShapedFunc result(const std::function<HL::Expr(const Exprs&)>& body) const {
    return define(n.name() + "_y", resultShape(), body);
  }
  // A reduction over `shape`: `init` everywhere, then for every point r of
  // an RDom over `extents`, acc[target(y)] = update(acc[target(y)], y, r), y
  // the pure index (`target` keeps each pure var in its place, so the update
  // stays parallel over them; it may set a dim of extent 1 to 0).
  ShapedFunc reduce(const std::string& name, const Ints& shape, HL::Expr init, const Ints& extents,
                    const std::function<Exprs(const Exprs&)>& target,
                    const std::function<HL::Expr(HL::Expr, const Exprs&, const HL::RDom&)>& update) {
    ShapedFunc acc = define(n.name() + "_" + name, shape, [&](const Exprs&) { return init; });
    HL::RDom r = rdom(extents, n.name() + "_r" + name);
    const Exprs y = exprs(vars(shape.size()));
    Exprs where = target(y);
    ref(acc.func, where) = update(at(acc.func, where), y, r);
    producers.push_back(acc);
    return acc;
  }
};

// The Structured ops' build functions (StructuredFuncs.cpp): the rows of
// codegen/StructuredOps.def, the mask ops of codegen/MaskOps.def, ScatterND, Resize.
#define FRICTION_STRUCTURED_OP(op, arguments, statistics, build) ShapedFunc build(Structured& s);
#include "codegen/StructuredOps.def"
#undef FRICTION_STRUCTURED_OP
ShapedFunc buildMask(Structured& s);
ShapedFunc buildScatterND(Structured& s);
ShapedFunc buildResize(Structured& s);

}  // namespace friction::codegen::halide
