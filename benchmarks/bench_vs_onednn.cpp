// Kernel speed against oneDNN (issue 5's performance targets), in one process:
//  - f32 GEMM 1024^3 on one thread: friction's `cpu` and `interp` backends
//    running a one-node MatMul graph vs dnnl_sgemm and the oneDNN matmul primitive;
//  - ResNet-50 (or, with --shapes mobilenetv2, MobileNetV2: 1x1 and depthwise; --shapes regnetx,
//    RegNetX-400MF: grouped and 1x1; --shapes stems: first convolutions on RGB images; --shapes googlenet:
//    3x3 convs into output channels no multiple of 64) convolution shapes at
//    --batch (default 1) on --threads threads (default 2):
//    friction `cpu`, `interp` and `onednn` on a one-Conv graph, NCHW and NHWC
//    (a convert-layout region), vs the oneDNN convolution primitive with
//    format_tag::any everywhere (src/weights reordered outside the timed region)
//    and with plain NCHW/NHWC activations (weights `any`).
// Each cell: one warm-up, then repetitions until --budget seconds (median of at
// least 3; --reps fixes the count). Prints GFLOP/s and friction/oneDNN ratios.
// Usage: bench_vs_onednn [--threads N] [--gemm-threads N] [--reps R] [--budget S]
//                        [--only gemm|conv] [--shapes resnet50|mobilenetv2|regnetx|stems|googlenet] [--batch N] [--json]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <string>
#include <vector>

#include "codegen/Registration.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "passes/PassManager.h"
#include "runtime/Backend.h"
#include "vendor_bridge/Bridges.h"

using namespace friction;
using dnnl::memory;
using Tag = memory::format_tag;

namespace {

struct Args {
  int threads = 2, gemmThreads = 1, reps = 0;
  int64_t batch = 1;
  double budget = 0.25;
  std::string only, shapes = "resnet50";
  bool json = false;
} args;

struct Timing {
  double medianMs = 0;
  int reps = 0;
};

// One warm-up, then repetitions (adaptive to the budget unless --reps).
Timing timeIt(const std::function<void()>& f) {
  auto now = [] { return std::chrono::steady_clock::now(); };
  auto t0 = now();
  f();
  double first = std::chrono::duration<double>(now() - t0).count();
  int reps = args.reps > 0 ? args.reps : std::clamp(int(args.budget / std::max(first, 1e-6)), 3, 1000);
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    auto s = now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(now() - s).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], reps};
}

Tensor randomTensor(const std::vector<int64_t>& shape, uint64_t seed) {
  Tensor t(DType::F32, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

struct Cell {
  std::string group, shape, impl;
  double gflop = 0, ms = 0, gflops = 0;
  int reps = 0;
  std::string note;
};
std::vector<Cell> cells;

void record(const std::string& group, const std::string& shape, const std::string& impl, double gflop, Timing t,
            const std::string& note = "") {
  Cell c{group, shape, impl, gflop, t.medianMs, gflop / (t.medianMs * 1e-3), t.reps, note};
  cells.push_back(c);
  if (!args.json)
    std::fprintf(stderr, "  %-34s %-22s %9.3f ms %8.2f GFLOP/s  (%d reps)%s\n", shape.c_str(), impl.c_str(), c.ms,
                 c.gflops, c.reps, note.c_str());
}

// Times a friction backend on `g` (compile outside the timed region).
void timeBackend(const std::string& group, const std::string& shape, const std::string& spec, const std::string& label,
                 const Graph& g, const std::vector<Tensor>& inputs, double gflop) {
  try {
    auto model = createBackend(spec)->compile(g);
    Timing t = timeIt([&] { model->run(inputs); });
    std::string d = model->description();
    std::string note;
    if (d.find("fallback") != std::string::npos) {
      size_t at = d.find(" nodes on interp fallback");
      size_t start = d.rfind(", ", at);
      if (at != std::string::npos && start != std::string::npos && d.substr(start + 2, at - start - 2) != "0")
        note = "  [" + d.substr(start + 2, at - start - 2) + " nodes on interp fallback]";
    }
    record(group, shape, label, gflop, t, note);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "  %-34s %-22s failed: %.200s\n", shape.c_str(), label.c_str(), e.what());
  }
}

void gemm() {
  const int64_t M = 1024, N = 1024, K = 1024;
  omp_set_num_threads(args.gemmThreads);
  double gflop = 2.0 * double(M) * double(N) * double(K) * 1e-9;
  std::string shape = "1024x1024x1024";
  if (!args.json) std::fprintf(stderr, "GEMM f32 %s, %d thread(s)\n", shape.c_str(), args.gemmThreads);
  Graph g;
  GraphBuilder b(g);
  Value* a = b.input("a", {DType::F32, {M, K}});
  Value* w = b.input("b", {DType::F32, {K, N}});
  b.output(b.op("MatMul", {a, w}));
  std::vector<Tensor> in = {randomTensor({M, K}, 1), randomTensor({K, N}, 2)};
  timeBackend("gemm", shape, "cpu", "friction cpu", g, in, gflop);
  timeBackend("gemm", shape, "interp", "friction interp", g, in, gflop);
  std::vector<float> C(size_t(M * N));
  const float* A = in[0].data<float>();
  const float* B = in[1].data<float>();
  record("gemm", shape, "dnnl_sgemm", gflop,
         timeIt([&] { dnnl_sgemm('N', 'N', M, N, K, 1.f, A, K, B, N, 0.f, C.data(), N); }));
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  memory::desc aMd({M, K}, memory::data_type::f32, Tag::ab), bMd({K, N}, memory::data_type::f32, Tag::ab),
      cMd({M, N}, memory::data_type::f32, Tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(aMd, bMd, cMd), eng);
  dnnl::matmul mm(pd);
  memory am(aMd, eng, const_cast<float*>(A)), bm(bMd, eng, const_cast<float*>(B)), cm(cMd, eng, C.data());
  record("gemm", shape, "dnnl matmul", gflop, timeIt([&] {
           mm.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
           s.wait();
         }));
}

struct ConvShape {
  int64_t hw, cin, cout, k, stride;
  int64_t groups = 1;  // 0: depthwise (group = cin = cout)
  int64_t group() const { return groups == 0 ? cin : groups; }
  bool depthwise() const { return groups == 0; }
};
constexpr int64_t kDepthwise = 0;

std::string convName(const ConvShape& c) {
  char b[80];
  std::snprintf(b, sizeof b, "%ldx%ldx%ldx%ld->%ld k%ld s%ld", long(args.batch), long(c.hw), long(c.hw), long(c.cin),
                long(c.cout), long(c.k), long(c.stride));
  if (c.depthwise()) return b + std::string(" dw");
  if (c.group() > 1) return b + std::string(" g") + std::to_string(c.group());
  return b;
}

// A one-Conv graph; NHWC: input and output channels-last, the conv a convert-layout region.
std::unique_ptr<Graph> convGraph(const ConvShape& c, bool nhwc, const Tensor& w) {
  auto g = std::make_unique<Graph>();
  GraphBuilder b(*g);
  int64_t pad = c.k / 2;
  std::map<std::string, Attribute> attrs = {{"kernel_shape", std::vector<int64_t>{c.k, c.k}},
                                            {"strides", std::vector<int64_t>{c.stride, c.stride}},
                                            {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                                            {"group", c.group()}};
  Value* wv = b.constant(w, "w");
  const int64_t n = args.batch;
  if (!nhwc) {
    b.output(b.op("Conv", {b.input("x", {DType::F32, {n, c.cin, c.hw, c.hw}}), wv}, attrs));
    return g;
  }
  Value* x = b.input("x", {DType::F32, {n, c.hw, c.hw, c.cin}});
  Value* t = b.op("Transpose", {x}, {{"perm", std::vector<int64_t>{0, 3, 1, 2}}});
  Value* y = b.op("Conv", {t, wv}, attrs);
  b.output(b.op("Transpose", {y}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}}));
  PipelineOptions o;
  o.passes = {"convert-layout"};
  runPipeline(*g, buildPipeline(o));
  FRICTION_CHECK(g->nodes().size() == 1 && g->nodes()[0]->op() == "Fused", "convert-layout left transposes");
  return g;
}

void conv() {
  omp_set_num_threads(args.threads);
  std::vector<ConvShape> shapes = {{56, 64, 64, 3, 1},   {56, 64, 256, 1, 1},
                                   {28, 128, 128, 3, 1}, {56, 128, 128, 3, 2}, {14, 256, 256, 3, 1},
                                   {14, 1024, 256, 1, 1}, {7, 512, 512, 3, 1}, {28, 512, 1024, 1, 2}};
  if (args.shapes == "mobilenetv2")  // the inverted residual's expand, depthwise and project convolutions
    shapes = {{112, 32, 16, 1, 1},              {112, 16, 96, 1, 1},              {112, 32, 32, 3, 1, kDepthwise},
              {112, 96, 96, 3, 2, kDepthwise},  {56, 144, 24, 1, 1},              {56, 24, 144, 1, 1},
              {56, 144, 144, 3, 1, kDepthwise}, {28, 192, 32, 1, 1},              {28, 192, 192, 3, 1, kDepthwise},
              {14, 384, 64, 1, 1},              {14, 384, 384, 3, 1, kDepthwise}, {7, 960, 160, 1, 1},
              {7, 960, 960, 3, 1, kDepthwise},  {7, 320, 1280, 1, 1}};
  else if (args.shapes == "regnetx")  // RegNetX-400MF's grouped 3x3 convs (groups of 16; each stage's first at
                                      // stride 2) and 1x1 convs, per stage
    shapes = {{112, 32, 32, 3, 2, 2}, {56, 32, 32, 3, 1, 2},   {56, 32, 32, 1, 1},     {56, 64, 64, 3, 2, 4},
              {28, 64, 64, 3, 1, 4},  {28, 64, 64, 1, 1},      {28, 160, 160, 3, 2, 10}, {14, 160, 160, 3, 1, 10},
              {14, 160, 160, 1, 1},   {14, 400, 400, 3, 2, 25}, {7, 400, 400, 3, 1, 25}, {7, 400, 400, 1, 1}};
  else if (args.shapes == "stems")  // MobileNetV3's, EfficientNet's and MobileNetV2's, ResNet's
    shapes = {{224, 3, 16, 3, 2}, {224, 3, 32, 3, 2}, {224, 3, 64, 7, 2}};
  else if (args.shapes == "googlenet")  // GoogLeNet's 3x3 branches: output channels that are no multiple of 64
    shapes = {{56, 64, 192, 3, 1},  {28, 96, 128, 3, 1},  {28, 128, 192, 3, 1}, {14, 96, 208, 3, 1},
              {14, 112, 224, 3, 1}, {14, 128, 256, 3, 1}, {14, 144, 288, 3, 1}, {14, 160, 320, 3, 1},
              {7, 192, 384, 3, 1}};
  else
    FRICTION_CHECK(args.shapes == "resnet50",
                   "--shapes: resnet50, mobilenetv2, regnetx, stems or googlenet, got '" + args.shapes + "'");
  if (!args.json)
    std::fprintf(stderr, "Conv f32 batch %ld (%s shapes), %d thread(s)\n", long(args.batch), args.shapes.c_str(), args.threads);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  for (const ConvShape& c : shapes) {
    std::string name = convName(c);
    const int64_t n = args.batch, cinPerGroup = c.cin / c.group();
    int64_t pad = c.k / 2, oh = (c.hw + 2 * pad - c.k) / c.stride + 1;
    double gflop = 2.0 * double(n * c.cout * oh * oh) * double(cinPerGroup * c.k * c.k) * 1e-9;
    Tensor w = randomTensor({c.cout, cinPerGroup, c.k, c.k}, 3);
    for (bool nhwc : {false, true}) {
      auto g = convGraph(c, nhwc, w);
      std::vector<int64_t> xs = nhwc ? std::vector<int64_t>{n, c.hw, c.hw, c.cin} : std::vector<int64_t>{n, c.cin, c.hw, c.hw};
      std::vector<Tensor> in = {randomTensor(xs, 4)};
      std::string layout = nhwc ? " NHWC" : " NCHW";
      timeBackend("conv", name, "cpu", "friction cpu" + layout, *g, in, gflop);
      timeBackend("conv", name, "interp", "friction interp" + layout, *g, in, gflop);
      timeBackend("conv", name, "onednn", "friction onednn" + layout, *g, in, gflop);
    }
    // The oneDNN convolution primitive: `any` everywhere, and plain activations.
    memory::dims src = {n, c.cin, c.hw, c.hw}, dst = {n, c.cout, oh, oh};
    const int64_t g = c.group();
    memory::dims wd = g > 1 ? memory::dims{g, c.cout / g, c.cin / g, c.k, c.k} : memory::dims{c.cout, c.cin, c.k, c.k};
    memory::dims strides = {c.stride, c.stride}, dil = {0, 0}, pads = {pad, pad};
    auto f32 = memory::data_type::f32;
    Tensor x = randomTensor({n, c.cin, c.hw, c.hw}, 4);
    for (Tag act : {Tag::any, Tag::nchw, Tag::nhwc}) {
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                        memory::desc(src, f32, act), memory::desc(wd, f32, Tag::any),
                                        memory::desc(dst, f32, act), strides, dil, pads, pads);
      dnnl::convolution_forward::primitive_desc pd(d, eng);
      auto prepared = [&](const memory::desc& want, const memory::desc& plain, void* data) {
        memory from(plain, eng, data), to(want, eng);
        dnnl::reorder(from, to).execute(s, from, to);
        s.wait();
        return to;
      };
      memory sm = prepared(pd.src_desc(), memory::desc(src, f32, Tag::nchw), x.rawData());
      memory wm = prepared(pd.weights_desc(), memory::desc(wd, f32, g > 1 ? Tag::goihw : Tag::oihw), w.rawData());
      memory dm(pd.dst_desc(), eng);
      dnnl::convolution_forward prim(pd);
      std::string label = act == Tag::any ? "dnnl conv any" : act == Tag::nchw ? "dnnl conv NCHW" : "dnnl conv NHWC";
      record("conv", name, label, gflop, timeIt([&] {
               prim.execute(s, {{DNNL_ARG_SRC, sm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, dm}});
               s.wait();
             }), "  [" + std::string(pd.impl_info_str()) + "]");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--threads") args.threads = std::stoi(next());
    else if (a == "--gemm-threads") args.gemmThreads = std::stoi(next());
    else if (a == "--reps") args.reps = std::stoi(next());
    else if (a == "--budget") args.budget = std::stod(next());
    else if (a == "--only") args.only = next();
    else if (a == "--shapes") args.shapes = next();
    else if (a == "--batch") args.batch = std::stol(next());
    else if (a == "--json") args.json = true;
    else {
      std::fprintf(stderr, "usage: bench_vs_onednn [--threads N] [--gemm-threads N] [--reps R] [--budget S] "
                           "[--only gemm|conv] [--shapes resnet50|mobilenetv2|regnetx|stems|googlenet] [--batch N] [--json]\n");
      return 2;
    }
  }
  codegen::registerCpuBackend();
  vendor::registerVendorBridges();
  const dnnl_version_t* v = dnnl_version();
  if (args.only.empty() || args.only == "gemm") gemm();
  if (args.only.empty() || args.only == "conv") conv();

  if (args.json) {
    nlohmann::json out{{"onednn", std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch)},
                       {"threads", args.threads}, {"gemm_threads", args.gemmThreads}, {"cells", nlohmann::json::array()}};
    for (const Cell& c : cells)
      out["cells"].push_back({{"group", c.group}, {"shape", c.shape}, {"impl", c.impl}, {"gflop", c.gflop},
                              {"median_ms", c.ms}, {"gflops", c.gflops}, {"reps", c.reps}});
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  // Summary: GFLOP/s and friction/oneDNN ratios.
  std::printf("\noneDNN %d.%d.%d; GEMM %d thread(s), conv %d thread(s); GFLOP/s (ratio to the best oneDNN cell)\n",
              v->major, v->minor, v->patch, args.gemmThreads, args.threads);
  std::vector<std::string> shapes;
  for (const Cell& c : cells)
    if (std::find(shapes.begin(), shapes.end(), c.shape) == shapes.end()) shapes.push_back(c.shape);
  for (const auto& shape : shapes) {
    double best = 0;
    for (const Cell& c : cells)
      if (c.shape == shape && c.impl.rfind("dnnl", 0) == 0) best = std::max(best, c.gflops);
    std::printf("%s\n", shape.c_str());
    for (const Cell& c : cells) {
      if (c.shape != shape) continue;
      std::printf("  %-24s %9.2f GFLOP/s  %9.3f ms", c.impl.c_str(), c.gflops, c.ms);
      if (best > 0) std::printf("  %6.3fx", c.gflops / best);
      std::printf("%s\n", c.note.c_str());
    }
  }
  return 0;
}
