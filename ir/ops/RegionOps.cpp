// Fused regions: a `Fused` node holds a subgraph (`body`) that codegen lowers
// as one kernel. Passes create them; the interpreter runs the body; ONNX
// export inlines it back into primitive ops.
//   body        the region's graph: its inputs bind to the node's inputs in order
//   kind        which pass made it (ir/FusedRegion.h: "epilogue", "elementwise", "reduction", "pattern", "nhwc")
//   provenance  names of the original nodes it replaces (for per-node attribution)
#include "ir/Error.h"
#include "ir/FusedRegion.h"
#include "ir/OpRegistry.h"

namespace friction {

void registerRegionOps(OpRegistry& r) {
  r.add(OpSchema("Fused")
            .inputs(0, -1)
            .outputs(1, -1)
            .attr("body", AttrKind::Graph, true)
            .attr("kind", AttrKind::String)
            .attr("provenance", AttrKind::Strings)
            .attr("pattern", AttrKind::String)
            .inferWith([](InferContext& ctx) {
              Graph& body = *std::get<std::shared_ptr<Graph>>(*ctx.node().findAttr("body"));
              try {
                parseRegionKind(ctx.node().attrString("kind", ""));
              } catch (const Error& e) {
                ctx.fail(e.what());
              }
              ctx.check(body.inputs().size() == ctx.numInputs(),
                        "body takes " + std::to_string(body.inputs().size()) + " inputs, node has " +
                            std::to_string(ctx.numInputs()));
              ctx.check(body.outputs().size() == ctx.numOutputs(),
                        "body has " + std::to_string(body.outputs().size()) + " outputs, node has " +
                            std::to_string(ctx.numOutputs()));
              bool changed = false;
              for (size_t i = 0; i < ctx.numInputs(); ++i) {
                ctx.check(ctx.hasInput(i), "region inputs cannot be absent");
                Value* in = body.inputs()[i];
                if (in->type() != ctx.inputType(i)) {
                  ctx.check(in->dtype() == ctx.inputDType(i), "input " + std::to_string(i) + " is " +
                                                                  ctx.inputType(i).str() + ", body expects " +
                                                                  in->type().str());
                  in->setType(ctx.inputType(i));
                  changed = true;
                }
              }
              if (changed) inferGraph(body);
              for (size_t i = 0; i < ctx.numOutputs(); ++i) ctx.setOutput(i, body.outputs()[i]->type());
            })
            .flopsWith([](const Node& n) {
              int64_t total = 0;
              for (const auto& m : FusedRegion::of(n)->body().nodes()) total += nodeFlops(*m);
              return total;
            }));
}

}  // namespace friction
