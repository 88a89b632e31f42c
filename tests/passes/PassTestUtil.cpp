#include "tests/passes/PassTestUtil.h"

#include <cmath>
#include <sstream>
#include <unordered_map>

#include "ir/Specialize.h"
#include "ir/TextFormat.h"
#include "ir/Verifier.h"
#include "runtime/Inputs.h"
#include "runtime/interp/Interpreter.h"
#include "tools/cmd/Common.h"

namespace friction::testing {
namespace {

void canonicalInto(std::ostringstream& os, const Graph& g, const std::string& indent) {
  std::unordered_map<const Value*, int> id;
  auto ref = [&](const Value* v) { return v ? "%" + std::to_string(id.at(v)) : std::string("_"); };
  auto define = [&](const Value* v) {
    int k = int(id.size());
    id[v] = k;
    return "%" + std::to_string(k) + " : " + v->type().str();
  };
  for (const Value* v : g.inputs()) os << indent << "input " << define(v) << "\n";
  for (const Value* v : g.initializers())
    os << indent << "const " << define(v) << " = " << printAttribute(v->constant()) << "\n";
  for (const auto& n : g.nodes()) {
    os << indent;
    for (size_t i = 0; i < n->numOutputs(); ++i) os << (i ? ", " : "") << define(n->output(i));
    os << " = " << n->op() << "(";
    for (size_t i = 0; i < n->numInputs(); ++i) os << (i ? ", " : "") << ref(n->input(i));
    os << ")";
    for (const auto& [name, a] : n->attrs()) {
      if (name == "provenance") continue;  // names, not structure
      if (auto* body = std::get_if<std::shared_ptr<Graph>>(&a)) {
        os << " " << name << " = {\n";
        canonicalInto(os, **body, indent + "  ");
        os << indent << "}";
      } else {
        os << " " << name << " = " << printAttribute(a);
      }
    }
    os << "\n";
  }
  for (const Value* v : g.outputs()) os << indent << "output " << ref(v) << "\n";
}

}  // namespace

std::string canonicalText(const Graph& g) {
  std::ostringstream os;
  canonicalInto(os, g, "");
  return os.str();
}

std::map<std::string, int64_t> expectPassRewrites(const std::string& pass, const std::string& before,
                                                  const std::string& expected) {
  auto g = parseGraph(before, pass + " before");
  auto want = parseGraph(expected, pass + " expected");
  PipelineOptions o;
  o.passes = {pass};
  RunOptions r;
  r.verifyEach = true;
  auto records = runPipeline(*g, buildPipeline(o), r);
  EXPECT_EQ(canonicalText(*g), canonicalText(*want)) << "after " << pass << ":\n" << printGraph(*g);
  return records.empty() ? std::map<std::string, int64_t>{} : records.back().stats;
}

void expectSameNumerics(const std::function<std::unique_ptr<Graph>()>& build, const PipelineOptions& pipeline,
                        int64_t batch, double rtol, double atol) {
  auto reference = build();
  auto optimized = build();
  bindInputDims(*reference, batchBindings(*reference, batch));
  bindInputDims(*optimized, batchBindings(*optimized, batch));
  RunOptions r;
  r.verifyEach = true;
  runPipeline(*optimized, buildPipeline(pipeline), r);
  std::vector<Tensor> inputs = seededInputs(*reference, 42);
  std::vector<Tensor> want = interp::run(*reference, inputs);
  std::vector<Tensor> got = interp::run(*optimized, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape()) << "output " << i;
    ASSERT_EQ(got[i].dtype(), want[i].dtype()) << "output " << i;
    for (int64_t k = 0; k < got[i].numel(); ++k) {
      double g = got[i].elementAsDouble(k), w = want[i].elementAsDouble(k);
      ASSERT_LE(std::fabs(g - w), atol + rtol * std::fabs(w)) << "output " << i << " element " << k;
    }
  }
}

}  // namespace friction::testing
