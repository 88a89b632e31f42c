// ONNX import/export: round trips, opset normalization, and clear errors on
// bad files (each names the file, node or field and never crashes).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "frontend/onnx/OnnxExport.h"
#include "frontend/onnx/OnnxImport.h"
#include "frontend/onnx/TensorProto.h"
#include "frontend/zoo/Zoo.h"
#include "ir/Error.h"
#include "ir/Specialize.h"
#include "ir/Verifier.h"
#include "runtime/interp/Interpreter.h"

using namespace friction;
namespace fs = std::filesystem;

namespace {

// A tiny model builder over the raw protobuf API, so tests can write models
// friction itself would never export (old opsets, broken graphs).
struct ModelMaker {
  onnx::ModelProto m;
  explicit ModelMaker(int64_t opset = 17) {
    m.set_ir_version(8);
    auto* o = m.add_opset_import();
    o->set_version(opset);
  }
  onnx::GraphProto& g() { return *m.mutable_graph(); }
  void input(const std::string& name, std::vector<int64_t> dims, int elem = onnx::TensorProto::FLOAT) {
    valueInfo(*g().add_input(), name, dims, elem);
  }
  void output(const std::string& name, std::vector<int64_t> dims = {}, int elem = onnx::TensorProto::FLOAT) {
    valueInfo(*g().add_output(), name, dims, elem, dims.empty());
  }
  onnx::NodeProto& node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                        const std::string& name = "") {
    auto* n = g().add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + std::to_string(g().node_size()) : name);
    for (auto& s : in) n->add_input(s);
    for (auto& s : out) n->add_output(s);
    return *n;
  }
  void initializer(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
    auto* t = g().add_initializer();
    *t = onnxio::tensorToProto(Tensor::fromVector<float>(DType::F32, dims, values), name);
  }
  std::string bytes() const { return m.SerializeAsString(); }
  std::unique_ptr<Graph> import() {
    std::string b = bytes();
    return onnxio::importOnnxBytes(b.data(), b.size(), "model.onnx");
  }
  static void valueInfo(onnx::ValueInfoProto& vi, const std::string& name, const std::vector<int64_t>& dims, int elem,
                        bool noShape = false) {
    vi.set_name(name);
    auto* tt = vi.mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    if (noShape) return;
    auto* s = tt->mutable_shape();
    for (int64_t d : dims) {
      if (d == -7) s->add_dim()->set_dim_param("N");
      else s->add_dim()->set_dim_value(d);
    }
  }
};

onnx::AttributeProto& addAttr(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
  return *a;
}

onnx::AttributeProto& addAttr(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
  return *a;
}

// Expects an Error whose message contains every one of `parts`.
template <typename F>
void expectError(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

fs::path tempFile(const std::string& name, const std::string& content) {
  fs::path p = fs::temp_directory_path() / ("friction_test_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p, std::ios::binary) << content;
  return p;
}

}  // namespace

TEST(OnnxImport, ExportThenImportRoundTripsAndRunsTheSame) {
  auto g = zoo::build(zoo::parseSpec("resnet?depth=2&width=8&resolution=16"));
  fs::path p = fs::temp_directory_path() / ("friction_rt_" + std::to_string(::getpid()) + ".onnx");
  onnxio::exportOnnxFile(*g, p.string());  // runs the ONNX checker
  auto back = onnxio::importOnnxFile(p.string());
  fs::remove(p);
  verify(*back);
  ASSERT_EQ(back->nodes().size(), g->nodes().size());
  EXPECT_EQ(back->inputs()[0]->shape().str(), "[N,3,16,16]");
  bindInputDims(*g, batchBindings(*g, 2));
  bindInputDims(*back, batchBindings(*back, 2));
  Tensor x(DType::F32, {2, 3, 16, 16});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float(i % 17) / 17.0f - 0.5f;
  Tensor a = interp::run(*g, {x})[0], b = interp::run(*back, {x})[0];
  EXPECT_TRUE(a.bitwiseEqual(b));
}

TEST(OnnxImport, ClipAttributesOfOpset6BecomeInputs) {
  ModelMaker mm(6);
  mm.input("x", {4});
  auto& n = mm.node("Clip", {"x"}, {"y"});
  addAttr(n, "min", -1.0f);
  addAttr(n, "max", 0.5f);
  mm.output("y", {4});
  auto g = mm.import();
  const Node& clip = *g->nodes()[0];
  ASSERT_EQ(clip.numInputs(), 3u);
  EXPECT_FALSE(clip.hasAttr("min"));
  Tensor out = interp::run(*g, {Tensor::fromVector<float>(DType::F32, {4}, {-3, -0.5f, 0.25f, 2})})[0];
  EXPECT_EQ(out.toDoubleVector(), (std::vector<double>{-1, -0.5, 0.25, 0.5}));
}

// An opset-6 RNN names output_sequence (gone in opset 7, whose Y is there when the node has it): imported
// without it, and computed.
TEST(OnnxImport, RecurrentLayersOfOpset6LoseOutputSequence) {
  ModelMaker mm(6);
  mm.input("x", {2, 1, 1});
  mm.initializer("w", {1, 1, 1}, {2.f});
  mm.initializer("r", {1, 1, 1}, {0.5f});
  auto& n = mm.node("RNN", {"x", "w", "r"}, {"y"});
  addAttr(n, "output_sequence", int64_t(1));
  addAttr(n, "hidden_size", int64_t(1));
  mm.output("y", {2, 1, 1, 1});
  auto g = mm.import();
  EXPECT_FALSE(g->nodes()[0]->hasAttr("output_sequence"));
  Tensor y = interp::run(*g, {Tensor::fromVector<float>(DType::F32, {2, 1, 1}, {0.25f, -1.f})})[0];
  const float h0 = std::tanh(0.5f), h1 = std::tanh(-2.f + 0.5f * h0);
  EXPECT_FLOAT_EQ(y.data<float>()[0], h0);
  EXPECT_FLOAT_EQ(y.data<float>()[1], h1);
}

TEST(OnnxImport, Softmax11OnMiddleAxisKeepsCoercedSemantics) {
  // opset-11 Softmax(axis=1) on [2,3,4] normalizes over 12 elements per batch row.
  ModelMaker mm(11);
  mm.input("x", {2, 3, 4});
  auto& n = mm.node("Softmax", {"x"}, {"y"});
  auto* a = n.add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  mm.output("y", {2, 3, 4});
  auto g = mm.import();
  Tensor x(DType::F32, {2, 3, 4});
  Tensor y = interp::run(*g, {x})[0];
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_NEAR(y.data<float>()[i], 1.0 / 12, 1e-6);
}

// ---- Opsets 18 and later (frontend/onnx/OpsetAdapters.cpp): one test per rewrite. ----

void addInts(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void addInt(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void addString(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}
void intsInitializer(ModelMaker& mm, const std::string& name, std::vector<int64_t> v) {
  *mm.g().add_initializer() = onnxio::tensorToProto(Tensor::vectorI64(v), name);
}
Tensor ramp(std::vector<int64_t> shape) {
  Tensor x(DType::F32, std::move(shape));
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float(i % 7) - 3.0f;
  return x;
}

TEST(OnnxImport, Reduce18ConstantAxesBecomeTheAttribute) {
  ModelMaker mm(18);
  mm.input("x", {2, 3});
  intsInitializer(mm, "axes", {1});
  mm.node("ReduceMean", {"x", "axes"}, {"y"});
  mm.output("y", {2, 1});
  auto g = mm.import();
  const Node& r = *g->nodes()[0];
  EXPECT_EQ(r.numInputs(), 1u);
  EXPECT_EQ(r.attrInts("axes"), (std::vector<int64_t>{1}));
  EXPECT_EQ(interp::run(*g, {ramp({2, 3})})[0].toDoubleVector(), (std::vector<double>{-2, 1}));
}

TEST(OnnxImport, Reduce18AxesComputedAtRunTimeStayAnInput) {
  ModelMaker mm(18);
  mm.input("x", {2, 3});
  mm.input("axes", {1}, onnx::TensorProto::INT64);
  mm.node("ReduceMax", {"x", "axes"}, {"y"});
  mm.output("y");
  auto g = mm.import();
  EXPECT_EQ(g->nodes()[0]->numInputs(), 2u);
  EXPECT_EQ(interp::run(*g, {ramp({2, 3}), Tensor::vectorI64({0})})[0].toDoubleVector(), (std::vector<double>{0, 1, 2}));
}

TEST(OnnxImport, Split18NumOutputsMakesTheLastPartSmaller) {
  ModelMaker mm(18);
  mm.input("x", {7});
  auto& n = mm.node("Split", {"x"}, {"a", "b", "c"});
  addInt(n, "num_outputs", 3);
  for (const char* o : {"a", "b", "c"}) mm.output(o);
  auto g = mm.import();
  std::vector<Tensor> parts = interp::run(*g, {ramp({7})});
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(parts[2].shape(), (std::vector<int64_t>{1}));
}

TEST(OnnxImport, Gelu20IsTheErfFormula) {
  ModelMaker mm(20);
  mm.input("x", {7});
  mm.node("Gelu", {"x"}, {"y"});
  mm.output("y", {7});
  auto g = mm.import();
  std::map<std::string, int> ops;
  for (const auto& n : g->nodes()) ops[n->op()]++;
  EXPECT_EQ(ops["Erf"], 1);
  EXPECT_EQ(ops.count("Gelu"), 0u);
  Tensor x = ramp({7}), y = interp::run(*g, {x})[0];
  for (int64_t i = 0; i < 7; ++i) {
    double v = x.data<float>()[i];
    EXPECT_NEAR(y.data<float>()[i], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), 1e-6);
  }
}

TEST(OnnxImport, GroupNormalization21NormalizesGroupsAndScalesChannels) {
  ModelMaker mm(21);
  mm.input("x", {1, 4, 2});
  mm.initializer("scale", {4}, {1, 2, 3, 4});
  mm.initializer("bias", {4}, {0, 0, 0, 10});
  auto& n = mm.node("GroupNormalization", {"x", "scale", "bias"}, {"y"});
  addInt(n, "num_groups", 2);
  addAttr(n, "epsilon", 0.0f);
  mm.output("y", {1, 4, 2});
  auto g = mm.import();
  // Group 1 holds channels 2 and 3: values 1, 2, 3, -3 (mean 0.75).
  Tensor y = interp::run(*g, {ramp({1, 4, 2})})[0];
  double mean = 0.75, sd = std::sqrt((0.0625 + 1.5625 + 5.0625 + 14.0625) / 4);
  EXPECT_NEAR(y.data<float>()[7], (-3 - mean) / sd * 4 + 10, 1e-5);
  EXPECT_NEAR(y.data<float>()[4], (1 - mean) / sd * 3, 1e-5);
}

TEST(OnnxImport, RmsNormalization23) {
  ModelMaker mm(23);
  mm.input("x", {2, 2});
  mm.initializer("scale", {2}, {1, 2});
  mm.node("RMSNormalization", {"x", "scale"}, {"y"});
  mm.output("y", {2, 2});
  auto g = mm.import();
  Tensor y = interp::run(*g, {Tensor::fromVector<float>(DType::F32, {2, 2}, {3, 4, 0, 0})})[0];
  double rms = std::sqrt(12.5 + 1e-5);
  EXPECT_NEAR(y.data<float>()[1], 4 / rms * 2, 1e-5);
  EXPECT_EQ(y.data<float>()[2], 0.0f);
}

TEST(OnnxImport, Resize18AxesCoverTheOtherDims) {
  ModelMaker mm(18);
  mm.input("x", {1, 1, 2, 2});
  mm.initializer("scales", {2}, {2, 3});
  auto& n = mm.node("Resize", {"x", "", "scales"}, {"y"});
  addInts(n, "axes", {2, 3});
  mm.output("y");
  EXPECT_EQ(mm.import()->outputs()[0]->shape().str(), "[1,1,4,6]");
}

TEST(OnnxImport, Resize18EmptyRoiWithAxesIsNotGiven) {
  ModelMaker mm(18);
  mm.input("x", {1, 1, 2, 2});
  mm.initializer("roi", {0}, {});
  mm.initializer("scales", {2}, {2, 2});
  auto& n = mm.node("Resize", {"x", "roi", "scales"}, {"y"});
  addInts(n, "axes", {2, 3});
  mm.output("y");
  EXPECT_EQ(mm.import()->outputs()[0]->shape().str(), "[1,1,4,4]");
}

TEST(OnnxImport, Opset18AxesOutOfRangeAreNamed) {
  ModelMaker split(18);
  split.input("x", {4, 2});
  auto& s = split.node("Split", {"x"}, {"a", "b"}, "halves");
  addInt(s, "num_outputs", 2);
  addInt(s, "axis", 3);
  split.output("a");
  split.output("b");
  expectError([&] { split.import(); }, {"Split 'halves'", "axis 3 is out of range for rank 2"});
  ModelMaker resize(18);
  resize.input("x", {1, 1, 2, 2});
  resize.initializer("scales", {1}, {2});
  auto& r = resize.node("Resize", {"x", "", "scales"}, {"y"}, "up");
  addInts(r, "axes", {4});
  resize.output("y");
  expectError([&] { resize.import(); }, {"Resize 'up'", "axis 4 is out of range for rank 4"});
}

TEST(OnnxImport, UnsupportedNewerFormsAreNamed) {
  ModelMaker mm(18);  // the policy rounds extents from sizes known at run time only
  mm.input("x", {1, 1, 4, 4});
  mm.input("sizes", {2}, onnx::TensorProto::INT64);
  auto& n = mm.node("Resize", {"x", "", "", "sizes"}, {"y"}, "down");
  addString(n, "keep_aspect_ratio_policy", "not_larger");
  addInts(n, "axes", {2, 3});
  mm.output("y");
  expectError([&] { mm.import(); }, {"Resize 'down'", "keep_aspect_ratio_policy needs constant sizes"});
  ModelMaker old(17);  // Gelu is no op before opset 20
  old.input("x", {2});
  old.node("Gelu", {"x"}, {"y"});
  old.output("y", {2});
  expectError([&] { old.import(); }, {"unsupported op 'Gelu'"});
}

TEST(OnnxImport, NamedDimsBecomeSymbolicBatch) {
  ModelMaker mm;
  mm.input("x", {-7, 3});
  mm.node("Relu", {"x"}, {"y"});
  mm.output("y");
  auto g = mm.import();
  EXPECT_EQ(g->outputs()[0]->shape().str(), "[N,3]");
}

TEST(OnnxImport, BadFilesGetClearErrors) {
  expectError([] { onnxio::importOnnxFile("/nonexistent/model.onnx"); }, {"/nonexistent/model.onnx", "No such file"});
  fs::path empty = tempFile("empty.onnx", "");
  expectError([&] { onnxio::importOnnxFile(empty.string()); }, {"empty"});
  fs::remove(empty);

  ModelMaker mm;
  mm.input("x", {2});
  mm.node("Relu", {"x"}, {"y"});
  mm.output("y", {2});
  std::string good = mm.bytes();
  fs::path truncated = tempFile("trunc.onnx", good.substr(0, good.size() / 2));
  expectError([&] { onnxio::importOnnxFile(truncated.string()); }, {"trunc.onnx"});
  fs::remove(truncated);
}

TEST(OnnxImport, RandomBytesNeverCrash) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes(size_t(rng() % 256 + 1), '\0');
    for (char& c : bytes) c = char(rng());
    try {
      onnxio::importOnnxBytes(bytes.data(), bytes.size(), "random.onnx");
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("random.onnx"), std::string::npos) << e.what();
    }
  }
}

TEST(OnnxImport, UnknownOpIsNamed) {
  ModelMaker mm;
  mm.input("x", {2});
  mm.node("FrobnicateV2", {"x"}, {"y"}, "weird");
  mm.output("y", {2});
  expectError([&] { mm.import(); }, {"FrobnicateV2", "weird"});
}

TEST(OnnxImport, DanglingInputIsNamed) {
  ModelMaker mm;
  mm.input("x", {2});
  mm.node("Add", {"x", "ghost"}, {"y"}, "adder");
  mm.output("y", {2});
  expectError([&] { mm.import(); }, {"ghost", "adder"});
}

TEST(OnnxImport, MalformedInitializerIsNamed) {
  ModelMaker mm;
  mm.input("x", {2});
  mm.initializer("w", {2}, {1, 2});
  mm.g().mutable_initializer(0)->mutable_raw_data()->resize(5);
  mm.node("Add", {"x", "w"}, {"y"});
  mm.output("y", {2});
  expectError([&] { mm.import(); }, {"initializer 'w'", "raw_data"});
}

TEST(OnnxImport, CycleIsReported) {
  ModelMaker mm;
  mm.input("x", {2});
  mm.node("Add", {"x", "b"}, {"a"}, "first");
  mm.node("Relu", {"a"}, {"b"}, "second");
  mm.output("b", {2});
  expectError([&] { mm.import(); }, {"cycle"});
}

TEST(OnnxImport, NegativeAndHugeDimsAreRejected) {
  ModelMaker neg;
  neg.input("x", {-3});
  neg.node("Relu", {"x"}, {"y"});
  neg.output("y");
  expectError([&] { neg.import(); }, {"graph input 'x'", "negative dimension"});

  ModelMaker huge;
  huge.input("x", {int64_t(1) << 40, int64_t(1) << 40});
  huge.node("Relu", {"x"}, {"y"});
  huge.output("y");
  expectError([&] { huge.import(); }, {"graph input 'x'", "too many elements"});

  ModelMaker hugeInit;
  hugeInit.input("x", {2});
  auto* t = hugeInit.g().add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(int64_t(1) << 40);
  t->add_dims(int64_t(1) << 30);
  hugeInit.node("Add", {"x", "w"}, {"y"});
  hugeInit.output("y");
  expectError([&] { hugeInit.import(); }, {"initializer 'w'"});
}

TEST(OnnxImport, InconsistentShapesAreReported) {
  ModelMaker mm;
  mm.input("a", {2, 3});
  mm.input("b", {4, 5});
  mm.node("MatMul", {"a", "b"}, {"y"}, "mm");
  mm.output("y");
  expectError([&] { mm.import(); }, {"mm"});

  ModelMaker declared;
  declared.input("x", {2, 3});
  declared.node("Relu", {"x"}, {"y"});
  declared.output("y", {3, 2});
  expectError([&] { declared.import(); }, {"graph output 'y'", "[3,2]", "[2,3]"});
}

TEST(OnnxImport, UnsupportedOpsetIsNamed) {
  ModelMaker mm(29);
  mm.input("x", {2});
  mm.node("Relu", {"x"}, {"y"});
  mm.output("y", {2});
  expectError([&] { mm.import(); }, {"opset 29 is not supported (supported: 1..28)"});
}

TEST(TensorProto, ReadsTypedFieldsAndRejectsCountMismatch) {
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::INT64);
  p.add_dims(3);
  for (int64_t v : {5, -1, 7}) p.add_int64_data(v);
  Tensor t = onnxio::tensorFromProto(p, ".", "t");
  EXPECT_EQ(t.toInt64Vector(), (std::vector<int64_t>{5, -1, 7}));
  p.add_int64_data(9);
  EXPECT_THROW(onnxio::tensorFromProto(p, ".", "t"), Error);
}
