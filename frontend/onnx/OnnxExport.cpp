#include "frontend/onnx/OnnxExport.h"

#include <algorithm>
#include <fstream>
#include <unordered_map>
#include <unordered_set>

#include <onnx/checker.h>

#include "frontend/onnx/TensorProto.h"
#include "ir/Error.h"
#include "ir/FusedRegion.h"

namespace friction::onnxio {
namespace {

void setValueInfo(onnx::ValueInfoProto& vi, const Value& v) {
  vi.set_name(v.name());
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(dtypeToOnnxCode(v.dtype()));
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

namespace {

// Emits the nodes of `g` into `gp`. `names` maps values to their exported
// names; Fused regions are inlined (ONNX has no such op), their internal
// values and initializers prefixed with the region's node name.
void emitNodes(const Graph& g, onnx::GraphProto& gp, std::unordered_map<const Value*, std::string>& names,
               std::unordered_set<std::string>& nodeNames, const std::string& prefix,
               const std::vector<Value*>& graphOutputs) {
  auto nameOf = [&](const Value* v) -> std::string {
    auto it = names.find(v);
    return it != names.end() ? it->second : prefix + v->name();
  };
  for (Value* v : g.initializers()) *gp.add_initializer() = tensorToProto(v->constant(), nameOf(v));
  for (const auto& n : g.nodes()) {
    if (auto region = FusedRegion::of(*n)) {
      const Graph& body = region->body();
      for (size_t i = 0; i < body.inputs().size(); ++i) names[body.inputs()[i]] = nameOf(n->input(i));
      for (size_t i = 0; i < body.outputs().size(); ++i) names[body.outputs()[i]] = nameOf(n->output(i));
      emitNodes(body, gp, names, nodeNames, prefix + n->name() + "/", graphOutputs);
      continue;
    }
    // ONNX requires unique node names; inlined regions may repeat or omit them.
    std::string nodeName = prefix + (n->name().empty() ? n->op() : n->name());
    for (int k = 1; !nodeNames.insert(nodeName).second; ++k) nodeName = prefix + n->name() + "#" + std::to_string(k);
    if (n->op() == "ReducePrecision") {  // friction's own op: ONNX says it as a Cast to `to` and one back
      const std::string narrow = nameOf(n->output(0)) + "/narrow";
      auto addCast = [&](const std::string& name, const std::string& in, const std::string& out, int64_t to) {
        auto* cast = gp.add_node();
        cast->set_op_type("Cast");
        cast->set_name(name);
        cast->add_input(in);
        cast->add_output(out);
        setAttribute(*cast->add_attribute(), "to", Attribute(to));
      };
      addCast(nodeName + "/narrow", nameOf(n->input(0)), narrow, n->attrInt("to", 0));
      addCast(nodeName, narrow, nameOf(n->output(0)), int64_t(dtypeToOnnxCode(n->output(0)->dtype())));
      continue;
    }
    auto* np = gp.add_node();
    np->set_op_type(n->op());
    np->set_name(nodeName);
    for (Value* in : n->inputs()) np->add_input(in ? nameOf(in) : "");
    for (Value* out : n->outputs()) {
      np->add_output(nameOf(out));
      bool isGraphOutput = std::find(graphOutputs.begin(), graphOutputs.end(), out) != graphOutputs.end();
      if (!isGraphOutput && out->shape().hasRank() && !names.count(out)) {
        setValueInfo(*gp.add_value_info(), *out);
        gp.mutable_value_info(gp.value_info_size() - 1)->set_name(nameOf(out));
      }
    }
    for (const auto& [name, value] : n->attrs()) setAttribute(*np->add_attribute(), name, value);
  }
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
  std::unordered_map<const Value*, std::string> names;
  std::unordered_set<std::string> nodeNames;
  emitNodes(graph, *gp, names, nodeNames, "", graph.outputs());
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
