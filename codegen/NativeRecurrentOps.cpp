// Native kernels of the recurrent layers RNN, GRU and LSTM on f32, as
// onnxruntime and oneDNN run them: the input products of every sequence
// element at once (one SGEMM of [seq * batch, input] by W's transpose, the
// biases in its epilogue), then the recurrence, its hidden units shared out
// among the threads: per element, each share's SGEMM of the batch's states by
// its rows of R's transpose, then its gates' arithmetic in vectors. Constant W
// and R are packed once (Sgemm.h's registered constants). Batch rows past
// their sequence_lens keep their state and output zeros, as the interpreter's.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "codegen/NativeKernels.h"
#include "ir/Error.h"
#include "ir/ops/Recurrent.h"
#include "runtime/ukernels/Rows.h"
#include "runtime/ukernels/Sgemm.h"

namespace friction::codegen {
namespace {

class RecurrentKernel : public NativeKernel {
 public:
  RecurrentKernel(const Node& node, RecurrentSpec spec, RecurrentDims dims, const Value* r)
      : op_(node.op()), who_(node.describe()), spec_(std::move(spec)), dims_(dims), r_(r) {}
  ~RecurrentKernel() override {
    if (!arranged_.empty()) ukernels::unregisterConstant(arranged_.data());
  }
  // A constant R arranged for the team the machine gives, and registered, so the SGEMM packs it once.
  void prepare() override {
    if (!r_->isConstant() || !arranged_.empty()) return;
    arrangedTeam_ = teamSize();
    arranged_ = arrange(r_->constant().data<float>(), arrangedTeam_);
    ukernels::registerConstant(arranged_.data(), arranged_.size() * sizeof(float));
  }

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
    // R's rows as the team reads them: arranged at build for a constant R, else now.
    const int team = teamSize();
    std::vector<float> arrangedNow;
    if (arranged_.empty() || arrangedTeam_ != team) arrangedNow = arrange(given(RecurrentSpec::kR), team);
    const float* byThread = arrangedNow.empty() ? arranged_.data() : arrangedNow.data();
    std::vector<float> projected(static_cast<size_t>(seq * batch * rows)), bias(static_cast<size_t>(rows));
    std::vector<float> h(static_cast<size_t>(batch * hidden)), c(h.size());
    for (int dir = 0; dir < spec_.directions; ++dir) {
      const float* w = given(RecurrentSpec::kW) + dir * rows * dims_.input;
      const float* b = given(RecurrentSpec::kB) ? given(RecurrentSpec::kB) + dir * 2 * rows : nullptr;
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
      const Weights weights{byThread + dir * rows * hidden, b ? b + rows : nullptr,
                            given(RecurrentSpec::kP) ? given(RecurrentSpec::kP) + dir * 3 * hidden : nullptr};
      recur(dir, team, weights, lengths, projected, h, c, y);
      storeState(h, dir, output(RecurrentSpec::kYh, batch * spec_.directions * hidden));
      if (spec_.cell == RecurrentCell::Lstm) storeState(c, dir, output(RecurrentSpec::kYc, batch * spec_.directions * hidden));
    }
  }

  std::string describe() const override { return op_ + " (input GEMM, then a GEMM per step and share)"; }

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

  // v = activation(clip(v)) over n values: Sigmoid and Tanh in the machine's vectors, the others one by one.
  void activate(const RecurrentActivation& a, float* v, int64_t n) const {
    const float clip = spec_.clip ? *spec_.clip : std::numeric_limits<float>::infinity();
    if (a.kind == RecurrentActivationKind::Sigmoid || a.kind == RecurrentActivationKind::Tanh)
      return ukernels::gateRow(a.kind == RecurrentActivationKind::Sigmoid ? ukernels::GateFunction::Sigmoid
                                                                           : ukernels::GateFunction::Tanh,
                               clip, v, n);
    for (int64_t j = 0; j < n; ++j) v[j] = a(spec_.clipped(v[j]));
  }

  struct Weights {
    const float *r, *rb, *p;  // R's rows arranged by share, R's biases and the peepholes (nullptr when absent)
  };

  // The hidden units [j0, j0 + units) of share `share` of `team`, in whole vectors of 16.
  struct Share {
    int64_t j0, units;
  };
  Share shareOf(int share, int team) const {
    const int64_t hidden = dims_.hidden, per = team > 1 ? ((hidden + team - 1) / team + 15) / 16 * 16 : hidden;
    const int64_t j0 = std::min(hidden, share * per);
    return {j0, std::min(hidden, j0 + per) - j0};
  }
  // Shares of the hidden units: one per 32 units, at most one per thread.
  int teamSize() const { return int(std::clamp<int64_t>(dims_.hidden / 32, 1, omp_get_max_threads())); }

  // R's rows grouped by share: for each direction and share, each gate's rows of the share's units, so that a
  // share's recurrent products are one SGEMM a step.
  std::vector<float> arrange(const float* r, int team) const {
    const int64_t hidden = dims_.hidden, rows = spec_.gates * hidden;
    std::vector<float> out(static_cast<size_t>(spec_.directions * rows * hidden));
    float* to = out.data();
    for (int dir = 0; dir < spec_.directions; ++dir)
      for (int share = 0; share < team; ++share) {
        const Share sh = shareOf(share, team);
        for (int g = 0; g < spec_.gates; ++g, to += sh.units * hidden)
          std::copy_n(r + (dir * rows + g * hidden + sh.j0) * hidden, sh.units * hidden, to);
      }
    return out;
  }

  // One direction's recurrence over the sequence, from the states in h and c to the last ones. The hidden units
  // are shared out among the threads (`team` shares, share k to thread k mod the team): each share's
  // recurrent products are one SGEMM of h by its rows of R (`arrange`), then its units' cell arithmetic; all in
  // one parallel region for the whole sequence, so a step costs a barrier (two for a GRU whose reset gate
  // scales h before Rh), not a fork and join. h is double-buffered: every thread reads all of the last step's
  // h while writing its own units of the next.
  void recur(int dir, int team, const Weights& wt, const std::vector<int32_t>& lengths,
             const std::vector<float>& projected, std::vector<float>& h, std::vector<float>& c, float* y) const {
    const int64_t seq = dims_.seq, batch = dims_.batch, hidden = dims_.hidden, rows = spec_.gates * hidden;
    const int gates = spec_.gates;
    const bool resetFirst = spec_.cell == RecurrentCell::Gru && !spec_.linearBeforeReset;
    // A share's products: rows of gates x units, at batch x gates x j0.
    std::vector<float> next(h.size()), recurrent(static_cast<size_t>(batch * rows)), resetH(h.size());
#pragma omp parallel num_threads(team)
    {
      std::vector<float> scratch(static_cast<size_t>(rows));
      float *last = h.data(), *now = next.data();
      const int first = omp_get_thread_num(), stride = omp_get_num_threads();
      // C[:, gates g0.. of the share] = A x the share's rows of R for them, transposed.
      auto product = [&](const Share& sh, int g0, int count, const float* a) {
        if (sh.units > 0)
          ukernels::sgemm(false, true, batch, count * sh.units, hidden, 1.f, a, hidden,
                          wt.r + (gates * sh.j0 + g0 * sh.units) * hidden, hidden, 0.f,
                          recurrent.data() + batch * gates * sh.j0 + g0 * sh.units, gates * sh.units, nullptr, 1);
      };
      for (int64_t s = 0; s < seq; ++s) {
        const int64_t t = spec_.reversed(dir) ? seq - 1 - s : s;
        for (int k = first; k < team; k += stride) product(shareOf(k, team), 0, gates - (resetFirst ? 1 : 0), last);
        if (resetFirst) {
          for (int k = first; k < team; k += stride)
            resetGate(dir, t, lengths, projected, recurrent, last, resetH, shareOf(k, team));
#pragma omp barrier
          for (int k = first; k < team; k += stride) product(shareOf(k, team), 2, 1, resetH.data());
        }
        for (int k = first; k < team; k += stride) {
          const Share sh = shareOf(k, team);
          for (int64_t n = 0; n < batch && sh.units > 0; ++n) {
            float* mine = now + n * hidden + sh.j0;
            std::copy_n(last + n * hidden + sh.j0, sh.units, mine);
            if (t >= lengths[size_t(n)]) continue;  // the state as it was; Y stays zero
            const float* x = projected.data() + dims_.xRow(t, n) * rows + sh.j0;
            const float* rec = recurrent.data() + (batch * sh.j0 + n * sh.units) * gates;
            cellStep(dir, x, rec, sh.units, wt.rb ? wt.rb + sh.j0 : nullptr, wt.p ? wt.p + sh.j0 : nullptr, mine,
                     c.data() + n * hidden + sh.j0, sh.units, scratch.data());
            std::copy_n(mine, sh.units, y + dims_.yRow(t, dir, n) * hidden + sh.j0);
          }
        }
#pragma omp barrier
        std::swap(last, now);
      }
#pragma omp single
      if (last != h.data()) h.swap(next);
    }
  }

  // A GRU without linear_before_reset multiplies R's h rows by r * h, not h: r * h of a share's units for every
  // active row (zeros for the others), before the product by Rh.
  void resetGate(int dir, int64_t t, const std::vector<int32_t>& lengths, const std::vector<float>& projected,
                 const std::vector<float>& recurrent, const float* h, std::vector<float>& resetH,
                 const Share& sh) const {
    const int64_t hidden = dims_.hidden, rows = spec_.gates * hidden;
    for (int64_t n = 0; n < dims_.batch && sh.units > 0; ++n) {
      float* reset = resetH.data() + n * hidden + sh.j0;
      if (t >= lengths[size_t(n)]) {
        std::fill(reset, reset + sh.units, 0.f);
        continue;
      }
      const float* x = projected.data() + dims_.xRow(t, n) * rows + hidden + sh.j0;
      const float* rec = recurrent.data() + (dims_.batch * sh.j0 + n * sh.units) * spec_.gates + sh.units;
      for (int64_t j = 0; j < sh.units; ++j) reset[j] = x[j] + rec[j];
      activate(spec_.activation(dir, 0), reset, sh.units);
      for (int64_t j = 0; j < sh.units; ++j) reset[j] *= h[n * hidden + sh.j0 + j];
    }
  }

  // `units` hidden units of one batch row: `x` their input products with the biases, `rb` R's biases and `p`
  // the peepholes, each gate `hidden` further on; `rec` their recurrent products (a GRU's h columns as
  // resetGate made them), each gate `recStride` further on; h and c updated in place. Each gate's inputs are
  // summed into `gates` (gates x hidden floats), then activated a run at a time.
  void cellStep(int dir, const float* x, const float* rec, int64_t recStride, const float* rb, const float* p,
                float* h, float* c, int64_t units, float* gates) const {
    const int64_t hidden = dims_.hidden;
    const RecurrentActivation& f = spec_.activation(dir, 0);
    float* first = gates;
    for (int64_t j = 0; j < units; ++j) first[j] = x[j] + rec[j];
    switch (spec_.cell) {
      case RecurrentCell::Rnn:
        activate(f, first, units);
        std::copy(first, first + units, h);
        return;
      case RecurrentCell::Gru: {  // z, r, h
        float *z = first, *reset = gates + hidden, *candidate = gates + 2 * hidden;
        const float *xh = x + 2 * hidden, *rh = rec + 2 * recStride;
        activate(f, z, units);
        if (spec_.linearBeforeReset) {
          for (int64_t j = 0; j < units; ++j) reset[j] = x[hidden + j] + rec[recStride + j];
          activate(f, reset, units);
          const float* rbh = rb ? rb + 2 * hidden : nullptr;
          for (int64_t j = 0; j < units; ++j) candidate[j] = xh[j] + reset[j] * (rh[j] + (rbh ? rbh[j] : 0.f));
        } else {
          for (int64_t j = 0; j < units; ++j) candidate[j] = xh[j] + rh[j];
        }
        activate(spec_.activation(dir, 1), candidate, units);
        for (int64_t j = 0; j < units; ++j) h[j] = (1.f - z[j]) * candidate[j] + z[j] * h[j];
        return;
      }
      case RecurrentCell::Lstm: {  // gates i, o, f, c; peepholes i, o, f
        float *in = first, *out = gates + hidden, *forget = gates + 2 * hidden, *cell = gates + 3 * hidden;
        for (int64_t j = 0; j < units; ++j) {
          if (p) in[j] += p[j] * c[j];
          forget[j] = x[2 * hidden + j] + rec[2 * recStride + j] + (p ? p[2 * hidden + j] * c[j] : 0.f);
          cell[j] = x[3 * hidden + j] + rec[3 * recStride + j];
        }
        activate(f, in, units);
        if (spec_.inputForget) {
          for (int64_t j = 0; j < units; ++j) forget[j] = 1.f - in[j];
        } else {
          activate(f, forget, units);
        }
        activate(spec_.activation(dir, 1), cell, units);
        for (int64_t j = 0; j < units; ++j) {
          c[j] = forget[j] * c[j] + in[j] * cell[j];
          out[j] = x[hidden + j] + rec[recStride + j] + (p ? p[hidden + j] * c[j] : 0.f);
          cell[j] = c[j];
        }
        activate(f, out, units);
        activate(spec_.activation(dir, 2), cell, units);
        for (int64_t j = 0; j < units; ++j) h[j] = out[j] * cell[j];
        return;
      }
    }
  }

  std::string op_, who_;
  RecurrentSpec spec_;
  RecurrentDims dims_;
  const Value* r_;
  std::vector<float> arranged_;  // R arranged for a team of arrangedTeam_ (prepare), registered
  int arrangedTeam_ = 0;
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
    return std::make_unique<RecurrentKernel>(node, std::move(spec), d, outer[RecurrentSpec::kR]);
  } catch (const Error& e) {
    return noNative(why, e.what());
  }
}

}  // namespace friction::codegen
