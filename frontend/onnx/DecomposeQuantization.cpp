// The quantization ops written with supported ones, as the onnx reference computes them
// (onnx/reference/ops/op_quantize_linear.py and its neighbours): a quantized model runs as its float
// emulation, every rounding and saturation where the reference has it. QuantizeLinear: Div, Round, Add the zero
// point, Clip to the type's range, Cast. DequantizeLinear: Cast, Sub the zero point, Mul. The integer products of
// QLinearMatMul/QLinearConv/MatMulInteger/ConvInteger are MatMul/Conv over f32, exact while every partial sum
// stays within 2^24 in magnitude (int8 operands over a few hundred terms), then requantized as the reference
// does. Scales and zero points are per tensor, per axis, or per block (21).
#include <cmath>

#include "frontend/onnx/AdapterUtil.h"
#include "ir/Error.h"
#include "ir/OpRegistry.h"

namespace friction::onnxio {
namespace {

// The range of a quantized integer type; an Error naming `n` for the others (float8, int4: no friction dtype).
std::pair<double, double> quantRange(const Node& n, DType t) {
  switch (t) {
    case DType::I8: return {-128, 127};
    case DType::U8: return {0, 255};
    case DType::I16: return {-32768, 32767};
    case DType::U16: return {0, 65535};
    default: throw Error(n.describe() + ": quantized type " + std::string(dtypeName(t)) + " is not supported");
  }
}

struct QuantRewrite : NodeRewrite {
  Value* f32(Value* v) { return v ? cast(v, DType::F32) : nullptr; }
  Value* scalarF32(double v, const std::string& what) { return scalar(v, DType::F32, what); }

  // A scale or zero point against x as the reference reshapes it: one element as a scalar; a 1-D vector along
  // `axis`; with `block` > 0, each element repeated `block` times along `axis`, cut to x's extent.
  Value* along(Value* v, const Value* x, int64_t axis, int64_t block, const char* what) {
    const Shape& s = v->shape();
    FRICTION_CHECK(s.isStatic() && x->shape().hasRank(), n.describe() + ": " + what + " and the input need static shapes");
    const int64_t rank = int64_t(x->shape().rank()), count = *s.numel();
    if (count == 1) return op("Reshape", {v, ints({}, "scalar")});
    FRICTION_CHECK(axis >= -rank && axis < rank, n.describe() + ": axis " + std::to_string(axis) + " is out of range");
    if (axis < 0) axis += rank;
    if (block <= 0) {
      FRICTION_CHECK(s.rank() == 1, n.describe() + ": " + what + " must be a scalar or 1-D without block_size");
      std::vector<int64_t> dims(size_t(rank), 1);
      dims[size_t(axis)] = count;
      return op("Reshape", {v, ints(dims, "along")});
    }
    FRICTION_CHECK(int64_t(s.rank()) == rank, n.describe() + ": a blocked " + what + " has the input's rank");
    std::vector<int64_t> dims = s.staticDims(), reps(size_t(rank + 1), 1), merged = dims;
    reps[size_t(axis) + 1] = block;
    merged[size_t(axis)] *= block;
    Value* repeated = op("Reshape", {op("Expand", {op("Unsqueeze", {v, ints({axis + 1}, "axis")}), ints(reps, "block")}),
                                    ints(merged, "merged")});
    const int64_t extent = staticDim(x, axis, "the input");
    if (merged[size_t(axis)] == extent) return repeated;
    FRICTION_CHECK(merged[size_t(axis)] > extent && merged[size_t(axis)] - block < extent,
                   n.describe() + ": " + what + "'s blocks of " + std::to_string(block) + " do not cover the input's " +
                       std::to_string(extent));
    return op("Slice", {repeated, ints({0}, "start"), ints({extent}, "end"), ints({axis}, "axes")});
  }

  // `v` in f32, rounded to `precision` first when that is a half type (numpy's f16 arithmetic rounds each result).
  Value* roundedTo(Value* v, DType precision) {
    return f32(isHalf(precision) ? cast(v, precision) : v);
  }
};

void decomposeQuantize(Graph& g, Node& n) {
  QuantRewrite r{{g, n}};
  Value *x = n.input(0), *scale = n.input(1), *zero = n.input(2);
  FRICTION_CHECK(scale, n.describe() + ": needs y_scale");
  DType target = zero ? zero->dtype()
                      : n.hasAttr("output_dtype") ? dtypeFromOnnxCode(n.attrInt("output_dtype", 2), n.describe())
                                                  : DType::U8;
  const int64_t axis = n.attrInt("axis", 1), block = n.attrInt("block_size", 0);
  // x / scale in the precision the reference divides in: x's own type unless `precision` (25) names another.
  DType precision = n.hasAttr("precision") ? dtypeFromOnnxCode(n.attrInt("precision", 1), n.describe()) : x->dtype();
  Value* q = r.op("Div", {r.roundedTo(x, precision), r.roundedTo(r.along(r.f32(scale), x, axis, block, "y_scale"), precision)});
  Value* rounded = r.op("Round", {r.roundedTo(q, precision)});
  if (zero) rounded = r.op("Add", {rounded, r.along(r.f32(zero), x, axis, block, "y_zero_point")});
  auto [lo, hi] = quantRange(n, target);
  becomes(n, "Cast", {r.op("Clip", {rounded, r.scalarF32(lo, "lo"), r.scalarF32(hi, "hi")})},
          {{"to", int64_t(dtypeToOnnxCode(target))}});
}

void decomposeDequantize(Graph& g, Node& n) {
  QuantRewrite r{{g, n}};
  Value *x = n.input(0), *scale = n.input(1), *zero = n.input(2);
  FRICTION_CHECK(scale, n.describe() + ": needs x_scale");
  const int64_t axis = n.attrInt("axis", 1), block = n.attrInt("block_size", 0);
  DType out = n.hasAttr("output_dtype") ? dtypeFromOnnxCode(n.attrInt("output_dtype", 1), n.describe()) : scale->dtype();
  Value* centred = r.f32(x);
  if (zero) centred = r.op("Sub", {centred, r.along(r.f32(zero), x, axis, block, "x_zero_point")});
  Value* s = r.along(r.f32(scale), x, axis, block, "x_scale");
  if (out == DType::F32) return becomes(n, "Mul", {centred, s});
  becomes(n, "Cast", {r.op("Mul", {centred, s})}, {{"to", int64_t(dtypeToOnnxCode(out))}});
}

// y = saturate(round((x - min) / scale)) over [0, 255], scale = (max - min) / 255, min and max taken with 0.
void decomposeDynamicQuantize(Graph& g, Node& n) {
  QuantRewrite r{{g, n}};
  Value* x = n.input(0);
  FRICTION_CHECK(x->dtype() == DType::F32, n.describe() + ": x must be f32");
  Value* zeroF = r.scalarF32(0, "zero");
  Value* lo = r.op("Min", {r.op("ReduceMin", {x}, {{"keepdims", int64_t(0)}}), zeroF});
  Value* hi = r.op("Max", {r.op("ReduceMax", {x}, {{"keepdims", int64_t(0)}}), zeroF});
  Value* span = r.op("Where", {r.op("Equal", {hi, lo}), r.scalarF32(1, "one"), r.op("Sub", {hi, lo})});
  Value* scale = r.op("Div", {span, r.scalarF32(255, "levels")});
  Value* zeroPoint = r.op("Round", {r.op("Clip", {r.op("Sub", {zeroF, r.op("Div", {lo, scale})}),
                                                  r.scalarF32(0, "lo"), r.scalarF32(255, "hi")})});
  Value* y = r.op("Add", {r.op("Round", {r.op("Div", {x, scale})}), zeroPoint});
  FRICTION_CHECK(n.numOutputs() == 3, n.describe() + ": has three outputs");
  inferNode(*g.addNodeTakingLastOutput(n, "Cast", {zeroPoint}, {{"to", int64_t(dtypeToOnnxCode(DType::U8))}}));
  inferNode(*g.addNodeTakingLastOutput(n, "Identity", {scale}));
  becomes(n, "Cast", {r.op("Clip", {y, r.scalarF32(0, "lo"), r.scalarF32(255, "hi")})},
          {{"to", int64_t(dtypeToOnnxCode(DType::U8))}});
}

// x - zero point in f32, the zero point broadcast as numpy does (the reference's), or per output channel for a
// 1-D one against a convolution's weights.
Value* centred(QuantRewrite& r, Value* x, Value* zero, bool perOutputChannel = false) {
  if (!zero) return r.f32(x);
  Value* z = r.f32(zero);
  if (perOutputChannel && zero->shape().isStatic() && zero->shape().rank() == 1 && *zero->shape().numel() > 1)
    z = r.along(z, x, 0, 0, "w_zero_point");
  return r.op("Sub", {r.f32(x), z});
}

// round(acc * multiplier (+ zero point)), saturated to `type`; the reference's requantization.
void requantize(QuantRewrite& r, Node& n, Value* acc, Value* multiplier, Value* zero, DType type) {
  Value* v = r.op("Mul", {acc, multiplier});
  if (zero) v = r.op("Add", {v, r.f32(zero)});
  auto [lo, hi] = quantRange(n, type);
  becomes(n, "Cast", {r.op("Clip", {r.op("Round", {v}), r.scalarF32(lo, "lo"), r.scalarF32(hi, "hi")})},
          {{"to", int64_t(dtypeToOnnxCode(type))}});
}

void decomposeQLinearMatMul(Graph& g, Node& n) {
  QuantRewrite r{{g, n}};
  FRICTION_CHECK(n.numInputs() >= 7 && n.input(1) && n.input(4) && n.input(6), n.describe() + ": needs every scale");
  Value* acc = r.op("MatMul", {centred(r, n.input(0), n.input(2)), centred(r, n.input(3), n.input(5))});
  Value* multiplier = r.op("Div", {r.op("Mul", {r.f32(n.input(1)), r.f32(n.input(4))}), r.f32(n.input(6))});
  requantize(r, n, acc, multiplier, n.input(7), n.input(7) ? n.input(7)->dtype() : n.input(0)->dtype());
}

// The convolution attributes a quantized convolution carries over.
std::map<std::string, Attribute> convAttrs(const Node& n) {
  std::map<std::string, Attribute> attrs;
  for (const char* a : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
    if (const Attribute* v = n.findAttr(a)) attrs[a] = *v;
  return attrs;
}

void decomposeQLinearConv(Graph& g, Node& n) {
  QuantRewrite r{{g, n}};
  FRICTION_CHECK(n.numInputs() >= 8 && n.input(1) && n.input(4) && n.input(6), n.describe() + ": needs every scale");
  Value *x = n.input(0), *w = n.input(3), *wScale = n.input(4);
  std::vector<Value*> in = {centred(r, x, n.input(2)), centred(r, w, n.input(5), true)};
  if (n.input(8)) in.push_back(r.f32(n.input(8)));
  Value* acc = r.op("Conv", in, convAttrs(n));
  Value* ws = r.f32(wScale);
  if (wScale->shape().isStatic() && *wScale->shape().numel() > 1) ws = r.along(ws, acc, 1, 0, "w_scale");
  Value* multiplier = r.op("Div", {r.op("Mul", {r.f32(n.input(1)), ws}), r.f32(n.input(6))});
  requantize(r, n, acc, multiplier, n.input(7), n.input(7) ? n.input(7)->dtype() : x->dtype());
}

void decomposeMatMulInteger(Graph& g, Node& n) {
  QuantRewrite r{{g, n}};
  Value* product = r.op("MatMul", {centred(r, n.input(0), n.input(2)), centred(r, n.input(1), n.input(3))});
  becomes(n, "Cast", {product}, {{"to", int64_t(dtypeToOnnxCode(DType::I32))}});
}

void decomposeConvInteger(Graph& g, Node& n) {
  QuantRewrite r{{g, n}};
  Value* product = r.op("Conv", {centred(r, n.input(0), n.input(2)), centred(r, n.input(1), n.input(3), true)}, convAttrs(n));
  becomes(n, "Cast", {product}, {{"to", int64_t(dtypeToOnnxCode(DType::I32))}});
}

}  // namespace

void decomposeQuantization(Graph& g, Node& n) {
  const std::string& op = n.op();
  if (op == "QuantizeLinear") return decomposeQuantize(g, n);
  if (op == "DequantizeLinear") return decomposeDequantize(g, n);
  if (op == "DynamicQuantizeLinear") return decomposeDynamicQuantize(g, n);
  if (op == "QLinearMatMul") return decomposeQLinearMatMul(g, n);
  if (op == "QLinearConv") return decomposeQLinearConv(g, n);
  if (op == "MatMulInteger") return decomposeMatMulInteger(g, n);
  if (op == "ConvInteger") return decomposeConvInteger(g, n);
  throw Error(n.describe() + ": not a quantization op");
}

}  // namespace friction::onnxio
