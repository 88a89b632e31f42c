// Elementwise op family: schemas (inference, contents tracking) and reference
// kernels, checked against hand-computed values and std:: math.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/OpRegistry.h"
#include "runtime/interp/Interpreter.h"

using namespace friction;

namespace {

template <typename T>
Tensor make(DType d, std::vector<int64_t> shape, std::vector<T> v) {
  return Tensor::fromVector<T>(d, std::move(shape), v);
}
Tensor f32(std::vector<int64_t> s, std::vector<float> v) { return make(DType::F32, std::move(s), std::move(v)); }
Tensor f64(std::vector<int64_t> s, std::vector<double> v) { return make(DType::F64, std::move(s), std::move(v)); }
Tensor i32(std::vector<int64_t> s, std::vector<int32_t> v) { return make(DType::I32, std::move(s), std::move(v)); }
Tensor i64(std::vector<int64_t> s, std::vector<int64_t> v) { return make(DType::I64, std::move(s), std::move(v)); }
Tensor boolean(std::vector<int64_t> s, std::vector<uint8_t> v) { return make(DType::Bool, std::move(s), std::move(v)); }

// Builds a one-node graph whose inputs are graph inputs typed like `in`
// (undefined tensors become absent optional inputs), runs it, and returns the
// outputs; `types` receives the inferred output types.
std::vector<Tensor> runOp(const std::string& op, const std::vector<Tensor>& in,
                          std::map<std::string, Attribute> attrs = {}, size_t numOutputs = 1,
                          std::vector<TensorType>* types = nullptr) {
  Graph g;
  GraphBuilder b(g);
  std::vector<Value*> values;
  std::vector<Tensor> feeds;
  for (size_t i = 0; i < in.size(); ++i) {
    values.push_back(in[i].defined() ? b.input("in" + std::to_string(i), in[i].type()) : nullptr);
    if (in[i].defined()) feeds.push_back(in[i]);
  }
  for (Value* v : b.opN(op, values, numOutputs, std::move(attrs))) {
    b.output(v);
    if (types) types->push_back(v->type());
  }
  return interp::run(g, feeds);
}

Tensor run1(const std::string& op, const std::vector<Tensor>& in, std::map<std::string, Attribute> attrs = {}) {
  return runOp(op, in, std::move(attrs))[0];
}

void expectValues(const Tensor& t, DType dtype, std::vector<int64_t> shape, const std::vector<double>& want,
                  double tol = 0) {
  EXPECT_EQ(dtypeName(t.dtype()), dtypeName(dtype));
  EXPECT_EQ(t.shape(), shape);
  std::vector<double> got = t.toDoubleVector();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << "element " << i;
    }
  }
}

// The message of the Error thrown by building `op` over inputs of `types`.
std::string inferError(const std::string& op, const std::vector<TensorType>& types,
                       std::map<std::string, Attribute> attrs = {}) {
  Graph g;
  GraphBuilder b(g);
  std::vector<Value*> values;
  for (size_t i = 0; i < types.size(); ++i) values.push_back(b.input("in" + std::to_string(i), types[i]));
  try {
    b.op(op, values, std::move(attrs));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST(Elementwise, AddBroadcastsAndInfersSymbolicShapes) {
  std::vector<TensorType> types;
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6}), y = f32({3}, {10, 20, 30});
  Tensor out = runOp("Add", {x, y}, {}, 1, &types)[0];
  expectValues(out, DType::F32, {2, 3}, {11, 22, 33, 14, 25, 36});
  EXPECT_EQ(types[0].str(), "f32[2,3]");

  // {N,3} + {3} keeps N; {N,1} * {1,4} gives {N,4}; the interpreter binds N.
  Graph g;
  GraphBuilder b(g);
  Value* a = b.input("a", {DType::F32, Shape{Dim::sym("N"), 3}});
  Value* c = b.input("c", {DType::F32, Shape{3}});
  Value* sum = b.op("Add", {a, c});
  EXPECT_EQ(sum->shape(), (Shape{Dim::sym("N"), 3}));
  Value* col = b.input("col", {DType::F32, Shape{Dim::sym("N"), 1}});
  Value* row = b.input("row", {DType::F32, Shape{1, 4}});
  Value* outer = b.op("Mul", {col, row});
  EXPECT_EQ(outer->shape(), (Shape{Dim::sym("N"), 4}));
  Value* unknown = b.op("Sub", {a, b.input("u", {DType::F32, Shape::unknownRank()})});
  EXPECT_FALSE(unknown->shape().hasRank());
  b.output(sum);
  b.output(outer);
  auto r = interp::run(g, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {1, 1, 1}), f32({2, 1}, {2, 3}),
                           f32({1, 4}, {1, 2, 3, 4}), f32({1}, {0})});
  expectValues(r[0], DType::F32, {2, 3}, {2, 3, 4, 5, 6, 7});
  expectValues(r[1], DType::F32, {2, 4}, {2, 4, 6, 8, 3, 6, 9, 12});
}

TEST(Elementwise, InferenceRejectsMismatches) {
  EXPECT_NE(inferError("Add", {{DType::F32, Shape{2}}, {DType::I64, Shape{2}}}).find("input dtypes f32 and i64 differ"),
            std::string::npos);
  EXPECT_NE(inferError("Mul", {{DType::F32, Shape{2, 3}}, {DType::F32, Shape{4}}}).find("cannot broadcast [2,3] with [4]"),
            std::string::npos);
  EXPECT_NE(inferError("And", {{DType::F32, Shape{2}}, {DType::F32, Shape{2}}}).find("dtype f32"), std::string::npos);
  EXPECT_NE(inferError("Sqrt", {{DType::I32, Shape{2}}}).find("dtype i32"), std::string::npos);
  EXPECT_NE(inferError("BitShift", {{DType::F32, Shape{2}}, {DType::F32, Shape{2}}}, {{"direction", std::string("LEFT")}})
                .find("dtype f32"),
            std::string::npos);
  EXPECT_NE(inferError("Cast", {{DType::F32, Shape{2}}}, {{"to", int64_t(8)}}).find("string"), std::string::npos);
  EXPECT_NE(inferError("Relu", {{DType::F32, Shape{2}}}, {{"alpha", 1.0f}}).find("unknown attribute 'alpha'"),
            std::string::npos);
  EXPECT_NE(inferError("PRelu", {{DType::F32, Shape{1, 3}}, {DType::F32, Shape{2, 3}}}).find("does not broadcast to X"),
            std::string::npos);
  // Valid neighbours of the failures above still compute.
  expectValues(run1("Mod", {f32({2}, {5.5f, -5.5f}), f32({2}, {2, 2})}, {{"fmod", int64_t(1)}}), DType::F32, {2},
               {1.5, -1.5});
  // Opset 28: float Mod with fmod=0 is numpy's mod (the divisor's sign), BitShift takes signed integers.
  expectValues(run1("Mod", {f32({2}, {5.5f, -5.5f}), f32({2}, {-2, 2})}), DType::F32, {2}, {-0.5, 0.5});
  expectValues(run1("BitShift", {i32({4}, {-8, 1, -8, 5}), i32({4}, {1, 31, 40, -1})}, {{"direction", std::string("RIGHT")}}),
               DType::I32, {4}, {-4, 0, -1, 0});
  expectValues(run1("BitShift", {i32({2}, {1, 3}), i32({2}, {31, 40})}, {{"direction", std::string("LEFT")}}), DType::I32,
               {2}, {-2147483648.0, 0});
}

TEST(Elementwise, IntegerArithmetic) {
  Tensor a = i32({4}, {7, -7, 7, -7}), b = i32({4}, {2, 2, -2, -2});
  expectValues(run1("Div", {a, b}), DType::I32, {4}, {3, -3, -3, 3});  // truncates toward zero
  expectValues(run1("Sub", {a, b}), DType::I32, {4}, {5, -9, 9, -5});
  expectValues(run1("Mul", {a, i32({}, {3})}), DType::I32, {4}, {21, -21, 21, -21});
  Tensor lowest = i32({1}, {std::numeric_limits<int32_t>::min()});
  expectValues(run1("Div", {lowest, i32({1}, {-1})}), DType::I32, {1}, {double(std::numeric_limits<int32_t>::min())});
  EXPECT_THROW(run1("Div", {a, i32({4}, {1, 0, 1, 1})}), Error);
  Tensor u = make<uint8_t>(DType::U8, {2}, {250, 3});
  expectValues(run1("Add", {u, make<uint8_t>(DType::U8, {2}, {10, 4})}), DType::U8, {2}, {4, 7});  // wraps
}

TEST(Elementwise, ModSignConventions) {
  Tensor a = i64({6}, {-4, 7, 5, 4, -7, 8}), b = i64({6}, {2, -3, 8, -2, 3, 5});
  // fmod=0: the result takes the divisor's sign (Python %).
  expectValues(run1("Mod", {a, b}), DType::I64, {6}, {0, -2, 5, 0, 2, 3});
  // fmod=1: C semantics, the dividend's sign.
  expectValues(run1("Mod", {a, b}, {{"fmod", int64_t(1)}}), DType::I64, {6}, {0, 1, 5, 0, -1, 3});
  expectValues(run1("Mod", {f64({3}, {-4.5, 7.25, 5}), f64({1}, {2})}, {{"fmod", int64_t(1)}}), DType::F64, {3},
               {std::fmod(-4.5, 2), std::fmod(7.25, 2), 1});
}

TEST(Elementwise, PowMixedTypes) {
  std::vector<TensorType> types;
  Tensor out = runOp("Pow", {f32({3}, {2, 3, 4}), i64({3}, {3, 2, -1})}, {}, 1, &types)[0];
  EXPECT_EQ(types[0].dtype, DType::F32);
  expectValues(out, DType::F32, {3}, {8, 9, 0.25});
  expectValues(run1("Pow", {i64({3}, {3, -2, 10}), i64({3}, {2, 3, 15})}), DType::I64, {3}, {9, -8, 1e15});
  expectValues(run1("Pow", {i32({3}, {1, 2, 3}), f32({3}, {4, 5, 0.5f})}), DType::I32, {3}, {1, 32, 1});
  expectValues(run1("Pow", {f32({2, 2}, {1, 2, 3, 4}), f32({}, {0.5f})}), DType::F32, {2, 2},
               {1, std::sqrt(2.0), std::sqrt(3.0), 2}, 1e-6);
}

TEST(Elementwise, BitShiftAndLogic) {
  Tensor x = make<uint8_t>(DType::U8, {4}, {1, 2, 255, 16});
  Tensor s = make<uint8_t>(DType::U8, {4}, {1, 3, 1, 9});
  expectValues(run1("BitShift", {x, s}, {{"direction", std::string("LEFT")}}), DType::U8, {4}, {2, 16, 254, 0});
  expectValues(run1("BitShift", {x, s}, {{"direction", std::string("RIGHT")}}), DType::U8, {4}, {0, 0, 127, 0});
  Tensor p = boolean({2, 2}, {0, 0, 1, 1}), q = boolean({2}, {0, 1});
  expectValues(run1("And", {p, q}), DType::Bool, {2, 2}, {0, 0, 0, 1});
  expectValues(run1("Or", {p, q}), DType::Bool, {2, 2}, {0, 1, 1, 1});
  expectValues(run1("Xor", {p, q}), DType::Bool, {2, 2}, {0, 1, 1, 0});
  expectValues(run1("Not", {q}), DType::Bool, {2}, {1, 0});
}

TEST(Elementwise, ComparisonsGiveBool) {
  Tensor a = i64({2, 3}, {1, 2, 3, 4, 5, 6}), b = i64({3}, {2, 2, 7});
  expectValues(run1("Equal", {a, b}), DType::Bool, {2, 3}, {0, 1, 0, 0, 0, 0});
  expectValues(run1("Less", {a, b}), DType::Bool, {2, 3}, {1, 0, 1, 0, 0, 1});
  expectValues(run1("Greater", {a, b}), DType::Bool, {2, 3}, {0, 0, 0, 1, 1, 0});
  expectValues(run1("LessOrEqual", {a, b}), DType::Bool, {2, 3}, {1, 1, 1, 0, 0, 1});
  expectValues(run1("GreaterOrEqual", {a, b}), DType::Bool, {2, 3}, {0, 1, 0, 1, 1, 0});
  expectValues(run1("Equal", {boolean({2}, {0, 1}), boolean({2}, {1, 1})}), DType::Bool, {2}, {0, 1});
  expectValues(run1("Less", {f32({2}, {float(kNaN), 1}), f32({2}, {1, 2})}), DType::Bool, {2}, {0, 1});
}

TEST(Elementwise, VariadicOps) {
  Tensor a = f32({2, 2}, {1, 5, 3, float(kNaN)}), b = f32({2}, {2, 4}), c = f32({1}, {3});
  expectValues(run1("Max", {a, b, c}), DType::F32, {2, 2}, {3, 5, 3, kNaN});
  expectValues(run1("Min", {a, b, c}), DType::F32, {2, 2}, {1, 3, 2, kNaN});
  expectValues(run1("Sum", {a, b, c}), DType::F32, {2, 2}, {6, 12, 8, kNaN});
  expectValues(run1("Mean", {a, b, c}), DType::F32, {2, 2}, {2, 4, 8.0 / 3, kNaN}, 1e-6);
  expectValues(run1("Mean", {b}), DType::F32, {2}, {2, 4});
  expectValues(run1("Max", {i32({3}, {-1, 7, 2}), i32({3}, {0, 3, 9})}), DType::I32, {3}, {0, 7, 9});
}

TEST(Elementwise, UnaryMathMatchesStd) {
  struct Case {
    const char* op;
    std::function<double(double)> ref;
    std::vector<double> x;
  };
  const std::vector<double> any = {-2.5, -0.75, 0, 0.3, 1.5, 4};
  const std::vector<double> unit = {-0.9, -0.3, 0, 0.4, 0.99};
  const std::vector<double> positive = {0.1, 0.5, 1, 2.5, 100};
  const std::vector<Case> cases = {
      {"Sqrt", [](double v) { return std::sqrt(v); }, positive},
      {"Reciprocal", [](double v) { return 1 / v; }, positive},
      {"Exp", [](double v) { return std::exp(v); }, any},
      {"Log", [](double v) { return std::log(v); }, positive},
      {"Neg", [](double v) { return -v; }, any},
      {"Abs", [](double v) { return std::abs(v); }, any},
      {"Erf", [](double v) { return std::erf(v); }, any},
      {"Tanh", [](double v) { return std::tanh(v); }, any},
      {"Sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }, {-100, -2, 0, 3, 100}},
      {"Relu", [](double v) { return std::max(v, 0.0); }, any},
      {"HardSwish", [](double v) { return v * std::clamp(v / 6 + 0.5, 0.0, 1.0); }, {-4, -1, 0, 1, 4}},
      {"Softplus", [](double v) { return std::log(std::exp(v) + 1); }, any},
      {"Softsign", [](double v) { return v / (1 + std::abs(v)); }, any},
      {"Floor", [](double v) { return std::floor(v); }, any},
      {"Ceil", [](double v) { return std::ceil(v); }, any},
      {"Sign", [](double v) { return double((v > 0) - (v < 0)); }, any},
      {"Sin", [](double v) { return std::sin(v); }, any},
      {"Cos", [](double v) { return std::cos(v); }, any},
      {"Tan", [](double v) { return std::tan(v); }, any},
      {"Asin", [](double v) { return std::asin(v); }, unit},
      {"Acos", [](double v) { return std::acos(v); }, unit},
      {"Atan", [](double v) { return std::atan(v); }, any},
      {"Sinh", [](double v) { return std::sinh(v); }, any},
      {"Cosh", [](double v) { return std::cosh(v); }, any},
      {"Asinh", [](double v) { return std::asinh(v); }, any},
      {"Acosh", [](double v) { return std::acosh(v); }, {1, 1.5, 3, 10}},
      {"Atanh", [](double v) { return std::atanh(v); }, unit},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    std::vector<double> want;
    for (double v : c.x) want.push_back(c.ref(v));
    int64_t n = int64_t(c.x.size());
    expectValues(run1(c.op, {f64({n}, c.x)}), DType::F64, {n}, want, 1e-12);
    std::vector<float> xf(c.x.begin(), c.x.end());
    expectValues(run1(c.op, {f32({n}, xf)}), DType::F32, {n}, want, 1e-5);
  }
}

TEST(Elementwise, ActivationsWithAttributes) {
  Tensor x = f64({5}, {-2, -0.5, 0, 0.5, 3});
  expectValues(run1("LeakyRelu", {x}), DType::F64, {5}, {-0.02, -0.005, 0, 0.5, 3}, 1e-7);
  expectValues(run1("LeakyRelu", {x}, {{"alpha", 0.5f}}), DType::F64, {5}, {-1, -0.25, 0, 0.5, 3});
  expectValues(run1("HardSigmoid", {x}), DType::F64, {5}, {0.1, 0.4, 0.5, 0.6, 1}, 1e-7);
  expectValues(run1("Elu", {x}, {{"alpha", 2.0f}}), DType::F64, {5},
               {2 * std::expm1(-2), 2 * std::expm1(-0.5), 0, 0.5, 3}, 1e-12);
  const double alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875;
  expectValues(run1("Selu", {x}), DType::F64, {5},
               {gamma * alpha * std::expm1(-2), gamma * alpha * std::expm1(-0.5), 0, gamma * 0.5, gamma * 3}, 1e-7);
  expectValues(run1("Celu", {x}, {{"alpha", 2.0f}}), DType::F64, {5},
               {2 * std::expm1(-1), 2 * std::expm1(-0.25), 0, 0.5, 3}, 1e-12);
  expectValues(run1("ThresholdedRelu", {x}, {{"alpha", 0.5f}}), DType::F64, {5}, {0, 0, 0, 0, 3});
  expectValues(run1("Shrink", {x}, {{"lambd", 1.0f}, {"bias", 0.5f}}), DType::F64, {5}, {-1.5, 0, 0, 0, 2.5});
  expectValues(run1("Shrink", {i32({3}, {-3, 0, 3})}, {{"lambd", 1.0f}, {"bias", 1.0f}}), DType::I32, {3},
               {-2, 0, 2});
  // Large inputs must not overflow to NaN.
  expectValues(run1("Softplus", {f32({2}, {100, -100})}), DType::F32, {2}, {100, std::log1p(std::exp(-100.0))}, 1e-6);
}

TEST(Elementwise, RoundHalfToEvenAndIntegerUnary) {
  expectValues(run1("Round", {f32({7}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, -2.6f})}), DType::F32, {7},
               {0, 2, 2, -0.0, -2, 2, -3});
  Tensor v = i32({4}, {-5, 0, 3, -1});
  expectValues(run1("Abs", {v}), DType::I32, {4}, {5, 0, 3, 1});
  expectValues(run1("Neg", {v}), DType::I32, {4}, {5, 0, -3, 1});
  expectValues(run1("Sign", {v}), DType::I32, {4}, {-1, 0, 1, -1});
  expectValues(run1("Relu", {v}), DType::I32, {4}, {0, 0, 3, 0});
  expectValues(run1("Sign", {f32({3}, {-0.0f, 2, float(kNaN)})}), DType::F32, {3}, {0, 1, kNaN});
}

TEST(Elementwise, ClipBoundsAreOptional) {
  Tensor x = f32({5}, {-3, -1, 0, 2, float(kNaN)});
  expectValues(run1("Clip", {x, f32({}, {-2}), f32({}, {1})}), DType::F32, {5}, {-2, -1, 0, 1, kNaN});
  expectValues(run1("Clip", {x, Tensor(), f32({}, {0.5f})}), DType::F32, {5}, {-3, -1, 0, 0.5, kNaN});
  expectValues(run1("Clip", {x}), DType::F32, {5}, {-3, -1, 0, 2, kNaN});
  Tensor q = make<int8_t>(DType::I8, {4}, {-128, -5, 5, 127});
  expectValues(run1("Clip", {q, make<int8_t>(DType::I8, {}, {-10})}), DType::I8, {4}, {-10, -5, 5, 127});
  expectValues(run1("Clip", {q, Tensor(), make<int8_t>(DType::I8, {}, {0})}), DType::I8, {4}, {-128, -5, 0, 0});
  // min > max gives max everywhere, as numpy.clip.
  expectValues(run1("Clip", {i64({2}, {-1, 9}), i64({}, {5}), i64({}, {2})}), DType::I64, {2}, {2, 2});
}

TEST(Elementwise, PReluBroadcastsSlope) {
  std::vector<TensorType> types;
  Tensor out = runOp("PRelu", {f32({2, 3}, {-1, -2, 3, 4, -5, -6}), f32({3}, {0.1f, 0.2f, 0.3f})}, {}, 1, &types)[0];
  EXPECT_EQ(types[0].str(), "f32[2,3]");
  expectValues(out, DType::F32, {2, 3}, {-0.1, -0.4, 3, 4, -1, -1.8}, 1e-6);
}

TEST(Elementwise, IsNaNIsInf) {
  Tensor x = f32({5}, {1, float(kNaN), float(kInf), float(-kInf), 0});
  expectValues(run1("IsNaN", {x}), DType::Bool, {5}, {0, 1, 0, 0, 0});
  expectValues(run1("IsInf", {x}), DType::Bool, {5}, {0, 0, 1, 1, 0});
  expectValues(run1("IsInf", {x}, {{"detect_positive", int64_t(0)}}), DType::Bool, {5}, {0, 0, 0, 1, 0});
  expectValues(run1("IsInf", {x}, {{"detect_negative", int64_t(0)}}), DType::Bool, {5}, {0, 0, 1, 0, 0});
}

TEST(Elementwise, WhereBroadcastsAllThree) {
  Tensor c = boolean({2, 1}, {1, 0}), x = i64({3}, {1, 2, 3}), y = i64({}, {-1});
  expectValues(run1("Where", {c, x, y}), DType::I64, {2, 3}, {1, 2, 3, -1, -1, -1});
  Tensor h = f32({2}, {0.5f, 2}).castTo(DType::F16);
  expectValues(run1("Where", {boolean({2}, {0, 1}), h, f32({2}, {7, 8}).castTo(DType::F16)}), DType::F16, {2}, {7, 2});
}

TEST(Elementwise, HalfPrecisionComputesInFloat) {
  Tensor a = f32({3}, {1.5f, -2, 1000}).castTo(DType::F16), b = f32({3}, {0.25f, 4, 24}).castTo(DType::F16);
  expectValues(run1("Add", {a, b}), DType::F16, {3}, {1.75, 2, 1024});
  expectValues(run1("Less", {a, b}), DType::Bool, {3}, {0, 1, 0});
  Tensor bf = f32({2}, {4, 9}).castTo(DType::BF16);
  expectValues(run1("Sqrt", {bf}), DType::BF16, {2}, {2, 3});
  // Pow keeps the base's dtype even when only the exponent is half.
  expectValues(run1("Pow", {f32({2}, {2, 3}), f32({2}, {2, 3}).castTo(DType::F16)}), DType::F32, {2}, {4, 27});
}

TEST(Elementwise, IdentityAndDropout) {
  Tensor x = f32({2, 2}, {1, -2, 3, -4});
  expectValues(run1("Identity", {x}), DType::F32, {2, 2}, {1, -2, 3, -4});
  std::vector<TensorType> types;
  auto outs = runOp("Dropout", {x, f32({}, {0.3f})}, {{"seed", int64_t(3)}}, 2, &types);
  EXPECT_EQ(types[1].str(), "bool[2,2]");
  expectValues(outs[0], DType::F32, {2, 2}, {1, -2, 3, -4});
  expectValues(outs[1], DType::Bool, {2, 2}, {1, 1, 1, 1});
  // A runtime training_mode=true with nonzero ratio is rejected rather than ignored.
  EXPECT_THROW(runOp("Dropout", {x, f32({}, {0.3f}), boolean({}, {1})}), Error);
}

TEST(Elementwise, CastConversions) {
  auto cast = [](const Tensor& t, int64_t to) { return run1("Cast", {t}, {{"to", to}}); };
  // Float to int truncates toward zero.
  expectValues(cast(f32({5}, {1.7f, -1.7f, 2.5f, -0.5f, 100.9f}), 6), DType::I32, {5}, {1, -1, 2, 0, 100});
  expectValues(cast(f64({2}, {-3.99, 3.99}), 7), DType::I64, {2}, {-3, 3});
  // f32 -> f16 rounds to nearest even, overflows to inf, and rounds subnormals.
  const float ulpHalf = 1.0f / 2048;  // half of f16's ulp at 1
  Tensor h = cast(f32({7}, {1 + ulpHalf, 1 + 3 * ulpHalf, 65519.0f, 65520.0f, std::ldexp(1.0f, -25),
                            3 * std::ldexp(1.0f, -25), -2.0f / 3}),
                  10);
  ASSERT_EQ(h.dtype(), DType::F16);
  const uint16_t* bits = h.data<uint16_t>();
  EXPECT_EQ(bits[0], 0x3c00);  // tie -> even (1.0)
  EXPECT_EQ(bits[1], 0x3c02);  // tie -> even (1 + 2^-9)
  EXPECT_EQ(bits[2], 0x7bff);  // 65504
  EXPECT_EQ(bits[3], 0x7c00);  // inf
  EXPECT_EQ(bits[4], 0x0000);  // 2^-25 ties to 0
  EXPECT_EQ(bits[5], 0x0002);  // 3 * 2^-25 ties to 2^-23
  EXPECT_EQ(bits[6], 0xb955);  // -0.66650390625, the nearest half to -2/3
  expectValues(cast(boolean({2}, {1, 0}), 1), DType::F32, {2}, {1, 0});
  expectValues(cast(f32({3}, {0.5f, 0, -2}), 9), DType::Bool, {3}, {1, 0, 1});
  expectValues(cast(i64({2}, {300, -1}), 2), DType::U8, {2}, {44, 255});
  expectValues(cast(f32({1}, {1.0f / 3}), 16), DType::BF16, {1}, {0.333984375});
  expectValues(run1("CastLike", {i32({2}, {7, -7}), f64({1}, {0})}), DType::F64, {2}, {7, -7});
}

TEST(Elementwise, ShapeArithmeticTracksContents) {
  // `s` stands for Shape(x) of an input x: {N, 3}.
  Graph g;
  GraphBuilder b(g);
  Value* s = b.input("s", {DType::I64, Shape{2}});
  s->setKnownContents(std::vector<Dim>{Dim::sym("N"), 3});
  auto contents = [](Value* v) { return v->knownContents().value_or(std::vector<Dim>{Dim::sym("none")}); };
  Value* one = b.constant(Tensor::vectorI64({1}));
  Value* two = b.constant(Tensor::scalarI64(2));
  Value* mulOne = b.op("Mul", {s, one});
  EXPECT_EQ(contents(mulOne), (std::vector<Dim>{Dim::sym("N"), 3}));
  Value* mulTwo = b.op("Mul", {s, two});
  EXPECT_EQ(contents(mulTwo), (std::vector<Dim>{Dim::unknown(), 6}));
  Value* plus = b.op("Add", {s, b.constant(Tensor::vectorI64({0, 4}))});
  EXPECT_EQ(contents(plus), (std::vector<Dim>{Dim::sym("N"), 7}));
  Value* minus = b.op("Sub", {s, b.constant(Tensor::vectorI64({0, 3}))});
  EXPECT_EQ(contents(minus), (std::vector<Dim>{Dim::sym("N"), 0}));
  Value* div = b.op("Div", {s, b.constant(Tensor::vectorI64({1, 2}))});
  EXPECT_EQ(contents(div), (std::vector<Dim>{Dim::sym("N"), 1}));
  Value* cast = b.op("Cast", {div}, {{"to", int64_t(6)}});
  EXPECT_EQ(contents(cast), (std::vector<Dim>{Dim::sym("N"), 1}));
  Value* ident = b.op("Identity", {cast});
  EXPECT_EQ(contents(ident), (std::vector<Dim>{Dim::sym("N"), 1}));
  Value* toFloat = b.op("Cast", {s}, {{"to", int64_t(1)}});
  EXPECT_FALSE(toFloat->knownContents().has_value());
  // Static contents compute outright (a Reshape target like {-1, 3*4}).
  Value* folded = b.op("Mul", {b.constant(Tensor::vectorI64({-1, 3})), b.constant(Tensor::vectorI64({1, 4}))});
  EXPECT_EQ(contents(folded), (std::vector<Dim>{Dim(-1), Dim(12)}));
  for (Value* v : {mulOne, mulTwo, plus, minus, ident, folded}) b.output(v);
  auto r = interp::run(g, {i64({2}, {5, 3})});
  expectValues(r[0], DType::I64, {2}, {5, 3});
  expectValues(r[1], DType::I64, {2}, {10, 6});
  expectValues(r[2], DType::I64, {2}, {5, 7});
  expectValues(r[3], DType::I64, {2}, {5, 0});
  expectValues(r[4], DType::I32, {2}, {5, 1});
  expectValues(r[5], DType::I64, {2}, {-1, 12});
}

TEST(Elementwise, FlopsCountOutputElements) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, Shape{4, 5}});
  Value* e = b.op("Exp", {x});
  Value* a = b.op("Add", {e, b.input("y", {DType::F32, Shape{5}})});
  Value* c = b.op("Cast", {a}, {{"to", int64_t(11)}});
  EXPECT_EQ(nodeFlops(*e->producer()), 20);
  EXPECT_EQ(nodeFlops(*a->producer()), 20);
  EXPECT_EQ(nodeFlops(*c->producer()), 0);
  b.output(c);
  std::vector<float> ones(20, 0.0f);
  auto r = interp::run(g, {f32({4, 5}, ones), f32({5}, {1, 2, 3, 4, 5})});
  expectValues(r[0], DType::F64, {4, 5}, {2, 3, 4, 5, 6, 2, 3, 4, 5, 6, 2, 3, 4, 5, 6, 2, 3, 4, 5, 6});
}

TEST(Elementwise, LargeInputsTakeParallelPath) {
  // Above the OpenMP threshold, both the same-shape and the broadcast loops.
  const int64_t rows = 300, cols = 200;
  std::vector<float> x(static_cast<size_t>(rows * cols)), y(static_cast<size_t>(cols));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 97) - 48;
  for (size_t j = 0; j < y.size(); ++j) y[j] = float(j);
  Tensor sum = run1("Add", {f32({rows, cols}, x), f32({cols}, y)});
  Tensor relu = run1("Relu", {f32({rows, cols}, x)});
  for (int64_t i = 0; i < rows * cols; i += 1237) {
    EXPECT_EQ(sum.data<float>()[i], x[size_t(i)] + y[size_t(i % cols)]);
    EXPECT_EQ(relu.data<float>()[i], std::max(x[size_t(i)], 0.0f));
  }
}
