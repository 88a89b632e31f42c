// The losses written with supported ops, as the onnx reference computes them
// (onnx/reference/ops/op_negative_log_likelihood_loss.py and op_softmax_cross_entropy_loss.py), so a model
// exported with its loss (a training graph run for evaluation) imports whole. NegativeLogLikelihoodLoss: each
// element's input at its target class (GatherElements along the class axis), negated, times the class weight
// (or 1); ignore_index's elements weigh 0; then none, sum or mean (divided by the weights' sum).
// SoftmaxCrossEntropyLoss: the same over LogSoftmax of the scores, whose log-probabilities are its second output.
#include "frontend/onnx/AdapterUtil.h"
#include "ir/Error.h"
#include "ir/OpRegistry.h"

namespace friction::onnxio {
namespace {

// The loss of `logProb` [N, C, d...] at `target` [N, d...], reduced as `n`'s reduction says; becomes n's output 0.
void negativeLogLikelihood(NodeRewrite& r, Value* logProb, Value* target, Value* weight) {
  Node& n = r.n;
  const std::string reduction = n.attrString("reduction", "mean");
  FRICTION_CHECK(reduction == "none" || reduction == "sum" || reduction == "mean",
                 n.describe() + ": reduction must be none, sum or mean, got '" + reduction + "'");
  FRICTION_CHECK(logProb->shape().hasRank() && logProb->shape().rank() >= 2,
                 n.describe() + ": the input needs a batch and a class dim");
  const DType type = logProb->dtype();
  target = r.cast(target, DType::I64);
  const bool ignores = n.hasAttr("ignore_index");
  Value* kept = nullptr;  // the elements whose target is not ignore_index
  if (ignores) {
    kept = r.op("Not", {r.op("Equal", {target, r.ints({n.attrInt("ignore_index", -100)}, "ignore_index")})});
    target = r.op("Where", {kept, target, r.ints({0}, "zero")});  // any class: its loss weighs 0
  }
  Value* picked = r.op("GatherElements", {logProb, r.op("Unsqueeze", {target, r.ints({1}, "axis")})},
                       {{"axis", int64_t(1)}});
  Value* loss = r.op("Neg", {r.op("Squeeze", {picked, r.ints({1}, "axis")})});
  Value* weights = nullptr;  // each element's weight, when not all 1
  if (weight) {
    const int64_t classes = r.staticDim(weight, 0, "weight");
    Value* clipped = r.op("Min", {r.op("Max", {target, r.ints({0}, "zero")}), r.ints({classes - 1}, "last")});
    weights = r.op("Gather", {weight, clipped});  // a target out of range reads the nearest class's, as np.take's clip
  }
  if (ignores) weights = r.op("Where", {kept, weights ? weights : r.scalar(1, type, "one"), r.scalar(0, type, "zero")});
  if (weights) loss = r.op("Mul", {loss, weights});
  const std::map<std::string, Attribute> all{{"keepdims", int64_t(0)}};
  if (reduction == "none") return becomes(n, "Identity", {loss});
  if (reduction == "sum") return becomes(n, "ReduceSum", {loss}, all);
  if (!weights) return becomes(n, "ReduceMean", {loss}, all);
  becomes(n, "Div", {r.op("ReduceSum", {loss}, all), r.op("ReduceSum", {weights}, all)});
}

}  // namespace

void decomposeLoss(Graph& g, Node& n) {
  NodeRewrite r{g, n};
  FRICTION_CHECK(n.input(1), n.describe() + ": needs a target");
  if (n.op() == "NegativeLogLikelihoodLoss") return negativeLogLikelihood(r, n.input(0), n.input(1), n.input(2));
  FRICTION_CHECK(n.op() == "SoftmaxCrossEntropyLoss", n.describe() + ": not a loss");
  Value* logProb = r.op("LogSoftmax", {n.input(0)}, {{"axis", int64_t(1)}});
  if (n.numOutputs() > 1) inferNode(*g.addNodeTakingLastOutput(n, "Identity", {logProb}));
  negativeLogLikelihood(r, logProb, n.input(1), n.input(2));
}

}  // namespace friction::onnxio
