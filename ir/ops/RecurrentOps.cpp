// Schemas of the recurrent layers RNN, GRU and LSTM, and their attributes
// resolved (ir/ops/Recurrent.h).
#include <cctype>
#include <map>
#include <string>

#include "ir/Error.h"
#include "ir/OpRegistry.h"
#include "ir/ops/Recurrent.h"

namespace friction {

namespace {

using K = AttrKind;
using Act = RecurrentActivationKind;

struct ActivationInfo {
  Act kind;
  bool takesAlpha, takesBeta;
  float alpha, beta;  // ONNX's defaults
};

const ActivationInfo* findActivation(std::string name) {
  static const std::map<std::string, ActivationInfo> table = {
      {"relu", {Act::Relu, false, false, 0.f, 0.f}},
      {"tanh", {Act::Tanh, false, false, 0.f, 0.f}},
      {"sigmoid", {Act::Sigmoid, false, false, 0.f, 0.f}},
      {"affine", {Act::Affine, true, true, 1.f, 0.f}},
      {"leakyrelu", {Act::LeakyRelu, true, false, 0.01f, 0.f}},
      {"thresholdedrelu", {Act::ThresholdedRelu, true, false, 1.f, 0.f}},
      {"scaledtanh", {Act::ScaledTanh, true, true, 1.f, 1.f}},
      {"hardsigmoid", {Act::HardSigmoid, true, true, 0.2f, 0.5f}},
      {"elu", {Act::Elu, true, false, 1.f, 0.f}},
      {"softsign", {Act::Softsign, false, false, 0.f, 0.f}},
      {"softplus", {Act::Softplus, false, false, 0.f, 0.f}},
  };
  for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
  auto it = table.find(name);
  return it == table.end() ? nullptr : &it->second;
}

// Y [seq, dirs, batch, hidden] (layout 1: [batch, seq, dirs, hidden]); Y_h and Y_c [dirs, batch, hidden]
// ([batch, dirs, hidden]).
void inferRecurrent(InferContext& ctx) {
  const RecurrentSpec spec = recurrentSpec(ctx.node());
  const TensorType& x = ctx.inputType(RecurrentSpec::kX);
  ctx.check(isFloat(x.dtype), "X must be floating point, got " + std::string(dtypeName(x.dtype)));
  for (size_t i : {RecurrentSpec::kW, RecurrentSpec::kR, RecurrentSpec::kB, RecurrentSpec::kInitialH,
                   RecurrentSpec::kInitialC, RecurrentSpec::kP})
    if (i < ctx.numInputs() && ctx.hasInput(i))
      ctx.check(ctx.inputDType(i) == x.dtype, "input " + std::to_string(i) + " is " +
                                                  std::string(dtypeName(ctx.inputDType(i))) + ", X is " +
                                                  std::string(dtypeName(x.dtype)));
  if (ctx.numInputs() > RecurrentSpec::kSequenceLens && ctx.hasInput(RecurrentSpec::kSequenceLens))
    ctx.check(ctx.inputDType(RecurrentSpec::kSequenceLens) == DType::I32,
              "sequence_lens must be int32, got " +
                  std::string(dtypeName(ctx.inputDType(RecurrentSpec::kSequenceLens))));

  const Shape& xs = x.shape;
  const Shape& ws = ctx.inputShape(RecurrentSpec::kW);
  const Shape& rs = ctx.inputShape(RecurrentSpec::kR);
  ctx.check(!xs.hasRank() || xs.rank() == 3, "X must be 3-D, got " + xs.str());
  ctx.check(!ws.hasRank() || ws.rank() == 3, "W must be 3-D [directions, gates*hidden, input], got " + ws.str());
  ctx.check(!rs.hasRank() || rs.rank() == 3, "R must be 3-D [directions, gates*hidden, hidden], got " + rs.str());
  Dim hidden = spec.hidden >= 0 ? Dim(spec.hidden) : rs.hasRank() ? rs[2] : Dim::unknown();
  auto expect = [&](const Shape& s, size_t d, const Dim& want, const char* what) {
    if (s.hasRank() && s[d].isStatic() && want.isStatic())
      ctx.check(s[d].value == want.value, std::string(what) + " is " + s[d].str() + ", expected " + want.str() +
                                              " (" + s.str() + ")");
  };
  const Dim dirs(spec.directions);
  const Dim gateRows = hidden.isStatic() ? Dim(spec.gates * hidden.value) : Dim::unknown();
  expect(ws, 0, dirs, "W's directions");
  expect(rs, 0, dirs, "R's directions");
  expect(ws, 1, gateRows, "W's gate rows");
  expect(rs, 1, gateRows, "R's gate rows");
  expect(rs, 2, hidden, "R's hidden size");
  if (xs.hasRank()) expect(ws, 2, xs[2], "W's input size");
  const Dim seq = xs.hasRank() ? xs[spec.batchMajor ? 1 : 0] : Dim::unknown();
  const Dim batch = xs.hasRank() ? xs[spec.batchMajor ? 0 : 1] : Dim::unknown();
  auto optionalInput = [&](size_t i) -> const Shape* {
    return i < ctx.numInputs() && ctx.hasInput(i) && ctx.inputShape(i).hasRank() ? &ctx.inputShape(i) : nullptr;
  };
  if (const Shape* b = optionalInput(RecurrentSpec::kB)) {
    ctx.check(b->rank() == 2, "B must be 2-D [directions, 2*gates*hidden], got " + b->str());
    expect(*b, 0, dirs, "B's directions");
    expect(*b, 1, gateRows.isStatic() ? Dim(2 * gateRows.value) : Dim::unknown(), "B's size");
  }
  if (const Shape* lens = optionalInput(RecurrentSpec::kSequenceLens)) {
    ctx.check(lens->rank() == 1, "sequence_lens must be 1-D [batch], got " + lens->str());
    expect(*lens, 0, batch, "sequence_lens's size");
  }
  const Shape state = spec.batchMajor ? Shape{batch, dirs, hidden} : Shape{dirs, batch, hidden};
  for (size_t i : {RecurrentSpec::kInitialH, RecurrentSpec::kInitialC}) {
    const Shape* s = optionalInput(i);
    if (!s) continue;  // initial_c only exists for LSTM: the schemas of RNN and GRU take 6 inputs
    const char* name = i == RecurrentSpec::kInitialH ? "initial_h" : "initial_c";
    ctx.check(s->rank() == 3, std::string(name) + " must be 3-D " + state.str() + ", got " + s->str());
    for (size_t d = 0; d < 3; ++d) expect(*s, d, state[d], name);
  }
  if (const Shape* p = optionalInput(RecurrentSpec::kP)) {
    ctx.check(p->rank() == 2, "P must be 2-D [directions, 3*hidden], got " + p->str());
    expect(*p, 0, dirs, "P's directions");
    expect(*p, 1, hidden.isStatic() ? Dim(3 * hidden.value) : Dim::unknown(), "P's size");
  }
  ctx.setOutput(RecurrentSpec::kY, x.dtype,
                spec.batchMajor ? Shape{batch, seq, dirs, hidden} : Shape{seq, dirs, batch, hidden});
  ctx.setOutput(RecurrentSpec::kYh, x.dtype, state);
  ctx.setOutput(RecurrentSpec::kYc, x.dtype, state);
}

// Per direction and element of the sequence and batch: the input and recurrent products (2 * gates * hidden *
// (input + hidden)) and ~10 FLOPs of gate arithmetic per gate row.
int64_t recurrentFlops(const Node& n) {
  const Shape& w = n.input(RecurrentSpec::kW)->shape();
  const Shape& r = n.input(RecurrentSpec::kR)->shape();
  const auto xNumel = n.input(RecurrentSpec::kX)->shape().numel();
  if (!xNumel || !w.isStatic() || !r.isStatic() || w.rank() != 3 || r.rank() != 3 || w[2].value == 0) return 0;
  const int64_t dirs = w[0].value, gateRows = w[1].value, input = w[2].value, hidden = r[2].value;
  return dirs * (*xNumel / input) * (2 * gateRows * (input + hidden) + 10 * gateRows);
}

}  // namespace

bool isRecurrentOp(const std::string& op) { return op == "RNN" || op == "GRU" || op == "LSTM"; }

RecurrentSpec recurrentSpec(const Node& node) {
  RecurrentSpec s;
  auto fail = [&](const std::string& msg) { throw Error(node.describe() + ": " + msg); };
  const std::string& op = node.op();
  s.cell = op == "LSTM" ? RecurrentCell::Lstm : op == "GRU" ? RecurrentCell::Gru : RecurrentCell::Rnn;
  s.gates = s.cell == RecurrentCell::Lstm ? 4 : s.cell == RecurrentCell::Gru ? 3 : 1;
  s.activationsPerDirection = s.cell == RecurrentCell::Lstm ? 3 : s.cell == RecurrentCell::Gru ? 2 : 1;
  const std::string direction = node.attrString("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    fail("direction must be forward, reverse or bidirectional, got '" + direction + "'");
  s.directions = direction == "bidirectional" ? 2 : 1;
  s.reverse = direction == "reverse";
  s.hidden = node.attrInt("hidden_size", -1);
  if (node.hasAttr("hidden_size") && s.hidden < 1) fail("hidden_size must be positive, got " + std::to_string(s.hidden));
  const int64_t layout = node.attrInt("layout", 0);
  if (layout != 0 && layout != 1) fail("layout must be 0 or 1, got " + std::to_string(layout));
  s.batchMajor = layout == 1;
  if (node.hasAttr("clip")) {
    s.clip = node.attrFloat("clip", 0.f);
    if (!(*s.clip >= 0.f)) fail("clip must be non-negative, got " + std::to_string(*s.clip));
  }
  s.linearBeforeReset = node.attrInt("linear_before_reset", 0) != 0;
  s.inputForget = node.attrInt("input_forget", 0) != 0;

  std::vector<std::string> names;
  if (const Attribute* a = node.findAttr("activations")) {
    if (const auto* list = std::get_if<std::vector<std::string>>(a)) names = *list;
    else if (const auto* one = std::get_if<std::string>(a)) names = {*one};
    else fail("activations must be a list of strings");
  }
  if (names.empty()) {
    if (s.cell == RecurrentCell::Rnn) names = {"Tanh"};
    else if (s.cell == RecurrentCell::Gru) names = {"Sigmoid", "Tanh"};
    else names = {"Sigmoid", "Tanh", "Tanh"};
  }
  const size_t perDirection = size_t(s.activationsPerDirection);
  // One set for both directions of a bidirectional layer is given once (onnxruntime accepts it too).
  if (names.size() == perDirection && s.directions == 2) {
    const std::vector<std::string> once = names;
    names.insert(names.end(), once.begin(), once.end());
  }
  if (names.size() != perDirection * size_t(s.directions))
    fail("activations lists " + std::to_string(names.size()) + " functions, expected " +
         std::to_string(perDirection * size_t(s.directions)) + " (" + std::to_string(perDirection) +
         " per direction)");
  const std::vector<float> alphas = node.attrFloats("activation_alpha"), betas = node.attrFloats("activation_beta");
  size_t nextAlpha = 0, nextBeta = 0;
  for (const std::string& name : names) {
    const ActivationInfo* info = findActivation(name);
    if (!info) fail("unknown activation '" + name + "'");
    RecurrentActivation a{info->kind, info->alpha, info->beta};
    // alphas and betas are consumed in the order of the functions that take them
    if (info->takesAlpha && nextAlpha < alphas.size()) a.alpha = alphas[nextAlpha++];
    if (info->takesBeta && nextBeta < betas.size()) a.beta = betas[nextBeta++];
    s.activations.push_back(a);
  }
  return s;
}

RecurrentDims recurrentDims(const Node& node, const RecurrentSpec& spec,
                            const std::vector<const std::vector<int64_t>*>& shapes) {
  auto shapeOf = [&](size_t i) { return i < shapes.size() ? shapes[i] : nullptr; };
  auto str = [](const std::vector<int64_t>& s) { return Shape::fromStatic(s).str(); };
  const std::vector<int64_t>* x = shapeOf(RecurrentSpec::kX);
  const std::vector<int64_t>* w = shapeOf(RecurrentSpec::kW);
  const std::vector<int64_t>* r = shapeOf(RecurrentSpec::kR);
  FRICTION_CHECK(x && w && r && x->size() == 3 && w->size() == 3 && r->size() == 3,
                 node.describe() + ": X, W and R must be 3-D");
  RecurrentDims d;
  d.directions = spec.directions;
  d.batchMajor = spec.batchMajor;
  d.seq = (*x)[spec.batchMajor ? 1 : 0];
  d.batch = (*x)[spec.batchMajor ? 0 : 1];
  d.input = (*x)[2];
  d.hidden = spec.hidden >= 0 ? spec.hidden : (*r)[2];
  const int64_t dirs = spec.directions, rows = spec.gates * d.hidden;
  auto expect = [&](size_t i, const char* name, const std::vector<int64_t>& want) {
    const std::vector<int64_t>* got = shapeOf(i);
    FRICTION_CHECK(!got || *got == want, node.describe() + ": " + name + " is " + (got ? str(*got) : "") +
                                             ", expected " + str(want));
  };
  expect(RecurrentSpec::kW, "W", {dirs, rows, d.input});
  expect(RecurrentSpec::kR, "R", {dirs, rows, d.hidden});
  expect(RecurrentSpec::kB, "B", {dirs, 2 * rows});
  expect(RecurrentSpec::kSequenceLens, "sequence_lens", {d.batch});
  expect(RecurrentSpec::kInitialH, "initial_h", d.stateShape());
  expect(RecurrentSpec::kInitialC, "initial_c", d.stateShape());
  expect(RecurrentSpec::kP, "P", {dirs, 3 * d.hidden});
  return d;
}

void checkSequenceLengths(const std::string& node, const int32_t* lengths, int64_t batch, int64_t seq) {
  for (int64_t n = 0; n < batch; ++n)
    FRICTION_CHECK(lengths[n] >= 0 && lengths[n] <= seq,
                   node + ": sequence_lens[" + std::to_string(n) + "] = " + std::to_string(lengths[n]) +
                       " is outside [0, " + std::to_string(seq) + "]");
}

void registerRecurrentOps(OpRegistry& r) {
  auto common = [](const char* op, int inputs, int outputs) {
    return OpSchema(op)
        .inputs(3, inputs)
        .outputs(1, outputs)
        .attr("activation_alpha", K::Floats)
        .attr("activation_beta", K::Floats)
        .attr("activations", K::Strings)
        .attr("clip", K::Float)
        .attr("direction", K::String)
        .attr("hidden_size", K::Int)
        .attr("layout", K::Int)
        .inferWith(inferRecurrent)
        .flopsWith(recurrentFlops);
  };
  r.add(common("RNN", 6, 2));
  r.add(common("GRU", 6, 2).attr("linear_before_reset", K::Int));
  r.add(common("LSTM", 8, 3).attr("input_forget", K::Int));
}

}  // namespace friction
