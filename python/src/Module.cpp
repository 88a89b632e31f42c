// friction._core: the bindings under the `friction` Python package (python/friction/__init__.py wraps them).
// Models are friction graphs; compile() optimizes a copy and compiles it on a backend; run() takes and
// returns buffers (numpy arrays) with the GIL released while the model runs.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "benchmarks/Protocol.h"
#include "benchmarks/ResultsStore.h"
#include "benchmarks/report/ReportData.h"
#include "codegen/Registration.h"
#include "codegen/cuda/Registration.h"
#include "codegen/halide/Registration.h"
#include "frontend/ModelSource.h"
#include "frontend/onnx/OnnxImport.h"
#include "frontend/onnx/OpsetAdapters.h"
#include "ir/DotFormat.h"
#include "ir/Error.h"
#include "ir/OpRegistry.h"
#include "ir/Revision.h"
#include "ir/Spec.h"
#include "ir/Specialize.h"
#include "ir/TextFormat.h"
#include "passes/Pass.h"
#include "passes/PassManager.h"
#include "python/src/Arrays.h"
#include "runtime/Backend.h"
#include "tools/cmd/Common.h"
#include "vendor_bridge/Bridges.h"

namespace friction::python {
namespace {

// A graph and the passes that made it (empty for a loaded model).
struct Model {
  std::shared_ptr<Graph> graph;
  std::vector<PassRecord> records;
};

py::dict statsDict(const GraphStats& s) {
  py::dict d;
  d["nodes"] = s.nodes, d["kernels"] = s.kernels, d["fused_regions"] = s.fusedRegions;
  d["intermediate_bytes"] = s.intermediateBytes, d["parameter_bytes"] = s.parameterBytes;
  return d;
}

py::list valueList(const std::vector<Value*>& values) {
  py::list out;
  for (const Value* v : values) {
    py::list shape;
    if (v->shape().hasRank())
      for (size_t d = 0; d < v->shape().rank(); ++d) {
        const Dim& dim = v->shape()[d];
        if (dim.isStatic()) shape.append(dim.value);
        else shape.append(dim.isUnknown() ? py::object(py::none()) : py::object(py::str(dim.symbol)));
      }
    py::dict d;
    d["name"] = v->name(), d["dtype"] = numpyName(v->dtype());
    d["shape"] = v->shape().hasRank() ? py::object(shape) : py::object(py::none());
    out.append(d);
  }
  return out;
}

// A copy of `m` with its symbolic batch bound (when given) and the pipeline run (when given).
Model prepare(const Model& m, std::optional<int64_t> batch, const std::optional<PipelineOptions>& pipeline) {
  Model out{std::shared_ptr<Graph>(cloneGraph(*m.graph)), m.records};
  if (batch) bindInputDims(*out.graph, batchBindings(*out.graph, *batch));
  if (pipeline) {
    std::vector<const PassInfo*> passes = buildPipeline(*pipeline);
    py::gil_scoped_release release;
    std::vector<PassRecord> records = runPipeline(*out.graph, passes);
    out.records.insert(out.records.end(), records.begin(), records.end());
  }
  return out;
}

PipelineOptions pipelineOf(std::vector<std::string> disable, std::optional<std::vector<std::string>> only,
                           std::optional<std::vector<std::string>> passes) {
  PipelineOptions o;
  o.disable = std::move(disable);
  FRICTION_CHECK(!only || !only->empty(), "only=[] names no pass: give passes=[] to run none");
  if (only) o.only = std::move(*only);
  if (passes) o.passes = passes->empty() ? std::vector<std::string>{"none"} : std::move(*passes);
  FRICTION_CHECK(int(!o.disable.empty()) + int(only.has_value()) + int(passes.has_value()) <= 1,
                 "give at most one of disable, only and passes");
  return o;
}

// A model compiled on a backend: the optimized graph it runs, the unoptimized one (the reference of
// bench's output check), and where results may share memory with something the caller must not change.
class Compiled {
 public:
  Compiled(Model optimized, std::shared_ptr<Graph> reference, std::string backend)
      : model_(std::move(optimized)), reference_(std::move(reference)), backend_(std::move(backend)) {
    auto be = createBackend(backend_);
    {
      py::gil_scoped_release release;
      compiled_ = be->compile(*model_.graph);
    }
    for (const Value* v : model_.graph->allValues())
      if (const Tensor* t = constantData(v); t && t->byteSize() > 0) constants_.push_back(rangeOf(*t));
  }

  std::vector<OutputArray> run(const py::list& arrays) {
    const Graph& g = *model_.graph;
    FRICTION_CHECK(arrays.size() == g.inputs().size(),
                   "the model takes " + std::to_string(g.inputs().size()) + " inputs, got " + std::to_string(arrays.size()));
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < arrays.size(); ++i) inputs.push_back(tensorFromBuffer(arrays[i].cast<py::buffer>(), g, i));
    std::vector<Tensor> outputs;
    {
      py::gil_scoped_release release;
      // A program's buffers (arena, profile) serve one run at a time: Python threads sharing it take turns.
      std::lock_guard<std::mutex> lock(running_);
      outputs = compiled_->run(inputs);
    }
    // A result that shares memory with an input, a constant or another result is copied: the caller owns
    // what it gets back and may write to it.
    std::vector<std::pair<const char*, const char*>> taken = constants_;
    for (const Tensor& t : inputs) taken.push_back(rangeOf(t));
    std::vector<OutputArray> r;
    for (Tensor& t : outputs) {
      auto range = rangeOf(t);
      bool shared = false;
      for (const auto& [b, e] : taken) shared = shared || (range.first < e && b < range.second);
      r.push_back({shared ? t.clone() : t});
      taken.push_back(rangeOf(r.back().tensor));
    }
    return r;
  }

  // bench::measure under `options` (backend: this one) -> `bench --json`'s measurement fields.
  std::string bench(bench::MeasureOptions options) {
    options.backend = backend_;
    options.threads = cli::threadsToMeasureWith(options.threads);
    bench::Measurement m;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(running_);
      m = bench::measure(*model_.graph, options.checkOutputs ? reference_.get() : nullptr, options);
    }
    nlohmann::json j = cli::measurementJson(m);
    j["backend"] = backend_;
    return j.dump();
  }

  const Model& model() const { return model_; }
  const std::string& backend() const { return backend_; }
  std::string description() const { return compiled_->description(); }
  int64_t interpNodes() const { return compiled_->interpNodes(); }
  std::string profile() const { return compiled_->profile(); }

 private:
  static std::pair<const char*, const char*> rangeOf(const Tensor& t) {
    auto* b = static_cast<const char*>(t.rawData());
    return {b, b + t.byteSize()};
  }
  Model model_;
  std::shared_ptr<Graph> reference_;
  std::string backend_;
  std::unique_ptr<CompiledModel> compiled_;
  std::vector<std::pair<const char*, const char*>> constants_;
  std::mutex running_;
};

}  // namespace
}  // namespace friction::python

PYBIND11_MODULE(_core, m) {
  using namespace friction;
  using namespace friction::python;
  m.doc() = "friction's C++ core; use the `friction` package, which wraps it.";
  vendor::registerVendorBridges();
  codegen::registerCpuBackend();
  codegen::registerCudaBackend();
  codegen::halide::registerHalideBackend();
  py::register_exception<Error>(m, "Error", PyExc_RuntimeError);
  m.attr("revision") = friction::revision();
  m.attr("binary") = FRICTION_BINARY;

  bindOutputArray(m);

  py::class_<Model>(m, "Model")
      .def_property_readonly("name", [](const Model& x) { return x.graph->name(); })
      .def_property_readonly("opset", [](const Model& x) { return x.graph->opset(); })
      .def_property_readonly("inputs", [](const Model& x) { return valueList(x.graph->inputs()); })
      .def_property_readonly("outputs", [](const Model& x) { return valueList(x.graph->outputs()); })
      .def("stats", [](const Model& x) { return statsDict(graphStats(*x.graph)); })
      .def("op_counts",
           [](const Model& x) {
             std::map<std::string, int64_t> counts;
             for (const auto& n : x.graph->nodes()) counts[n->op()]++;
             return counts;
           })
      .def("text", [](const Model& x, int64_t maxConstantBytes) {
             return printGraph(*x.graph, {.maxConstantBytes = maxConstantBytes});
           }, py::arg("max_constant_bytes") = 256)
      .def("dot", [](const Model& x, const std::string& title) { return printDot(*x.graph, {.title = title}); },
           py::arg("title") = "")
      .def("svg", [](const Model& x, const std::string& title) {
             std::string dot = printDot(*x.graph, {.title = title});
             py::gil_scoped_release release;
             return renderSvg(dot);
           }, py::arg("title") = "")
      .def("save", [](const Model& x, const std::string& path) { saveModel(*x.graph, path); })
      .def_property_readonly("records", [](const Model& x) {
        py::list out;
        for (const PassRecord& r : x.records) {
          py::dict d;
          d["name"] = r.name, d["ms"] = r.millis, d["before"] = statsDict(r.before), d["after"] = statsDict(r.after);
          d["stats"] = r.stats;
          out.append(d);
        }
        return out;
      });

  m.def("load_path", [](const std::string& source) { return Model{std::shared_ptr<Graph>(loadModel(source)), {}}; });
  m.def("load_bytes", [](const py::bytes& data, const std::string& name) {
    std::string_view bytes = data;
    return Model{std::shared_ptr<Graph>(onnxio::importOnnxBytes(bytes.data(), bytes.size(), name)), {}};
  });
  m.def("passes", [] {
    py::list out;
    for (const PassInfo& p : allPasses()) {
      py::dict d;
      d["name"] = p.name, d["summary"] = p.summary, d["prerequisites"] = p.prerequisites;
      out.append(d);
    }
    return out;
  });
  m.def("backends", &availableBackends);
  m.def("ops", [] { return OpRegistry::instance().names(); });
  m.attr("max_opset") = onnxio::kMaxOpset;
  m.def("opset_adapters", [] {
    py::list out;
    for (const onnxio::OpsetAdapter& a : onnxio::opsetAdapters()) {
      py::dict d;
      d["op"] = a.op, d["from"] = a.from, d["before"] = a.before, d["rewrites"] = a.fn != nullptr, d["what"] = a.what;
      out.append(d);
    }
    return out;
  });
  m.def("optimize",
        [](const Model& model, std::optional<int64_t> batch, std::vector<std::string> disable,
           std::optional<std::vector<std::string>> only, std::optional<std::vector<std::string>> passes) {
          return prepare(model, batch, pipelineOf(std::move(disable), std::move(only), std::move(passes)));
        },
        py::arg("model"), py::arg("batch"), py::arg("disable"), py::arg("only"), py::arg("passes"));

  py::class_<Compiled>(m, "Compiled")
      .def(py::init([](const Model& model, const std::string& backend, std::optional<int64_t> batch,
                       std::vector<std::string> disable, std::optional<std::vector<std::string>> only,
                       std::optional<std::vector<std::string>> passes) {
             Model optimized = prepare(model, batch, pipelineOf(std::move(disable), std::move(only), std::move(passes)));
             auto reference = prepare(model, batch, std::nullopt).graph;
             return std::make_unique<Compiled>(std::move(optimized), std::move(reference), backend);
           }),
           py::arg("model"), py::arg("backend"), py::arg("batch"), py::arg("disable"), py::arg("only"), py::arg("passes"))
      .def("run", &Compiled::run)
      .def("bench",
           [](Compiled& c, int reps, int warmup, int minReps, double targetCi, double maxSeconds, int threads,
              bool check, uint64_t seed) {
             bench::MeasureOptions o;
             o.reps = reps, o.warmup = warmup, o.minReps = minReps, o.targetRelCI = targetCi;
             o.maxSeconds = maxSeconds, o.threads = threads, o.checkOutputs = check, o.seed = seed;
             return c.bench(o);
           },
           py::arg("reps"), py::arg("warmup"), py::arg("min_reps"), py::arg("target_ci"), py::arg("max_seconds"),
           py::arg("threads"), py::arg("check"), py::arg("seed"))
      .def_property_readonly("model", &Compiled::model)
      .def_property_readonly("backend", &Compiled::backend)
      .def_property_readonly("executor", &Compiled::description)
      .def_property_readonly("interp_nodes", &Compiled::interpNodes)
      .def_property_readonly("profile", &Compiled::profile);

  m.def("report_data",
        [](const std::string& db, const std::string& reference, double minEffect) {
          bench::ResultsStore store(db);
          std::vector<bench::CellRecord> cells = store.cells("", /*withSamples=*/false);
          FRICTION_CHECK(!cells.empty(), "results store '" + db + "' has no measurements");
          return bench::reportData(cells, store, reference, minEffect).dump();
        },
        py::arg("db"), py::arg("reference"), py::arg("min_effect"));
}
