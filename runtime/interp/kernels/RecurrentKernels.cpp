// The recurrent layers RNN, GRU and LSTM as the ONNX operator documents them:
// one sequence element, one batch row and one gate row at a time, with dot
// products written out (the cpu backend's kernel batches them into GEMMs).
// A batch row past its sequence_lens keeps its state and outputs zeros; the
// reverse direction starts at each row's last element.
#include <algorithm>
#include <vector>

#include "ir/Error.h"
#include "ir/ops/Recurrent.h"
#include "runtime/interp/KernelRegistry.h"
#include "runtime/interp/kernels/KernelUtil.h"

namespace friction::interp {
namespace {

template <typename T>
T dot(const T* a, const T* b, int64_t n) {
  T s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// One direction's weights and biases, and its state of one batch row.
template <typename T>
struct Direction {
  const T *w, *r, *wb, *rb, *p;  // wb, rb, p nullptr when absent
  T bias(const T* b, int64_t k) const { return b ? b[k] : T(0); }
};

// The new state of one batch row after element xt: h (and for LSTM c) updated in place.
template <typename T>
void step(const RecurrentSpec& spec, int dir, const Direction<T>& d, int64_t input, int64_t hidden, const T* xt,
          T* h, T* c) {
  const int64_t rows = spec.gates * hidden;
  std::vector<T> xw(static_cast<size_t>(rows)), hr(static_cast<size_t>(rows)), next(static_cast<size_t>(hidden));
  for (int64_t k = 0; k < rows; ++k) {
    xw[size_t(k)] = dot(d.w + k * input, xt, input) + d.bias(d.wb, k);
    hr[size_t(k)] = dot(d.r + k * hidden, h, hidden) + d.bias(d.rb, k);
  }
  const RecurrentActivation& f = spec.activation(dir, 0);
  auto gate = [&](int g, int64_t j) { return xw[size_t(g * hidden + j)] + hr[size_t(g * hidden + j)]; };
  switch (spec.cell) {
    case RecurrentCell::Rnn:
      for (int64_t j = 0; j < hidden; ++j) next[size_t(j)] = f(spec.clipped(gate(0, j)));
      break;
    case RecurrentCell::Gru: {
      const RecurrentActivation& g = spec.activation(dir, 1);
      std::vector<T> z(static_cast<size_t>(hidden)), reset(static_cast<size_t>(hidden)), resetH(static_cast<size_t>(hidden));
      for (int64_t j = 0; j < hidden; ++j) {
        z[size_t(j)] = f(spec.clipped(gate(0, j)));
        reset[size_t(j)] = f(spec.clipped(gate(1, j)));
        resetH[size_t(j)] = reset[size_t(j)] * h[j];
      }
      for (int64_t j = 0; j < hidden; ++j) {
        const int64_t k = 2 * hidden + j;
        // linear_before_reset: r * (h Rh + Rbh); otherwise (r * h) Rh + Rbh
        const T recurrent = spec.linearBeforeReset ? reset[size_t(j)] * hr[size_t(k)]
                                                   : dot(d.r + k * hidden, resetH.data(), hidden) + d.bias(d.rb, k);
        const T candidate = g(spec.clipped(xw[size_t(k)] + recurrent));
        next[size_t(j)] = (T(1) - z[size_t(j)]) * candidate + z[size_t(j)] * h[j];
      }
      break;
    }
    case RecurrentCell::Lstm: {
      const RecurrentActivation &g = spec.activation(dir, 1), &hAct = spec.activation(dir, 2);
      for (int64_t j = 0; j < hidden; ++j) {  // gates i, o, f, c; peepholes i, o, f
        const T pi = d.bias(d.p, j), po = d.bias(d.p, hidden + j), pf = d.bias(d.p, 2 * hidden + j);
        const T i = f(spec.clipped(gate(0, j) + pi * c[j]));
        const T forget = spec.inputForget ? T(1) - i : f(spec.clipped(gate(2, j) + pf * c[j]));
        const T cell = forget * c[j] + i * g(spec.clipped(gate(3, j)));
        const T o = f(spec.clipped(gate(1, j) + po * cell));
        c[j] = cell;
        next[size_t(j)] = o * hAct(cell);
      }
      break;
    }
  }
  std::copy(next.begin(), next.end(), h);
}

template <typename T>
std::vector<Tensor> recurrentOf(const Node& node, const std::vector<Tensor>& in) {
  const RecurrentSpec spec = recurrentSpec(node);
  auto given = [&](size_t i) -> const Tensor* { return i < in.size() && in[i].defined() ? &in[i] : nullptr; };
  std::vector<const std::vector<int64_t>*> shapes;
  for (size_t i = 0; i < in.size(); ++i) shapes.push_back(given(i) ? &in[i].shape() : nullptr);
  const RecurrentDims dims = recurrentDims(node, spec, shapes);
  const int64_t seq = dims.seq, batch = dims.batch, input = dims.input, hidden = dims.hidden;
  const int64_t rows = spec.gates * hidden;
  std::vector<int32_t> lengths(static_cast<size_t>(batch), static_cast<int32_t>(seq));
  if (const Tensor* l = given(RecurrentSpec::kSequenceLens)) {
    checkSequenceLengths(node.describe(), l->template data<int32_t>(), batch, seq);
    lengths.assign(l->template data<int32_t>(), l->template data<int32_t>() + batch);
  }
  auto data = [&](size_t i) { return given(i) ? given(i)->template data<T>() : nullptr; };
  const DType type = in[RecurrentSpec::kX].dtype();
  Tensor y(type, dims.yShape()), yh(type, dims.stateShape()), yc(type, dims.stateShape());
  for (int dir = 0; dir < spec.directions; ++dir) {
    const T* b = data(RecurrentSpec::kB);
    const Direction<T> d{data(RecurrentSpec::kW) + dir * rows * input, data(RecurrentSpec::kR) + dir * rows * hidden,
                         b ? b + dir * 2 * rows : nullptr, b ? b + dir * 2 * rows + rows : nullptr,
                         data(RecurrentSpec::kP) ? data(RecurrentSpec::kP) + dir * 3 * hidden : nullptr};
    std::vector<T> h(static_cast<size_t>(batch * hidden)), c(static_cast<size_t>(batch * hidden));
    const T *h0 = data(RecurrentSpec::kInitialH), *c0 = data(RecurrentSpec::kInitialC);
    for (int64_t n = 0; n < batch; ++n) {
      if (h0) std::copy_n(h0 + dims.stateRow(dir, n) * hidden, hidden, &h[size_t(n * hidden)]);
      if (c0) std::copy_n(c0 + dims.stateRow(dir, n) * hidden, hidden, &c[size_t(n * hidden)]);
    }
    for (int64_t s = 0; s < seq; ++s) {
      const int64_t t = spec.reversed(dir) ? seq - 1 - s : s;
      for (int64_t n = 0; n < batch; ++n) {
        if (t >= lengths[size_t(n)]) continue;  // Y stays zero, the state as it was
        step(spec, dir, d, input, hidden, data(RecurrentSpec::kX) + dims.xRow(t, n) * input, &h[size_t(n * hidden)],
             &c[size_t(n * hidden)]);
        std::copy_n(&h[size_t(n * hidden)], hidden, y.template data<T>() + dims.yRow(t, dir, n) * hidden);
      }
    }
    for (int64_t n = 0; n < batch; ++n) {
      std::copy_n(&h[size_t(n * hidden)], hidden, yh.template data<T>() + dims.stateRow(dir, n) * hidden);
      std::copy_n(&c[size_t(n * hidden)], hidden, yc.template data<T>() + dims.stateRow(dir, n) * hidden);
    }
  }
  std::vector<Tensor> out = {y, yh, yc};
  out.resize(std::max<size_t>(1, std::min(out.size(), node.numOutputs())));
  return out;
}

std::vector<Tensor> recurrent(const Node& node, const std::vector<Tensor>& in) {
  FRICTION_CHECK(!in.empty() && in[0].defined(), node.describe() + ": X is absent");
  if (in[0].dtype() == DType::F64) return recurrentOf<double>(node, in);
  FRICTION_CHECK(in[0].dtype() == DType::F32, node.describe() + ": X must be f16, bf16, f32 or f64, got " +
                                                  std::string(dtypeName(in[0].dtype())));
  return recurrentOf<float>(node, in);
}

}  // namespace

void registerRecurrentKernels(KernelRegistry& r) {
  for (const char* op : {"RNN", "GRU", "LSTM"})
    r.add(op, [](const Node& n, const std::vector<Tensor>& in) { return upcastHalf(n, in, recurrent); });
}

}  // namespace friction::interp
