#include "ir/Patterns.h"

#include <cmath>

namespace friction {

GeluMatch matchErfGelu(const UseIndex& u, const Value* x, const std::function<const Tensor*(const Value*)>& constantOf) {
  const auto& xs = u.users(x);
  if (xs.size() != 2 || xs[0] == xs[1]) return {};
  auto is = [](const Node* n, const char* op) { return n && n->op() == op; };
  // The constant operand of binary `n` beside `v`, or nullptr.
  auto constantBeside = [&](const Node* n, const Value* v) -> const Tensor* {
    if (n->numInputs() != 2 || (n->input(0) != v && n->input(1) != v)) return nullptr;
    return constantOf(n->input(0) == v ? n->input(1) : n->input(0));
  };
  auto near = [](const Tensor* t, double want) {
    return t->numel() == 1 && t->dtype() == DType::F32 && std::abs(double(t->data<float>()[0]) - want) <= 1e-6 * want;
  };
  for (int k = 0; k < 2; ++k) {
    Node* scale = xs[k];
    Node* other = xs[1 - k];
    bool divide = is(scale, "Div") && scale->input(0) == x;
    if (!divide && !is(scale, "Mul")) continue;
    const Tensor* scaleBy = constantBeside(scale, x);
    if (!scaleBy) continue;
    Node* erf = u.soleUser(scale->output(0));
    if (!is(erf, "Erf")) continue;
    Node* plus = u.soleUser(erf->output(0));
    const Tensor* one = is(plus, "Add") ? constantBeside(plus, erf->output(0)) : nullptr;
    if (!one) continue;
    Node* mul = u.soleUser(plus->output(0));
    if (!is(mul, "Mul")) continue;
    GeluMatch m;
    const Tensor* half = nullptr;
    if (other == mul) {  // (x · (1+erf)) · 0.5
      Node* last = u.soleUser(mul->output(0));
      half = is(last, "Mul") ? constantBeside(last, mul->output(0)) : nullptr;
      if (!half) continue;
      m.nodes = {scale, erf, plus, mul, last};
    } else if (is(other, "Mul") && u.soleUser(other->output(0)) == mul && (half = constantBeside(other, x))) {
      m.nodes = {scale, erf, plus, other, mul};  // (x · 0.5) · (1+erf)
    } else {
      continue;
    }
    m.exact = near(scaleBy, divide ? std::sqrt(2.0) : std::sqrt(0.5)) && near(one, 1.0) && near(half, 0.5);
    return m;
  }
  return {};
}

std::vector<Node*> matchSilu(const UseIndex& u, const Value* x) {
  const auto& xs = u.users(x);
  if (xs.size() != 2 || xs[0] == xs[1] || u.isGraphOutput(x)) return {};
  for (int k = 0; k < 2; ++k) {
    Node* sigmoid = xs[k];
    Node* mul = xs[1 - k];
    if (sigmoid->op() != "Sigmoid" || mul->op() != "Mul" || mul->numInputs() != 2) continue;
    const Value* s = sigmoid->output(0);
    Node* rounding = u.soleUser(s);
    if (rounding && rounding->op() == "ReducePrecision") s = rounding->output(0);
    if (u.soleUser(s) != mul || (mul->input(0) != s && mul->input(1) != s)) continue;
    if (s != sigmoid->output(0)) return {sigmoid, rounding, mul};
    return {sigmoid, mul};
  }
  return {};
}

}  // namespace friction
