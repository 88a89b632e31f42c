#include "codegen/Legalize.h"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "passes/Pass.h"
#include "passes/PassUtil.h"

namespace friction::codegen {
namespace {

using Ints = std::vector<int64_t>;

// Permutations that turn `a,b->y` into Transpose(a) @ Transpose(b), transposed to y.
struct MatmulForm {
  Ints permA, permB, permY;
};

// An Einsum equation of batched-matmul form, or nullopt.
std::optional<MatmulForm> matmulForm(std::string equation) {
  equation.erase(std::remove_if(equation.begin(), equation.end(), [](unsigned char c) { return std::isspace(c); }),
                 equation.end());
  const size_t arrow = equation.find("->"), comma = equation.find(',');
  if (arrow == std::string::npos || comma == std::string::npos || comma > arrow) return std::nullopt;
  const std::string a = equation.substr(0, comma), b = equation.substr(comma + 1, arrow - comma - 1),
                    y = equation.substr(arrow + 2);
  for (const std::string* t : {&a, &b, &y}) {
    std::unordered_set<char> seen;
    for (char c : *t)
      if (!std::isalpha(static_cast<unsigned char>(c)) || !seen.insert(c).second) return std::nullopt;
  }
  auto in = [](const std::string& t, char c) { return t.find(c) != std::string::npos; };
  std::string batch, m, n, k;
  for (char c : y) {
    if (in(a, c) && in(b, c)) batch += c;
    else if (in(a, c)) m += c;
    else if (in(b, c)) n += c;
    else return std::nullopt;  // an output letter of neither input
  }
  for (char c : a)
    if (in(b, c) && !in(y, c)) k += c;
    else if (!in(y, c)) return std::nullopt;  // summed over one input alone
  for (char c : b)
    if (!in(a, c) && !in(y, c)) return std::nullopt;
  if (m.size() != 1 || n.size() != 1 || k.size() != 1) return std::nullopt;
  auto positions = [](const std::string& term, const std::string& letters) {
    Ints p;
    for (char c : letters) p.push_back(int64_t(term.find(c)));
    return p;
  };
  const std::string result = batch + m + n;  // the MatMul's letters
  return MatmulForm{positions(a, batch + m + k), positions(b, batch + k + n), positions(result, y)};
}

bool isIdentity(const Ints& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != int64_t(i)) return false;
  return true;
}

bool allStatic(const Node& n) {
  for (const Value* v : n.inputs())
    if (v && !v->shape().isStatic()) return false;
  for (const Value* v : n.outputs())
    if (!v->shape().isStatic()) return false;
  return true;
}

bool rewritable(const Node& n) {
  if (!allStatic(n)) return false;
  if (n.op() == "Split") return n.numInputs() >= 1 && n.input(0);
  if (n.op() == "Einsum") return n.numInputs() == 2 && matmulForm(n.attrString("equation", "")).has_value();
  if (n.op() == "DepthToSpace" || n.op() == "SpaceToDepth") return n.input(0)->shape().rank() == 4;
  return false;
}

class Rewriter {
 public:
  explicit Rewriter(Graph& g) : g_(g) {}

  // Split: output i is input[offset_i : offset_i + size_i] along the axis.
  void split(const Node& n) {
    Value* x = n.input(0);
    const int64_t rank = int64_t(x->shape().rank());
    int64_t axis = n.attrInt("axis", 0);
    if (axis < 0) axis += rank;
    int64_t offset = 0;
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      Value* y = n.output(i);
      const int64_t size = y->shape().staticDims()[size_t(axis)];
      Value* slice =
          add("Slice", {x, ints({offset}), ints({offset + size}), ints({axis})}, y, n.name() + "/" + std::to_string(i));
      replace_[y] = slice;
      offset += size;
    }
  }

  void einsum(const Node& n) {
    const MatmulForm form = *matmulForm(n.attrString("equation", ""));
    Value* a = transposed(n.input(0), form.permA, n.name() + "/a");
    Value* b = transposed(n.input(1), form.permB, n.name() + "/b");
    Ints as = a->shape().staticDims(), bs = b->shape().staticDims();
    Ints ys(as.begin(), as.end() - 1);
    ys.push_back(bs.back());
    Value* y = n.output(0);
    Value* product = add("MatMul", {a, b}, nullptr, n.name() + "/matmul", TensorType{y->dtype(), Shape::fromStatic(ys)});
    if (!isIdentity(form.permY)) product = add("Transpose", {product}, y, n.name() + "/y", {}, {{"perm", form.permY}});
    replace_[y] = product;
  }

  // DepthToSpace and SpaceToDepth (NCHW, block b): the channels' b x b blocks moved to or from the pixels, as
  // the ONNX reference defines them: Reshape to 6-D, one Transpose, Reshape back (both reshapes zero-copy views).
  void depthSpace(const Node& n) {
    Value* x = n.input(0);
    const Ints xs = x->shape().staticDims();
    const int64_t b = n.attrInt("blocksize", 1), N = xs[0], C = xs[1], H = xs[2], W = xs[3];
    Ints six, perm;
    if (n.op() == "SpaceToDepth") {
      six = {N, C, H / b, b, W / b, b}, perm = {0, 3, 5, 1, 2, 4};
    } else if (n.attrString("mode", "DCR") == "DCR") {
      six = {N, b, b, C / (b * b), H, W}, perm = {0, 3, 4, 1, 5, 2};
    } else {  // CRD
      six = {N, C / (b * b), b, b, H, W}, perm = {0, 1, 4, 2, 5, 3};
    }
    Value* y = n.output(0);
    Value* blocks = add("Reshape", {x, ints(six)}, nullptr, n.name() + "/blocks",
                        TensorType{x->dtype(), Shape::fromStatic(six)});
    Value* moved = transposed(blocks, perm, n.name() + "/moved");
    replace_[y] = add("Reshape", {moved, ints(y->shape().staticDims())}, y, n.name() + "/y");
  }

  void finish() {
    replaceAllUses(g_, replace_);
    g_.eraseNodes([&](const Node& n) { return replace_.count(n.numOutputs() ? n.output(0) : nullptr) > 0; });
  }

 private:
  Value* ints(const Ints& v) { return g_.addInitializer(g_.freshName("legalized"), Tensor::vectorI64(v)); }

  Value* transposed(Value* x, const Ints& perm, const std::string& name) {
    if (isIdentity(perm)) return x;
    Ints xs = x->shape().staticDims(), ys;
    for (int64_t p : perm) ys.push_back(xs[size_t(p)]);
    return add("Transpose", {x}, nullptr, name, TensorType{x->dtype(), Shape::fromStatic(ys)}, {{"perm", perm}});
  }

  // A node whose one output takes `like`'s type (or `type`), named after the node it replaces.
  Value* add(const std::string& op, std::vector<Value*> in, const Value* like, const std::string& name,
             std::optional<TensorType> type = std::nullopt, std::map<std::string, Attribute> attrs = {}) {
    Node* n = g_.addNode(op, std::move(in), {g_.freshName(name)}, std::move(attrs), g_.freshName(name));
    n->output(0)->setType(type ? *type : like->type());
    return n->output(0);
  }

  Graph& g_;
  std::unordered_map<const Value*, Value*> replace_;
};

}  // namespace

bool needsLegalizing(const Graph& g) {
  return hasHalfArithmetic(g) ||
         std::any_of(g.nodes().begin(), g.nodes().end(), [](const auto& n) { return rewritable(*n); });
}

int64_t legalize(Graph& g) {
  // Half-precision ops first (what widen-half left, with the passes off or inside region bodies): the ops
  // below are then f32 ones.
  int64_t rewritten = widenHalfPrecision(g);
  std::vector<const Node*> nodes;
  for (const auto& n : g.nodes())
    if (rewritable(*n)) nodes.push_back(n.get());
  if (nodes.empty()) return rewritten;
  Rewriter r(g);
  for (const Node* n : nodes) {
    const size_t mark = g.nodes().size();
    if (n->op() == "Split") r.split(*n);
    else if (n->op() == "Einsum") r.einsum(*n);
    else r.depthSpace(*n);
    g.moveNodesBefore(mark, n);  // the program runs in the order plan-memory planned
  }
  r.finish();
  return rewritten + int64_t(nodes.size());
}

}  // namespace friction::codegen
