// The recurrent layers RNN, GRU and LSTM (ONNX opset 14 semantics): their
// attributes resolved once, shared by shape inference (RecurrentOps.cpp), the
// reference interpreter's kernel and the cpu backend's native kernel, so the
// three read `activations`, `clip`, `direction` and `layout` alike.
//
// Inputs: X 0, W 1, R 2, B 3, sequence_lens 4, initial_h 5, and for LSTM
// initial_c 6 and P 7 (peepholes). Outputs: Y, Y_h, and for LSTM Y_c.
// Gates in ONNX order: GRU z, r, h; LSTM i, o, f, c.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/Graph.h"

namespace friction {

enum class RecurrentCell { Rnn, Gru, Lstm };

// The activation functions a recurrent layer may name, with their ONNX defaults for alpha and beta.
enum class RecurrentActivationKind {
  Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus
};

struct RecurrentActivation {
  RecurrentActivationKind kind = RecurrentActivationKind::Tanh;
  float alpha = 0.f, beta = 0.f;

  template <typename T>
  T operator()(T x) const {
    using K = RecurrentActivationKind;
    switch (kind) {
      case K::Relu: return x > T(0) ? x : T(0);
      case K::Tanh: return std::tanh(x);
      case K::Sigmoid: return T(1) / (T(1) + std::exp(-x));
      case K::Affine: return T(alpha) * x + T(beta);
      case K::LeakyRelu: return x >= T(0) ? x : T(alpha) * x;
      case K::ThresholdedRelu: return x > T(alpha) ? x : T(0);
      case K::ScaledTanh: return T(alpha) * std::tanh(T(beta) * x);
      case K::HardSigmoid: return std::clamp(T(alpha) * x + T(beta), T(0), T(1));
      case K::Elu: return x >= T(0) ? x : T(alpha) * (std::exp(x) - T(1));
      case K::Softsign: return x / (T(1) + std::abs(x));
      case K::Softplus: return std::log1p(std::exp(-std::abs(x))) + std::max(x, T(0));
    }
    return x;
  }
};

struct RecurrentSpec {
  RecurrentCell cell = RecurrentCell::Rnn;
  int gates = 1;                 // rows of W per hidden unit: 1, 3 (GRU) or 4 (LSTM)
  int activationsPerDirection = 1;  // f; f, g; f, g, h
  int directions = 1;
  bool reverse = false;          // direction "reverse" (bidirectional: direction 1 runs reversed)
  int64_t hidden = -1;           // hidden_size; -1 when absent (then R's last dim)
  bool batchMajor = false;       // layout 1: X [batch, seq, input], Y [batch, seq, dirs, hidden]
  std::optional<float> clip;     // bounds every gate's input to its activation
  bool linearBeforeReset = false;  // GRU
  bool inputForget = false;        // LSTM: f = 1 - i
  std::vector<RecurrentActivation> activations;  // activationsPerDirection per direction

  bool reversed(int direction) const { return reverse || direction == 1; }
  const RecurrentActivation& activation(int direction, int k) const {
    return activations[size_t(direction * activationsPerDirection + k)];
  }
  template <typename T>
  T clipped(T x) const {
    return clip ? std::clamp(x, T(-*clip), T(*clip)) : x;
  }
  // Output indices.
  static constexpr size_t kY = 0, kYh = 1, kYc = 2;
  // Input indices.
  static constexpr size_t kX = 0, kW = 1, kR = 2, kB = 3, kSequenceLens = 4, kInitialH = 5, kInitialC = 6, kP = 7;
};

// The extents of one run, and where its rows lie: X's rows of `input`, Y's and the states' rows of `hidden`.
struct RecurrentDims {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0;
  int directions = 1;
  bool batchMajor = false;

  int64_t xRow(int64_t t, int64_t n) const { return batchMajor ? n * seq + t : t * batch + n; }
  int64_t yRow(int64_t t, int direction, int64_t n) const {
    return batchMajor ? (n * seq + t) * directions + direction : (t * directions + direction) * batch + n;
  }
  int64_t stateRow(int direction, int64_t n) const {
    return batchMajor ? n * directions + direction : direction * batch + n;
  }
  std::vector<int64_t> yShape() const {
    return batchMajor ? std::vector<int64_t>{batch, seq, directions, hidden}
                      : std::vector<int64_t>{seq, directions, batch, hidden};
  }
  std::vector<int64_t> stateShape() const {
    return batchMajor ? std::vector<int64_t>{batch, directions, hidden}
                      : std::vector<int64_t>{directions, batch, hidden};
  }
};

// The extents of a run from its inputs' shapes (`shapes[i]` nullptr for an absent input i), each checked against
// the others; throws Error naming the node and the input that disagrees.
RecurrentDims recurrentDims(const Node& node, const RecurrentSpec& spec,
                            const std::vector<const std::vector<int64_t>*>& shapes);

// Checks every sequence length lies in [0, seq]; throws Error naming `node` (its describe()) otherwise.
void checkSequenceLengths(const std::string& node, const int32_t* lengths, int64_t batch, int64_t seq);

// Whether `op` is one of RNN, GRU, LSTM.
bool isRecurrentOp(const std::string& op);

// Reads the node's attributes; throws Error naming the node on an unknown direction, layout or activation, a
// wrong number of activations, or a negative clip.
RecurrentSpec recurrentSpec(const Node& node);

}  // namespace friction
