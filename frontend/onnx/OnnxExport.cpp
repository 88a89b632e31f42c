#include "frontend/onnx/OnnxExport.h"

#include <fstream>

#include <onnx/checker.h>

#include "frontend/onnx/TensorProto.h"
#include "ir/Error.h"

namespace friction::onnxio {
namespace {

void setValueInfo(onnx::ValueInfoProto& vi, const Value& v) {
  vi.set_name(v.name());
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(dtypeToOnnx(v.dtype()));
  if (!v.shape().hasRank()) return;
  auto* shape = tt->mutable_shape();
  for (const Dim& d : v.shape().dims()) {
    auto* dim = shape->add_dim();
    if (d.isStatic()) dim->set_dim_value(d.value);
    else if (!d.isUnknown()) dim->set_dim_param(d.symbol);
  }
}

void setAttribute(onnx::AttributeProto& a, const std::string& name, const Attribute& value) {
  using A = onnx::AttributeProto;
  a.set_name(name);
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          a.set_type(A::INT);
          a.set_i(v);
        } else if constexpr (std::is_same_v<T, float>) {
          a.set_type(A::FLOAT);
          a.set_f(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          a.set_type(A::STRING);
          a.set_s(v);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          a.set_type(A::INTS);
          for (auto x : v) a.add_ints(x);
        } else if constexpr (std::is_same_v<T, std::vector<float>>) {
          a.set_type(A::FLOATS);
          for (auto x : v) a.add_floats(x);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          a.set_type(A::STRINGS);
          for (const auto& x : v) a.add_strings(x);
        } else if constexpr (std::is_same_v<T, Tensor>) {
          a.set_type(A::TENSOR);
          *a.mutable_t() = tensorToProto(v, "");
        } else {
          throw Error("attribute '" + name + "': subgraph attributes cannot be exported to ONNX");
        }
      },
      value);
}

}  // namespace

onnx::ModelProto exportOnnx(const Graph& graph) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("friction");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  auto* gp = model.mutable_graph();
  gp->set_name(graph.name());
  for (Value* v : graph.inputs()) setValueInfo(*gp->add_input(), *v);
  for (Value* v : graph.initializers()) *gp->add_initializer() = tensorToProto(v->constant(), v->name());
  for (const auto& n : graph.nodes()) {
    auto* np = gp->add_node();
    np->set_op_type(n->op());
    np->set_name(n->name());
    for (Value* in : n->inputs()) np->add_input(in ? in->name() : "");
    for (Value* out : n->outputs()) {
      np->add_output(out->name());
      if (std::find(graph.outputs().begin(), graph.outputs().end(), out) == graph.outputs().end() &&
          out->shape().hasRank())
        setValueInfo(*gp->add_value_info(), *out);
    }
    for (const auto& [name, value] : n->attrs()) setAttribute(*np->add_attribute(), name, value);
  }
  for (Value* v : graph.outputs()) setValueInfo(*gp->add_output(), *v);
  return model;
}

void exportOnnxFile(const Graph& graph, const std::string& path) {
  onnx::ModelProto model = exportOnnx(graph);
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw Error("exported model fails the ONNX checker: " + std::string(e.what()));
  }
  std::ofstream f(path, std::ios::binary);
  FRICTION_CHECK(f.good(), "cannot write '" + path + "'");
  FRICTION_CHECK(model.SerializeToOstream(&f), "failed writing '" + path + "'");
}

}  // namespace friction::onnxio
