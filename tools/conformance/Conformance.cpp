#include "tools/conformance/Conformance.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "frontend/onnx/OnnxImport.h"
#include "frontend/onnx/OpsetAdapters.h"
#include "frontend/onnx/TensorProto.h"
#include "ir/Error.h"
#include "ir/OpRegistry.h"
#include "ir/Specialize.h"
#include "runtime/Backend.h"
#include "runtime/interp/KernelRegistry.h"

namespace fs = std::filesystem;

namespace friction {
namespace {

// Why friction cannot run this model at all (an op or a type outside the
// supported set), or "" when it should.
std::string unsupportedReason(const onnx::ModelProto& model) {
  const auto& g = model.graph();
  int64_t opset = 0;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  // An element type friction has no dtype for (strings, float8, int4, complex, ...).
  auto unsupportedType = [](int code) -> std::string {
    if (code == onnx::TensorProto::UNDEFINED) return "";  // not declared
    try {
      dtypeFromOnnxCode(code, "");
      return "";
    } catch (const Error&) {
      // Debian's onnx.proto (1.12) has no names for the newer types (float8, int4, float4, ...).
      std::string name = onnx::TensorProto::DataType_IsValid(code)
                             ? onnx::TensorProto::DataType_Name(onnx::TensorProto::DataType(code))
                             : "";
      return "unsupported type: " + (name.empty() ? "element type " + std::to_string(code) : name) + " tensors";
    }
  };
  for (const auto& n : g.node()) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") return "unsupported op " + n.domain() + "." + n.op_type();
    if (onnxio::isAdaptedOp(n.op_type(), opset)) continue;  // rewritten on import
    if (!OpRegistry::instance().find(n.op_type()) || !interp::KernelRegistry::instance().find(n.op_type()))
      return "unsupported op " + n.op_type();
    for (const auto& a : n.attribute())
      if (a.name() == "to" && a.type() == onnx::AttributeProto::INT)
        if (std::string why = unsupportedType(int(a.i())); !why.empty()) return why;
  }
  for (const auto* list : {&g.input(), &g.output()})
    for (const auto& vi : *list) {
      if (!vi.type().has_tensor_type()) return "unsupported type: sequence/optional/map values";
      if (std::string why = unsupportedType(vi.type().tensor_type().elem_type()); !why.empty()) return why;
    }
  for (const auto& init : g.initializer())
    if (std::string why = unsupportedType(init.data_type()); !why.empty()) return why;
  return "";
}

// The backend-test data stores bfloat16 tensors as uint16; read them as the model declares.
Tensor asDeclared(Tensor t, const Value* decl) {
  if (decl && decl->dtype() == DType::BF16 && t.dtype() == DType::U16) return t.bitcast(DType::BF16);
  return t;
}

std::vector<std::string> numberedFiles(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, std::string>> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0 && e.path().extension() == ".pb") {
      try {
        found.emplace_back(std::stoi(n.substr(prefix.size())), e.path().string());
      } catch (const std::exception&) {
      }
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> r;
  for (auto& f : found) r.push_back(f.second);
  return r;
}

// Empty when `got` matches `want` within tolerance; otherwise the reason.
std::string compareTensors(const Tensor& got, const Tensor& want, const ConformanceOptions& opt) {
  if (got.dtype() != want.dtype())
    return "dtype " + std::string(dtypeName(got.dtype())) + ", expected " + std::string(dtypeName(want.dtype()));
  if (got.shape() != want.shape())
    return "shape " + got.type().shape.str() + ", expected " + want.type().shape.str();
  bool exact = !isFloat(want.dtype());
  // bfloat16 outputs within two of its ulps, as the onnx package's backend-test runner compares them: an rtol of
  // 1e-3 would ask for bit equality with the reference's rounding order.
  double rtol = want.dtype() == DType::BF16 ? std::max(opt.rtol, 1.0 / 64) : opt.rtol;
  double scale = 0;
  if (opt.scaleRelative)
    for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::fabs(want.elementAsDouble(i)));
  double worst = 0;
  int64_t worstAt = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.elementAsDouble(i), w = want.elementAsDouble(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    double ref = opt.scaleRelative ? scale : std::fabs(w);
    if (exact ? g == w : (g == w || std::fabs(g - w) <= opt.atol + rtol * ref)) continue;
    double err = std::isnan(g - w) ? INFINITY : std::fabs(g - w);
    if (worstAt < 0 || err > worst) worst = err, worstAt = i;
  }
  if (worstAt < 0) return "";
  return "value mismatch at element " + std::to_string(worstAt) + ": got " +
         std::to_string(got.elementAsDouble(worstAt)) + ", expected " + std::to_string(want.elementAsDouble(worstAt));
}

ConformanceCase runCase(const fs::path& caseDir, const ConformanceOptions& opt) {
  ConformanceCase c;
  c.name = caseDir.filename().string();
  try {
    fs::path modelPath = caseDir / "model.onnx";
    onnx::ModelProto proto;
    {
      std::ifstream f(modelPath, std::ios::binary);
      if (!proto.ParseFromIstream(&f)) {
        c.status = ConformanceCase::Status::Failed;
        c.reason = "model.onnx does not parse";
        return c;
      }
    }
    c.reason = unsupportedReason(proto);
    if (!c.reason.empty()) return c;  // skipped
    onnx::ModelProto pristine;  // the importer moves weights out of the proto it is given
    if (opt.pipeline) pristine = proto;
    auto graph = onnxio::importOnnxModel(proto, caseDir.string(), modelPath.string());
    std::shared_ptr<Backend> backend = opt.sharedBackend ? opt.sharedBackend : createBackend(opt.backend);
    std::unique_ptr<CompiledModel> model;
    if (!opt.pipeline) model = backend->compile(*graph);
    std::vector<fs::path> sets;
    for (const auto& e : fs::directory_iterator(caseDir))
      if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
    std::sort(sets.begin(), sets.end());
    FRICTION_CHECK(!sets.empty(), "no test_data_set_* folder");
    for (const auto& set : sets) {
      std::vector<Tensor> inputs, expected;
      auto declared = [](const std::vector<Value*>& vs, size_t i) { return i < vs.size() ? vs[i] : nullptr; };
      for (const auto& f : numberedFiles(set, "input_"))
        inputs.push_back(asDeclared(onnxio::readTensorFile(f), declared(graph->inputs(), inputs.size())));
      for (const auto& f : numberedFiles(set, "output_"))
        expected.push_back(asDeclared(onnxio::readTensorFile(f), declared(graph->outputs(), expected.size())));
      std::unique_ptr<Graph> optimized;  // opt.pipeline: this set's batch bound, then the passes
      if (opt.pipeline) {
        onnx::ModelProto copy = pristine;
        optimized = onnxio::importOnnxModel(copy, caseDir.string(), modelPath.string());
        FRICTION_CHECK(!inputs.empty() && inputs[0].rank() > 0, "a pipeline run needs a batched first input");
        bindInputDims(*optimized, batchBindings(*optimized, inputs[0].shape()[0]));
        runPipeline(*optimized, buildPipeline(*opt.pipeline));
        model = backend->compile(*optimized);
      }
      std::vector<Tensor> outputs = model->run(inputs);
      c.interpNodes = std::max(c.interpNodes, model->interpNodes());
      FRICTION_CHECK(outputs.size() == expected.size(), "produced " + std::to_string(outputs.size()) +
                                                            " outputs, expected " + std::to_string(expected.size()));
      for (size_t i = 0; i < outputs.size(); ++i) {
        std::string why = compareTensors(outputs[i], expected[i], opt);
        FRICTION_CHECK(why.empty(), set.filename().string() + " output " + std::to_string(i) + ": " + why);
      }
    }
    c.status = ConformanceCase::Status::Passed;
  } catch (const std::exception& e) {
    c.status = ConformanceCase::Status::Failed;
    c.reason = e.what();
  }
  return c;
}

}  // namespace

ConformanceReport runConformance(const std::string& dir, const ConformanceOptions& opt) {
  FRICTION_CHECK(fs::is_directory(dir), "conformance: '" + dir + "' is not a directory");
  std::vector<fs::path> cases;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it)
    if (it->is_regular_file() && it->path().filename() == "model.onnx") cases.push_back(it->path().parent_path());
  std::sort(cases.begin(), cases.end());
  std::optional<std::regex> filter;
  if (!opt.filter.empty()) filter.emplace(opt.filter);
  ConformanceReport report;
  for (const auto& dirPath : cases) {
    if (filter && !std::regex_search(dirPath.filename().string(), *filter)) continue;
    ConformanceCase c = runCase(dirPath, opt);
    switch (c.status) {
      case ConformanceCase::Status::Passed: report.passed++; break;
      case ConformanceCase::Status::Failed: report.failed++; break;
      case ConformanceCase::Status::Skipped: report.skipped++; break;
    }
    if (opt.onCase) opt.onCase(c);
    report.cases.push_back(std::move(c));
  }
  return report;
}

}  // namespace friction
