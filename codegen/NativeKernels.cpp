#include "codegen/NativeKernels.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "codegen/TypedLoops.h"
#include "ir/Error.h"
#include "ir/FusedRegion.h"
#include "ir/Patterns.h"
#include "ir/ops/NnShapes.h"
#include "ir/ops/Recurrent.h"
#include "runtime/ukernels/Conv.h"
#include "runtime/ukernels/ConvTranspose.h"
#include "runtime/ukernels/Rows.h"

namespace friction::codegen {
namespace {

// What a native kernel applies of its epilogue, for its description: " + add + clamp + silu + round f16".
std::string epilogueDescription(bool residual, const ukernels::ConvEpilogue& e) {
  std::string d = residual ? " + add" : "";
  if (e.lo != -std::numeric_limits<float>::infinity() || e.hi != std::numeric_limits<float>::infinity()) d += " + clamp";
  if (e.activation != ukernels::Activation::None) d += std::string(" + ") + ukernels::activationName(e.activation);
  if (e.rounding != ukernels::Rounding::None) d += e.rounding == ukernels::Rounding::F16 ? " + round f16" : " + round bf16";
  return d;
}

// The clamp and activation of `e`, as the microkernels take them.
void setClampAndActivation(const FusedEpilogue& e, ukernels::ConvEpilogue& into) {
  into.lo = e.lo, into.hi = e.hi;
  into.activation = e.activation, into.alpha = e.alpha, into.beta = e.beta;
  into.rounding = e.rounding;
}

// The layout a window op's native kernel reads and writes: NHWC inside
// convert-layout's regions, NCHW (the imported graph's) elsewhere.
enum class Layout { Nhwc, Nchw };

// A window op's layout with its spatial dims, for descriptions: "nhwc", "ncw" (1-D), "nchw", "ncdhw" (3-D).
std::string layoutName(Layout layout, size_t spatialDims) {
  if (layout == Layout::Nhwc) return "nhwc";
  return spatialDims == 1 ? "ncw" : spatialDims == 3 ? "ncdhw" : "nchw";
}

// The window rows and columns of a convolution that some output pixel reads inside its input; the others read
// only padding. A dilated conv over a small image has such rows: DeepLabV3's ASPP convs at dilation 24 and 36 over
// a 16x16 image read inside at their centre cell alone, and computed the 8 other cells' zeros (4.5x ORT's time).
struct WindowCrop {
  int64_t R = 1, S = 1;    // the weights' window
  int64_t r0 = 0, s0 = 0;  // the first row and column kept
};

// g cropped to the window cells some output reads inside (a 1x1 window at dilation 1 when only the centre is
// left, so that a pointwise conv runs as one); the crop it took, for the weights.
std::pair<ukernels::ConvGeometry, WindowCrop> cropToInside(ukernels::ConvGeometry g) {
  WindowCrop crop{g.R, g.S, 0, 0};
  const auto [r0, r1] = insideTaps(g.R, g.H, g.OH, g.strideH, g.padTop, g.dilH);
  const auto [s0, s1] = insideTaps(g.S, g.W, g.OW, g.strideW, g.padLeft, g.dilW);
  // Kept whole where no cell is inside (all padding: the bias) or the crop would start the window inside the image.
  if (r1 <= r0 || s1 <= s0 || g.padTop < r0 * g.dilH || g.padLeft < s0 * g.dilW) return {g, crop};
  crop.r0 = r0, crop.s0 = s0;
  g.R = r1 - r0, g.S = s1 - s0, g.padTop -= r0 * g.dilH, g.padLeft -= s0 * g.dilW;
  if (g.R == 1) g.dilH = 1;
  if (g.S == 1) g.dilW = 1;
  return {g, crop};
}

class ConvKernel : public NativeKernel {
 public:
  ConvKernel(ukernels::ConvGeometry g, const Value* weight, Layout layout, size_t spatialDims)
      : weight_(weight), layout_(layout), layoutName_(layoutName(layout, spatialDims)) {
    std::tie(g_, crop_) = cropToInside(g);
  }
  ~ConvKernel() override {
    if (packs() && !packed_.empty()) ukernels::unregisterConstant(packed_.data());
  }
  void prepare() override {
    if (layout_ == Layout::Nhwc && inputTable_.empty()) inputTable_ = ukernels::convInputTable(g_);
    if (!weight_->isConstant() || !packed_.empty()) return;
    packed_ = weightsAsRead(weight_->constant().data<float>());
    if (packs()) ukernels::registerConstant(packed_.data(), packed_.size() * sizeof(float));  // panels packed once
  }
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    ukernels::ConvEpilogue e = epilogue_;
    e.bias = in.size() > 2 && in[2].defined() ? in[2].data<float>() : nullptr;
    if (residual_) e.residual = in.at(3).data<float>();
    // The weights as the kernel reads them: OIHW, cropped or packed (at run time when they are not a constant).
    std::vector<float> now;
    if (packed_.empty() && (packs() || cropped())) now = weightsAsRead(in[1].data<float>());
    const float* w = !packed_.empty() ? packed_.data() : !now.empty() ? now.data() : in[1].data<float>();
    if (layout_ == Layout::Nchw) return ukernels::convNchw(g_, in[0].data<float>(), w, e, out.data<float>());
    ukernels::convNhwc(g_, in[0].data<float>(), w, e, out.data<float>(),
                       inputTable_.empty() ? nullptr : inputTable_.data());
  }
  std::string describe() const override {
    std::string d = (g_.depthwise() ? "depthwise conv " : g_.group > 1 ? "grouped conv " : "conv ") + layoutName_ +
                    (g_.pointwise() ? " 1x1" : "") + " (" + ukernels::convMethod(g_, layout_ == Layout::Nhwc) + ")";
    if (cropped()) d += " cropped from " + std::to_string(crop_.R) + "x" + std::to_string(crop_.S);
    return d + epilogueDescription(residual_, epilogue_);
  }
  bool fuse(const FusedEpilogue& e) override {
    if (e.bias) return false;  // a conv has its own
    residual_ = e.residual != nullptr;
    setClampAndActivation(e, epilogue_);
    return true;
  }

 private:
  bool packs() const { return ukernels::convPacksWeights(g_, layout_ == Layout::Nhwc); }
  bool cropped() const { return g_.R != crop_.R || g_.S != crop_.S; }
  // OIHW (OIDHW) weights cropped to g_'s window, then packed when the kernel reads them packed.
  std::vector<float> weightsAsRead(const float* oihw) const {
    std::vector<float> kept;
    if (cropped()) {
      const int64_t filters = g_.K * (g_.C / g_.group) * g_.T;  // [filters, R, S] windows
      kept.reserve(size_t(filters * g_.R * g_.S));
      for (int64_t f = 0; f < filters; ++f)
        for (int64_t r = 0; r < g_.R; ++r) {
          const float* row = oihw + (f * crop_.R + crop_.r0 + r) * crop_.S + crop_.s0;
          kept.insert(kept.end(), row, row + g_.S);
        }
      oihw = kept.data();
    }
    if (packs()) return ukernels::packConvWeights(g_, oihw);
    return cropped() ? kept : std::vector<float>();
  }

  ukernels::ConvGeometry g_;  // cropped to the window cells read inside (cropToInside)
  WindowCrop crop_;
  const Value* weight_;
  Layout layout_;
  std::string layoutName_;
  std::vector<float> packed_;  // the constant weights as read, when not the constant itself
  std::vector<int64_t> inputTable_;  // convInputTable, empty when the conv reads none
  ukernels::ConvEpilogue epilogue_;  // the fused clamp (bias and residual come with the inputs)
  bool residual_ = false;            // inputs[3] is added to the result
};

class PoolKernel : public NativeKernel {
 public:
  PoolKernel(ukernels::ConvGeometry g, std::string op, ukernels::PoolKind kind, Layout layout, size_t spatialDims)
      : g_(g), op_(std::move(op)), kind_(kind), layout_(layout), layoutName_(layoutName(layout, spatialDims)) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    const float* x = in[0].data<float>();
    float* y = out.data<float>();
    const bool nhwc = layout_ == Layout::Nhwc;
    if (op_ == "GlobalAveragePool")
      nhwc ? ukernels::globalAveragePoolNhwc(g_.N, g_.H * g_.W, g_.C, x, y)
           : ukernels::globalAveragePoolNchw(g_.N, g_.C, g_.H * g_.W, x, y);
    else if (!g_.planar())
      ukernels::poolNcdhw(g_, kind_, x, y);
    else
      nhwc ? ukernels::poolNhwc(g_, kind_, x, y) : ukernels::poolNchw(g_, kind_, x, y);
  }
  std::string describe() const override { return op_ + " " + layoutName_; }

 private:
  ukernels::ConvGeometry g_;  // GlobalAveragePool: H is every spatial dim, W 1
  std::string op_;
  ukernels::PoolKind kind_;
  Layout layout_;
  std::string layoutName_;
};

// ConvTranspose, 2-D NCHW: one SGEMM per image and group, then col2im over the bias (ukernels/ConvTranspose.h).
class ConvTransposeKernel : public NativeKernel {
 public:
  explicit ConvTransposeKernel(ukernels::ConvGeometry g) : g_(g) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    ukernels::convTransposeNchw(g_, in[0].data<float>(), in[1].data<float>(),
                                in.size() > 2 && in[2].defined() ? in[2].data<float>() : nullptr, out.data<float>());
  }
  std::string describe() const override { return "ConvTranspose nchw (sgemm + col2im)"; }

 private:
  ukernels::ConvGeometry g_;
};

std::unique_ptr<NativeKernel> matchConvTranspose(const Node& node, const std::vector<const Value*>& outer,
                                                 std::string* why) {
  const Value* x = outer.empty() ? nullptr : outer[0];
  const Value* w = outer.size() > 1 ? outer[1] : nullptr;
  const Value* b = outer.size() > 2 ? outer[2] : nullptr;
  if (!isStaticF32(x) || !isStaticF32(w) || (b && !isStaticF32(b)) || !isStaticF32(node.output(0)) ||
      x->shape().rank() != 4 || w->shape().rank() != 4)
    return noNative(why, "ConvTranspose not f32, static and 2-D");
  const std::vector<int64_t> xs = x->shape().staticDims(), ws = w->shape().staticDims(),
                             ys = node.output(0)->shape().staticDims();
  ukernels::ConvGeometry g;
  g.N = xs[0], g.C = xs[1], g.H = xs[2], g.W = xs[3], g.K = ys[1], g.OH = ys[2], g.OW = ys[3];
  g.group = node.attrInt("group", 1);
  if (g.group < 1 || g.C % g.group || ws[0] != g.C || ws[1] * g.group != g.K)
    return noNative(why, "ConvTranspose weights do not match the channels and group");
  TransposeGeometry geo;
  try {
    geo = resolveConvTranspose(node, {g.H, g.W}, {ws[2], ws[3]});
  } catch (const Error& e) {
    return noNative(why, e.what());
  }
  const Window& win = geo.window;
  g.R = win.kernel[0], g.S = win.kernel[1], g.strideH = win.strides[0], g.strideW = win.strides[1];
  g.dilH = win.dilations[0], g.dilW = win.dilations[1], g.padTop = win.pads[0], g.padLeft = win.pads[1];
  return std::make_unique<ConvTransposeKernel>(g);
}

// Softmax / LogSoftmax / LayerNormalization over the trailing dims from `axis`: `rows` rows of `cols`. Softmax /
// LogSoftmax over an axis before the last, and Hardmax: across `cols` lanes of `inner` elements.
class RowKernel : public NativeKernel {
 public:
  RowKernel(std::string op, int64_t rows, int64_t cols, int64_t inner, float eps)
      : op_(std::move(op)), layerNorm_(op_ == "LayerNormalization"),
        kind_(op_ == "Hardmax"      ? ukernels::SoftmaxKind::Hardmax
              : op_ == "LogSoftmax" ? ukernels::SoftmaxKind::LogSoftmax
                                    : ukernels::SoftmaxKind::Softmax),
        rows_(rows), cols_(cols), inner_(inner), eps_(eps) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    using K = ukernels::SoftmaxKind;
    if (layerNorm_)
      ukernels::layerNormRows(rows_, cols_, in[0].data<float>(), in[1].data<float>(),
                              in.size() > 2 && in[2].defined() ? in[2].data<float>() : nullptr, eps_, out.data<float>());
    else if (inner_ > 1 || kind_ == K::Hardmax)
      ukernels::softmaxAcross(kind_, rows_, cols_, inner_, in[0].data<float>(), out.data<float>());
    else
      ukernels::softmaxRows(rows_, cols_, in[0].data<float>(), out.data<float>(), kind_ == K::LogSoftmax);
  }
  std::string describe() const override { return op_ + (inner_ > 1 ? " across rows" : " rows"); }

 private:
  std::string op_;
  bool layerNorm_;
  ukernels::SoftmaxKind kind_;  // when not layerNorm_
  int64_t rows_, cols_, inner_;
  float eps_;
};

// A transpose moves bits: 4-byte elements of any type go through the f32 kernel, the other sizes (an int8 or
// int64 tensor the layout pass moved) one element at a time.
class TransposeKernel : public NativeKernel {
 public:
  TransposeKernel(size_t elementBytes, std::vector<int64_t> inShape, std::vector<int64_t> perm)
      : bytes_(elementBytes), in_(std::move(inShape)), perm_(std::move(perm)) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    const void* x = in[0].rawData();
    void* y = out.rawData();
    switch (bytes_) {
      case 4: return ukernels::transposeF32(static_cast<const float*>(x), static_cast<float*>(y), in_, perm_);
      case 1: return elementwise<uint8_t>(x, y);
      case 2: return elementwise<uint16_t>(x, y);
      default: return elementwise<uint64_t>(x, y);
    }
  }
  std::string describe() const override { return bytes_ == 4 ? "transpose" : "transpose (element by element)"; }

 private:
  template <typename T>
  void elementwise(const void* src, void* dst) const {
    const std::vector<int64_t> strides = ukernels::denseStrides(in_);
    std::vector<int64_t> ys, read;  // y's dims and the x stride each walks
    for (int64_t p : perm_) ys.push_back(in_[size_t(p)]), read.push_back(strides[size_t(p)]);
    const T* x = static_cast<const T*>(src);
    T* y = static_cast<T*>(dst);
    forEachBroadcast(ys, {read}, [&](int64_t i, const std::vector<int64_t>& at) { y[i] = x[at[0]]; });
  }

  size_t bytes_;
  std::vector<int64_t> in_, perm_;
};

// The row kernel of a Softmax/LogSoftmax/LayerNormalization node (or a
// fuse-reductions region holding just one).
std::unique_ptr<NativeKernel> matchRows(const Node& node, const std::vector<const Value*>& outer, std::string* why);

std::unique_ptr<NativeKernel> matchRows(const Node& node, const std::vector<const Value*>& outer, std::string* why) {
  const Node* op = &node;
  if (auto region = FusedRegion::of(node)) {
    if (region->kind() != RegionKind::Reduction) return noNative(why, "not a reduction region");
    const Graph& body = region->body();
    if (body.nodes().size() != 1) return noNative(why, "reduction region of several nodes");
    op = body.nodes()[0].get();
    if (body.outputs().size() != 1 || body.outputs()[0] != op->output(0)) return noNative(why, "region outputs");
  }
  if (op->op() != "Softmax" && op->op() != "LogSoftmax" && op->op() != "Hardmax" && op->op() != "LayerNormalization")
    return noNative(why, op->op() + " has no row kernel");
  for (size_t i = 1; i < op->numOutputs(); ++i)
    if (op->output(i)) return noNative(why, "LayerNormalization with mean/inv-std-dev outputs");
  const Value* x = outer.empty() ? nullptr : outer[0];
  if (!isStaticF32(x) || !isStaticF32(node.output(0)) || x->shape().rank() == 0) return noNative(why, "not f32/static");
  std::vector<int64_t> xs = x->shape().staticDims();
  int64_t rank = int64_t(xs.size()), axis = op->attrInt("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return noNative(why, "bad axis");
  bool layerNorm = op->op() == "LayerNormalization";
  int64_t cols = 1, rows = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? rows : i == axis || layerNorm ? cols : inner) *= xs[size_t(i)];
  if (layerNorm)
    for (size_t i = 1; i < 3 && i < outer.size(); ++i)
      if (outer[i] && (!isStaticF32(outer[i]) || outer[i]->shape().numel() != std::optional<int64_t>(cols)))
        return noNative(why, "LayerNormalization scale/bias do not cover the normalized dims");
  return std::make_unique<RowKernel>(op->op(), rows, cols, inner, op->attrFloat("epsilon", 1e-5f));
}

// A MatMul of rows [..., M, K] (leading dims flattened) by a 2-D B [K, N], or a Gemm (transA 0, alpha 1; B
// transposed or not; C absent or N values with beta 1): one SGEMM, its weights packed once when constant
// (Sgemm.h's registerConstant). As an epilogue region's anchor only: the epilogue after it then runs in place,
// split over the threads, where the generated contraction ran it after the SGEMM on one thread.
class GemmKernel : public NativeKernel {
 public:
  GemmKernel(std::string op, int64_t M, int64_t N, int64_t K, bool transB, bool hasBias)
      : op_(std::move(op)), M_(M), N_(N), K_(K), transB_(transB), hasBias_(hasBias) {}
  void run(const std::vector<Tensor>& in, Tensor& out) const override {
    ukernels::ConvEpilogue ce = epilogue_;
    ce.bias = hasBias_ ? in.at(2).data<float>() : nullptr;
    if (residual_) ce.residual = in.at(3).data<float>();
    const ukernels::GemmEpilogue e = ukernels::gemmEpilogue(ce, /*channelsPerColumn=*/true);
    ukernels::sgemm(false, transB_, M_, N_, K_, 1.f, in[0].data<float>(), K_, in[1].data<float>(), transB_ ? K_ : N_,
                    0.f, out.data<float>(), N_, &e);
  }
  std::string describe() const override {
    return (op_ == "Gemm" ? "gemm" : "matmul") + std::string(" (sgemm)") + (hasBias_ ? " + bias" : "") +
           epilogueDescription(residual_, epilogue_);
  }
  // A bias (unless a Gemm's C is one), the residual and the clamp go into the SGEMM's register tiles, the
  // activation over each finished block while it is in cache.
  bool fuse(const FusedEpilogue& e) override {
    if (e.bias && hasBias_) return false;
    hasBias_ = hasBias_ || e.bias;
    residual_ = e.residual != nullptr;
    setClampAndActivation(e, epilogue_);
    return true;
  }

 private:
  std::string op_;
  int64_t M_, N_, K_;
  bool transB_, hasBias_, residual_ = false;
  ukernels::ConvEpilogue epilogue_;  // the fused clamp and activation (bias and residual come with the inputs)
};

std::unique_ptr<NativeKernel> matchGemm(const Node& node, const std::vector<const Value*>& outer, std::string* why) {
  const Value* a = outer.size() > 0 ? outer[0] : nullptr;
  const Value* b = outer.size() > 1 ? outer[1] : nullptr;
  const Value* y = node.output(0);
  if (!isStaticF32(a) || !isStaticF32(b) || !isStaticF32(y) || b->shape().rank() != 2 || a->shape().rank() < 2)
    return noNative(why, node.op() + " not f32 and static with a 2-D B");
  const std::vector<int64_t> as = a->shape().staticDims(), bs = b->shape().staticDims();
  const bool gemm = node.op() == "Gemm", transB = gemm && node.attrInt("transB", 0) != 0;
  if (gemm && (a->shape().rank() != 2 || node.attrInt("transA", 0) != 0 || node.attrFloat("alpha", 1.f) != 1.f))
    return noNative(why, "Gemm with transA or alpha");
  const int64_t K = as.back(), N = transB ? bs[0] : bs[1];
  if ((transB ? bs[1] : bs[0]) != K) return noNative(why, node.op() + " operands do not agree");
  const Value* c = gemm && outer.size() > 2 ? outer[2] : nullptr;
  if (c && (!isStaticF32(c) || c->shape().numel() != std::optional<int64_t>(N) || c->shape().staticDims().back() != N ||
            node.attrFloat("beta", 1.f) != 1.f))
    return noNative(why, "Gemm C not one value per column");
  return std::make_unique<GemmKernel>(node.op(), y->shape().numel().value_or(0) / std::max<int64_t>(N, 1), N, K, transB,
                                      c != nullptr);
}

// The scalar value of a constant, if `v` is one.
std::optional<float> constantScalar(const Value* v) {
  if (!v || !v->isConstant() || v->constant().numel() != 1) return std::nullopt;
  return float(v->constant().elementAsDouble(0));
}

}  // namespace

std::optional<FusedEpilogue> matchFusedEpilogue(const Node& region, const Node& anchor,
                                                const std::function<const Value*(const Value*)>& resolve) {
  auto fused = FusedRegion::of(region);
  FRICTION_CHECK(fused, "matchFusedEpilogue: " + region.describe() + " is not a Fused region");
  const Graph& body = fused->body();
  auto regionOperand = [&](const Value* v) { return fused->operandFor(v); };
  FusedEpilogue e;
  bool clamped = false;
  const Value* prev = anchor.output(0);
  const auto& nodes = body.nodes();
  const UseIndex bodyUses(body);
  auto constantOf = [&](const Value* v) -> const Tensor* {
    const Value* operand = regionOperand(v);
    const Value* outer = resolve(operand ? operand : v);
    return outer && outer->isConstant() ? &outer->constant() : nullptr;
  };
  // Whether `pattern` (its result last) is the body's next nodes from i, in any order.
  auto nextNodesAre = [&](const std::vector<Node*>& pattern, size_t i) {
    if (pattern.empty() || i + pattern.size() > nodes.size()) return false;
    return std::all_of(nodes.begin() + long(i), nodes.begin() + long(i + pattern.size()), [&](const auto& n) {
      return std::find(pattern.begin(), pattern.end(), n.get()) != pattern.end();
    });
  };
  // An operand of one value per element of v's last dim (a Linear layer's bias): [N] or [1, ..., 1, N].
  auto perLastDim = [](const Value* operand, const Value* v) {
    if (!isStaticF32(operand) || !isStaticF32(v) || v->shape().rank() == 0) return false;
    const std::vector<int64_t> os = operand->shape().staticDims(), vs = v->shape().staticDims();
    return !os.empty() && os.size() <= vs.size() && os.back() == vs.back() &&
           std::all_of(os.begin(), os.end() - 1, [](int64_t d) { return d == 1; });
  };
  bool roundedBefore = false, roundedAfter = false;  // a ReducePrecision before the activation, after it
  // Takes a ReducePrecision's type as the chain's one rounding; false if the chain rounds to another.
  auto roundsTo = [&](const Node& rounding) {
    const auto r = dtypeFromOnnxCode(rounding.attrInt("to", 0), rounding.describe()) == DType::F16
                       ? ukernels::Rounding::F16
                       : ukernels::Rounding::BF16;
    if (e.rounding != ukernels::Rounding::None && e.rounding != r) return false;
    e.rounding = r;
    return true;
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = *nodes[i];
    if (&n == &anchor) continue;
    const bool activated = e.activation != ukernels::Activation::None;
    if (n.op() == "ReducePrecision" && n.input(0) == prev && bodyUses.soleUser(prev)) {
      if (!roundsTo(n)) return std::nullopt;
      (activated ? roundedAfter : roundedBefore) = true;
      prev = n.output(0);
      continue;
    }
    if (n.numOutputs() != 1 || n.numInputs() == 0 || activated) return std::nullopt;
    // SiLU and GELU: prev's uses are the pattern's, the body's next nodes. A SiLU's rounded gate is the
    // chain's rounding.
    if (std::vector<Node*> silu = matchSilu(bodyUses, prev); nextNodesAre(silu, i)) {
      const bool roundedGate = silu.size() == 3;
      if (roundedGate && !roundsTo(*silu[1])) return std::nullopt;
      e.activation = roundedGate ? ukernels::Activation::SiluRoundedGate : ukernels::Activation::Silu;
      prev = silu.back()->output(0);
      i += silu.size() - 1;
      continue;
    }
    if (GeluMatch gelu = matchErfGelu(bodyUses, prev, constantOf); gelu.exact && nextNodesAre(gelu.nodes, i)) {
      e.activation = ukernels::Activation::Gelu;
      prev = gelu.nodes.back()->output(0);
      i += gelu.nodes.size() - 1;
      continue;
    }
    if (!bodyUses.soleUser(prev)) return std::nullopt;
    const Value* addend = n.op() != "Add" || n.numInputs() != 2 ? nullptr
                          : n.input(0) == prev                  ? n.input(1)
                          : n.input(1) == prev                  ? n.input(0)
                                                                : nullptr;
    const Value* addendOperand = regionOperand(addend);
    if (n.op() == "Sigmoid" && n.input(0) == prev) {
      e.activation = ukernels::Activation::Sigmoid;
    } else if ((n.op() == "HardSigmoid" || n.op() == "HardSwish") && n.input(0) == prev) {
      const bool swish = n.op() == "HardSwish";
      e.activation = swish ? ukernels::Activation::HardSwish : ukernels::Activation::HardSigmoid;
      e.alpha = swish ? 1.f / 6 : n.attrFloat("alpha", 0.2f);
      e.beta = swish ? 0.5f : n.attrFloat("beta", 0.5f);
    } else if (clamped) {
      return std::nullopt;
    } else if (roundedBefore && addendOperand) {
      return std::nullopt;  // the kernels add before they round
    } else if (addendOperand && !e.residual && addendOperand->type() == prev->type() &&
               addend->type() == n.output(0)->type()) {
      e.residual = addendOperand;
    } else if (addendOperand && !e.residual && !e.bias && perLastDim(addendOperand, prev) &&
               n.output(0)->type() == prev->type()) {
      e.bias = addendOperand;
    } else if (n.op() == "Relu" && n.input(0) == prev) {
      e.lo = 0.f, clamped = true;
    } else if (n.op() == "Clip" && n.input(0) == prev && !n.hasAttr("min") && !n.hasAttr("max")) {
      for (size_t i = 1; i < n.numInputs(); ++i) {
        if (!n.input(i)) continue;
        const Value* operand = regionOperand(n.input(i));
        auto bound = constantScalar(resolve(operand ? operand : n.input(i)));
        if (!bound) return std::nullopt;
        (i == 1 ? e.lo : e.hi) = *bound;
      }
      clamped = true;
    } else {
      return std::nullopt;
    }
    prev = n.output(0);
  }
  if (body.outputs().size() != 1 || body.outputs()[0] != prev || prev == anchor.output(0)) return std::nullopt;
  // The kernels round after the clamp and around the activation: exact when the chain rounded before any
  // activation and after it, and the clamp's bounds are of the half type (a clamp and a rounding commute then).
  if (e.rounding != ukernels::Rounding::None &&
      (!roundedBefore || (e.activation != ukernels::Activation::None && !roundedAfter) ||
       ukernels::roundedTo(e.rounding, e.lo) != e.lo || ukernels::roundedTo(e.rounding, e.hi) != e.hi))
    return std::nullopt;
  return e;
}

std::unique_ptr<NativeKernel> matchNativeAnchor(const Node& anchor, const std::vector<const Value*>& outer,
                                                bool ukernels) {
  if (auto k = matchNative(anchor, outer, nullptr, ukernels)) return k;
  if (ukernels && (anchor.op() == "MatMul" || anchor.op() == "Gemm")) return matchGemm(anchor, outer, nullptr);
  return nullptr;
}

std::unique_ptr<NativeKernel> matchNative(const Node& node, std::vector<const Value*> outer, std::string* why,
                                          bool convolutions) {
  if (outer.empty()) outer.assign(node.inputs().begin(), node.inputs().end());
  if (node.op() == "Transpose") {
    const Value* x = outer.empty() ? nullptr : outer[0];
    const size_t bytes = x ? dtypeSize(x->dtype()) : 0;
    if (!x || !x->shape().isStatic() || !node.output(0)->shape().isStatic() || (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8))
      return noNative(why, "Transpose of a dynamic shape");
    std::vector<int64_t> xs = x->shape().staticDims(), perm;
    if (node.hasAttr("perm")) {
      perm = node.attrInts("perm");
    } else {
      for (size_t i = xs.size(); i-- > 0;) perm.push_back(int64_t(i));  // ONNX default: reverse
    }
    if (perm.size() != xs.size()) return noNative(why, "Transpose perm does not match the rank");
    return std::make_unique<TransposeKernel>(bytes, xs, perm);
  }
  // Window ops: in a convert-layout region NHWC, on their own NCHW.
  static const std::set<std::string> windowOps = {"Conv", "MaxPool", "AveragePool", "GlobalAveragePool"};
  auto region = FusedRegion::of(node);
  if (!region && node.op() == "ConvTranspose") {
    if (!convolutions) return noNative(why, "convolutions are compiled (ukernels=off)");
    return matchConvTranspose(node, outer, why);
  }
  if (!region) {
    if (auto k = matchTensorOp(node, outer)) return k;
    if (auto k = matchTypedOp(node, outer)) return k;
    if (auto k = matchIndexOp(node, outer)) return k;
    if (isRecurrentOp(node.op())) return matchRecurrentOp(node, outer, why);
  }
  if ((!region && !windowOps.count(node.op())) || (region && region->kind() == RegionKind::Reduction))
    return matchRows(node, outer, why);
  const Node* op = region ? region->nhwcOp() : &node;
  if (!op) return noNative(why, "not a convert-layout nhwc region");
  if (region && op->op() == "BatchNormalization") return matchBatchNormNhwc(*op, outer, why);
  const Layout layout = region ? Layout::Nhwc : Layout::Nchw;
  if (!windowOps.count(op->op())) return noNative(why, op->op() + " has no native nhwc kernel");
  const Value* x = outer.empty() ? nullptr : outer[0];
  const Value* y = node.output(0);
  if (!isStaticF32(x) || !isStaticF32(y)) return noNative(why, op->op() + " not f32 and static");
  const size_t rank = size_t(x->shape().rank());
  if (size_t(y->shape().rank()) != rank || rank < 3 || rank > 5 || (layout == Layout::Nhwc && rank != 4))
    return noNative(why, op->op() + " over other than 1 to 3 spatial dims");
  const std::vector<int64_t> xs = x->shape().staticDims(), ys = y->shape().staticDims();
  const size_t spatialDims = rank - 2;
  // The spatial dims in order, and the geometry's fields they map to from the innermost: W, H, D (1-D is W alone).
  std::vector<int64_t> inSpatial, outSpatial;
  ukernels::ConvGeometry g;
  g.N = xs[0];
  if (layout == Layout::Nhwc) {
    inSpatial = {xs[1], xs[2]}, outSpatial = {ys[1], ys[2]}, g.C = xs[3], g.K = ys[3];
  } else {
    inSpatial.assign(xs.begin() + 2, xs.end()), outSpatial.assign(ys.begin() + 2, ys.end()), g.C = xs[1], g.K = ys[1];
  }
  if (op->op() == "GlobalAveragePool") {  // a mean over every spatial pixel
    g.H = x->shape().numel().value_or(0) / std::max<int64_t>(g.N * g.C, 1);
    return std::make_unique<PoolKernel>(g, op->op(), ukernels::PoolKind::Average, layout, spatialDims);
  }
  std::vector<int64_t> kernel, ws;  // ws: the Conv's OIHW weight shape
  if (op->op() == "Conv" && !convolutions) return noNative(why, "convolutions are compiled (ukernels=off)");
  if (op->op() == "Conv") {
    if (outer.size() < 2 || !isStaticF32(outer[1]) || (outer.size() > 2 && outer[2] && !isStaticF32(outer[2])))
      return noNative(why, "conv weights not f32/static");
    ws = outer[1]->shape().staticDims();
    if (ws.size() != rank) return noNative(why, "conv weights not of the input's rank");
    kernel.assign(ws.begin() + 2, ws.end());
  }
  Window w;
  try {
    w = resolveWindow(*op, inSpatial, kernel);
  } catch (const Error& e) {
    return noNative(why, e.what());
  }
  struct Dim {
    int64_t *in, *out, *taps, *stride, *dilation, *pad;
  };
  const Dim dims[3] = {{&g.W, &g.OW, &g.S, &g.strideW, &g.dilW, &g.padLeft},
                       {&g.H, &g.OH, &g.R, &g.strideH, &g.dilH, &g.padTop},
                       {&g.D, &g.OD, &g.T, &g.strideD, &g.dilD, &g.padFront}};
  for (size_t i = 0; i < spatialDims; ++i) {
    const size_t a = spatialDims - 1 - i;  // the i-th spatial dim from the innermost
    *dims[i].in = inSpatial[a], *dims[i].out = outSpatial[a], *dims[i].taps = w.kernel[a];
    *dims[i].stride = w.strides[a], *dims[i].dilation = w.dilations[a], *dims[i].pad = w.pads[a];
  }
  if (op->op() == "Conv") {
    g.group = op->attrInt("group", 1);
    if (g.group < 1 || g.C % g.group || g.K % g.group || ws[0] != g.K || ws[1] * g.group != g.C)
      return noNative(why, "Conv weights do not match the channels and group");
    if (!g.planar() && g.group != 1) return noNative(why, "grouped 3-D Conv has no native kernel");
    return std::make_unique<ConvKernel>(g, outer[1], layout, spatialDims);
  }
  if (op->op() == "MaxPool") {
    if (op->numOutputs() > 1 && op->output(1)) return noNative(why, "MaxPool with indices");
    return std::make_unique<PoolKernel>(g, op->op(), ukernels::PoolKind::Max, layout, spatialDims);
  }
  if (op->op() == "AveragePool") {
    bool countPad = op->attrInt("count_include_pad", 0) != 0;
    if (countPad && w.ceilMode) return noNative(why, "AveragePool count_include_pad with ceil_mode");
    return std::make_unique<PoolKernel>(
        g, op->op(), countPad ? ukernels::PoolKind::AverageCountPad : ukernels::PoolKind::Average, layout,
        spatialDims);
  }
  return noNative(why, op->op() + " has no native nhwc kernel");  // not reached: `supported` above
}

}  // namespace friction::codegen
