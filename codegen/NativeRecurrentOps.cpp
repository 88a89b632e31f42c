// Native kernels of the recurrent layers RNN, GRU and LSTM on f32, as
// onnxruntime and oneDNN run them: the input products of every sequence
// element at once (one SGEMM of [seq * batch, input] by W's transpose, the
// biases in its epilogue), then per element one SGEMM of the batch's states
// by R's transpose and the gates' arithmetic row by row. Constant W and R are
// packed once (Sgemm.h's registered constants). Batch rows past their
// sequence_lens keep their state and output zeros, as the interpreter's.
#include <algorithm>
#include <cstring>
#include <vector>

#include "codegen/NativeKernels.h"
#include "ir/Error.h"
#include "ir/ops/Recurrent.h"
#include "runtime/ukernels/Sgemm.h"

namespace friction::codegen {
namespace {

class RecurrentKernel : public NativeKernel {
 public:
  RecurrentKernel(const Node& node, RecurrentSpec spec, RecurrentDims dims)
      : op_(node.op()), who_(node.describe()), spec_(std::move(spec)), dims_(dims) {}

  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    std::vector<Tensor> outs = {out};
    runAll(in, outs);
  }

  void runAll(const std::vector<Tensor>& in, std::vector<Tensor>& outs) const override {
    const int64_t seq = dims_.seq, batch = dims_.batch, hidden = dims_.hidden, rows = spec_.gates * hidden;
    auto given = [&](size_t i) { return i < in.size() && in[i].defined() ? in[i].data<float>() : nullptr; };
    std::vector<int32_t> lengths(static_cast<size_t>(batch), static_cast<int32_t>(seq));
    if (in.size() > RecurrentSpec::kSequenceLens && in[RecurrentSpec::kSequenceLens].defined()) {
      const int32_t* l = in[RecurrentSpec::kSequenceLens].data<int32_t>();
      checkSequenceLengths(who_, l, batch, seq);
      lengths.assign(l, l + batch);
    }
    // Outputs the node does not have are written to scratch.
    std::vector<float> unused;
    auto output = [&](size_t i, int64_t numel) {
      if (i < outs.size()) return outs[i].data<float>();
      unused.resize(static_cast<size_t>(numel));
      return unused.data();
    };
    float* y = output(RecurrentSpec::kY, batch * seq * spec_.directions * hidden);
    std::fill(y, y + batch * seq * spec_.directions * hidden, 0.f);
    std::vector<float> projected(static_cast<size_t>(seq * batch * rows)), recurrent(static_cast<size_t>(batch * rows));
    std::vector<float> h(static_cast<size_t>(batch * hidden)), c(h.size()), scratch(h.size()), bias(rows);
    for (int dir = 0; dir < spec_.directions; ++dir) {
      const float* w = given(RecurrentSpec::kW) + dir * rows * dims_.input;
      const float* r = given(RecurrentSpec::kR) + dir * rows * hidden;
      const float* b = given(RecurrentSpec::kB) ? given(RecurrentSpec::kB) + dir * 2 * rows : nullptr;
      const float* p = given(RecurrentSpec::kP) ? given(RecurrentSpec::kP) + dir * 3 * hidden : nullptr;
      // Both biases go into the input products, but a linear_before_reset GRU's Rbh, which r scales.
      const int64_t recurrentBiasRows = spec_.linearBeforeReset ? 2 * hidden : rows;
      for (int64_t k = 0; k < rows; ++k) bias[size_t(k)] = b ? b[k] + (k < recurrentBiasRows ? b[rows + k] : 0.f) : 0.f;
      ukernels::GemmEpilogue withBias;
      withBias.bias = bias.data();
      // Rows of `projected` follow X's rows: xRow(t, n).
      ukernels::sgemm(false, true, seq * batch, rows, dims_.input, 1.f, given(RecurrentSpec::kX), dims_.input, w,
                      dims_.input, 0.f, projected.data(), rows, &withBias);
      loadState(given(RecurrentSpec::kInitialH), dir, h);
      loadState(given(RecurrentSpec::kInitialC), dir, c);
      for (int64_t s = 0; s < seq; ++s) {
        const int64_t t = spec_.reversed(dir) ? seq - 1 - s : s;
        // Every batch row's products, though rows past their length are not updated with them.
        ukernels::sgemm(false, true, batch, spec_.cell == RecurrentCell::Gru && !spec_.linearBeforeReset ? 2 * hidden : rows,
                        hidden, 1.f, h.data(), hidden, r, hidden, 0.f, recurrent.data(), rows);
        if (spec_.cell == RecurrentCell::Gru) gruResetGate(dir, t, lengths, projected, recurrent, r, h, scratch);
        for (int64_t n = 0; n < batch; ++n) {
          if (t >= lengths[size_t(n)]) continue;
          const float* x = projected.data() + dims_.xRow(t, n) * rows;
          const float* rec = recurrent.data() + n * rows;
          float* hn = h.data() + n * hidden;
          cellStep(dir, x, rec, b ? b + rows : nullptr, p, hn, c.data() + n * hidden);
          std::memcpy(y + dims_.yRow(t, dir, n) * hidden, hn, size_t(hidden) * sizeof(float));
        }
      }
      storeState(h, dir, output(RecurrentSpec::kYh, batch * spec_.directions * hidden));
      if (spec_.cell == RecurrentCell::Lstm) storeState(c, dir, output(RecurrentSpec::kYc, batch * spec_.directions * hidden));
    }
  }

  std::string describe() const override { return op_ + " (input GEMM, then a GEMM per step)"; }

 private:
  void loadState(const float* initial, int dir, std::vector<float>& state) const {
    for (int64_t n = 0; n < dims_.batch; ++n)
      for (int64_t j = 0; j < dims_.hidden; ++j)
        state[size_t(n * dims_.hidden + j)] = initial ? initial[dims_.stateRow(dir, n) * dims_.hidden + j] : 0.f;
  }
  void storeState(const std::vector<float>& state, int dir, float* out) const {
    for (int64_t n = 0; n < dims_.batch; ++n)
      std::memcpy(out + dims_.stateRow(dir, n) * dims_.hidden, state.data() + n * dims_.hidden,
                  size_t(dims_.hidden) * sizeof(float));
  }

  // A GRU without linear_before_reset multiplies R's h rows by r * h, not h: r for every active row first, then
  // (r * h) Rh^T into the h columns of `recurrent`.
  void gruResetGate(int dir, int64_t t, const std::vector<int32_t>& lengths, const std::vector<float>& projected,
                    std::vector<float>& recurrent, const float* r, const std::vector<float>& h,
                    std::vector<float>& resetH) const {
    if (spec_.linearBeforeReset) return;
    const int64_t hidden = dims_.hidden, rows = spec_.gates * hidden;
    const RecurrentActivation& f = spec_.activation(dir, 0);
    for (int64_t n = 0; n < dims_.batch; ++n)
      for (int64_t j = 0; j < hidden; ++j) {
        const float pre = projected[size_t(dims_.xRow(t, n) * rows + hidden + j)] + recurrent[size_t(n * rows + hidden + j)];
        resetH[size_t(n * hidden + j)] = t < lengths[size_t(n)] ? f(spec_.clipped(pre)) * h[size_t(n * hidden + j)] : 0.f;
      }
    ukernels::sgemm(false, true, dims_.batch, hidden, hidden, 1.f, resetH.data(), hidden, r + 2 * hidden * hidden, hidden,
                    0.f, recurrent.data() + 2 * hidden, rows);
  }

  // One batch row: `x` its input products with the biases, `rec` its recurrent products (a GRU's h columns as
  // gruResetGate left them), `rb` R's biases; h and c updated in place.
  void cellStep(int dir, const float* x, const float* rec, const float* rb, const float* p, float* h, float* c) const {
    const int64_t hidden = dims_.hidden;
    const RecurrentActivation& f = spec_.activation(dir, 0);
    switch (spec_.cell) {
      case RecurrentCell::Rnn:
        for (int64_t j = 0; j < hidden; ++j) h[j] = f(spec_.clipped(x[j] + rec[j]));
        return;
      case RecurrentCell::Gru: {
        const RecurrentActivation& g = spec_.activation(dir, 1);
        for (int64_t j = 0; j < hidden; ++j) {
          const float z = f(spec_.clipped(x[j] + rec[j]));
          const int64_t k = 2 * hidden + j;
          float candidate;
          if (spec_.linearBeforeReset) {
            const float reset = f(spec_.clipped(x[hidden + j] + rec[hidden + j]));
            candidate = g(spec_.clipped(x[k] + reset * (rec[k] + (rb ? rb[k] : 0.f))));
          } else {
            candidate = g(spec_.clipped(x[k] + rec[k]));
          }
          h[j] = (1.f - z) * candidate + z * h[j];
        }
        return;
      }
      case RecurrentCell::Lstm: {
        const RecurrentActivation &g = spec_.activation(dir, 1), &hAct = spec_.activation(dir, 2);
        for (int64_t j = 0; j < hidden; ++j) {  // gates i, o, f, c; peepholes i, o, f
          const float pi = p ? p[j] : 0.f, po = p ? p[hidden + j] : 0.f, pf = p ? p[2 * hidden + j] : 0.f;
          const float i = f(spec_.clipped(x[j] + rec[j] + pi * c[j]));
          const float forget = spec_.inputForget ? 1.f - i : f(spec_.clipped(x[2 * hidden + j] + rec[2 * hidden + j] + pf * c[j]));
          const float cell = forget * c[j] + i * g(spec_.clipped(x[3 * hidden + j] + rec[3 * hidden + j]));
          const float o = f(spec_.clipped(x[hidden + j] + rec[hidden + j] + po * cell));
          c[j] = cell;
          h[j] = o * hAct(cell);
        }
        return;
      }
    }
  }

  std::string op_, who_;
  RecurrentSpec spec_;
  RecurrentDims dims_;
};

}  // namespace

std::unique_ptr<NativeKernel> matchRecurrentOp(const Node& node, const std::vector<const Value*>& outer,
                                               std::string* why) {
  std::vector<const std::vector<int64_t>*> shapes;
  std::vector<std::vector<int64_t>> dims(outer.size());
  for (size_t i = 0; i < outer.size(); ++i) {
    const Value* v = outer[i];
    if (!v) {
      shapes.push_back(nullptr);
      continue;
    }
    const DType want = i == RecurrentSpec::kSequenceLens ? DType::I32 : DType::F32;
    if (v->dtype() != want || !v->shape().isStatic()) return noNative(why, node.op() + " not f32 or not static");
    dims[i] = v->shape().staticDims();
    shapes.push_back(&dims[i]);
  }
  try {
    RecurrentSpec spec = recurrentSpec(node);
    const RecurrentDims d = recurrentDims(node, spec, shapes);
    return std::make_unique<RecurrentKernel>(node, std::move(spec), d);
  } catch (const Error& e) {
    return noNative(why, e.what());
  }
}

}  // namespace friction::codegen
