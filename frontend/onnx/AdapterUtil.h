// The building blocks the opset adapters' rewrites share (OpsetAdapters.cpp, DecomposeAttention.cpp).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ir/Graph.h"

namespace friction::onnxio {

// Adds `op` over `in` before `n` is rewritten (the import sorts the nodes afterwards), inferred; its output.
Value* addInferred(Graph& g, const Node& n, const std::string& op, std::vector<Value*> in,
                   std::map<std::string, Attribute> attrs = {});
// Rewrites `n` in place as `op` over `in` (its output value, and so its users, stay).
void becomes(Node& n, const std::string& op, std::vector<Value*> in, std::map<std::string, Attribute> attrs = {});
// The rank of `n`'s input 0, which a rewrite needs; an Error otherwise.
int64_t knownRank(const Node& n);

// Builds the ops that replace node `n`: each added before it and inferred (addInferred), constants named after it.
struct NodeRewrite {
  Graph& g;
  Node& n;

  Value* op(const std::string& name, std::vector<Value*> in, std::map<std::string, Attribute> attrs = {}) {
    return addInferred(g, n, name, std::move(in), std::move(attrs));
  }
  Value* constant(Tensor t, const std::string& what) {
    return g.addInitializer(g.freshName(n.name() + "_" + what), std::move(t));
  }
  Value* ints(const std::vector<int64_t>& v, const std::string& what) { return constant(Tensor::vectorI64(v), what); }
  Value* scalar(double v, DType type, const std::string& what) {
    return constant(Tensor::fromVector<double>(DType::F64, {}, {v}).castTo(type), what);
  }
  Value* cast(Value* v, DType to) {
    return v->dtype() == to ? v : op("Cast", {v}, {{"to", int64_t(dtypeToOnnxCode(to))}});
  }
  // The static extent of `v` on `axis` (negative from the end); an Error naming `n` and `what` otherwise.
  int64_t staticDim(const Value* v, int64_t axis, const std::string& what) const;
};

// Attention (23 and later) written with MatMul, Softmax and the ops of its masks.
void decomposeAttention(Graph& g, Node& n);
// RotaryEmbedding (23) written with Slice, Gather, Mul and Concat.
void decomposeRotaryEmbedding(Graph& g, Node& n);
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul, QLinearConv, MatMulInteger and
// ConvInteger as their float emulation.
void decomposeQuantization(Graph& g, Node& n);
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss with GatherElements, LogSoftmax and reductions.
void decomposeLoss(Graph& g, Node& n);

}  // namespace friction::onnxio
