#include "codegen/cuda/GpuPlanBuilder.h"

#include <algorithm>
#include <limits>

#include "ir/Error.h"

namespace friction::codegen {
namespace {

constexpr int64_t kAlign = 256;  // what cudaMalloc guarantees, and more than any vector load needs
constexpr int kForever = std::numeric_limits<int>::max();

int64_t aligned(int64_t bytes) { return (std::max<int64_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign; }

int64_t bytesOf(const Value* v) { return *v->shape().numel() * int64_t(dtypeSize(v->dtype())); }

class Planner {
 public:
  Planner(const std::unordered_map<const KernelEntry*, int>& kernelOf, gpu::GpuPlan& plan) : kernelOf_(kernelOf), plan_(plan) {}

  void plan(const Program& p, const Graph& g) {
    std::vector<int> bufferOf(size_t(p.numSlots), -1);
    for (int slot : p.inputSlots) bufferOf[size_t(slot)] = newBuffer(0, -1, kForever);
    walk(p, bufferOf);
    for (size_t i = 0; i < p.inputSlots.size(); ++i) buffers_[size_t(bufferOf[size_t(p.inputSlots[i])])].bytes = bytesOf(g.inputs()[i]);
    for (int slot : p.outputSlots) buffers_[size_t(bufferOf[size_t(slot)])].last = kForever;  // read after the run
    place();
    auto value = [&](int slot, const Value* v) {
      gpu::GpuValue x;
      x.name = v->name();
      x.dtype = std::string(dtypeName(v->dtype()));
      x.shape = v->shape().staticDims();
      x.bytes = bytesOf(v);
      x.offset = buffers_[size_t(bufferOf[size_t(slot)])].offset;
      return x;
    };
    for (size_t i = 0; i < p.inputSlots.size(); ++i) plan_.inputs.push_back(value(p.inputSlots[i], g.inputs()[i]));
    for (size_t o = 0; o < p.outputSlots.size(); ++o) plan_.outputs.push_back(value(p.outputSlots[o], g.outputs()[o]));
  }

 private:
  int newBuffer(int64_t bytes, int first, int last) {
    buffers_.push_back({bytes, first, last, -1});
    return int(buffers_.size() - 1);
  }
  void use(int buffer) { buffers_[size_t(buffer)].last = std::max(buffers_[size_t(buffer)].last, call()); }
  int call() const { return int(plan_.calls.size()); }

  void constants(const Program& p, std::vector<int>& bufferOf) {
    for (const auto& [slot, t] : p.constants) {
      int b = newBuffer(int64_t(t.byteSize()), -1, kForever);
      bufferOf[size_t(slot)] = b;
      constantOf_.push_back({b, int64_t(plan_.weights.size())});
      plan_.weights.append(static_cast<const char*>(t.rawData()), t.byteSize());
    }
  }

  void walk(const Program& p, std::vector<int>& bufferOf) {
    constants(p, bufferOf);
    for (const Step& s : p.steps) {
      const Node& n = *s.node;
      switch (s.kind) {
        case Step::View:
          bufferOf[size_t(s.out[0])] = bufferOf[size_t(s.in[0])];  // the same bytes, another shape
          break;
        case Step::Sub: {
          const Program& sub = *s.sub;
          std::vector<int> inner(size_t(sub.numSlots), -1);
          for (size_t i = 0; i < sub.inputSlots.size(); ++i)  // an absent optional input has no slot
            inner[size_t(sub.inputSlots[i])] = s.in[i] >= 0 ? bufferOf[size_t(s.in[i])] : -1;
          walk(sub, inner);
          for (size_t o = 0; o < s.out.size(); ++o) bufferOf[size_t(s.out[o])] = inner[size_t(sub.outputSlots[o])];
          break;
        }
        case Step::Compiled: compiled(s, bufferOf); break;
        case Step::Native:
          throw Error("cuda: " + n.describe() + " runs a host microkernel (" + s.native->describe() + "), not a GPU kernel");
        case Step::Interp:
          throw Error("cuda: " + n.describe() + " has no GPU kernel (it would run on the interpreter)");
      }
    }
  }

  void compiled(const Step& s, std::vector<int>& bufferOf) {
    const Node& n = *s.node;
    auto it = kernelOf_.find(s.kernel.get());
    FRICTION_CHECK(it != kernelOf_.end(), "cuda: " + n.describe() + ": its kernel was not compiled for the GPU");
    gpu::GpuCall c;
    c.kernel = it->second;
    c.step = n.name() + " -> " + n.output(0)->type().str();
    std::vector<int> args;
    for (int input : s.argInputs) {
      int b = bufferOf[size_t(s.in[size_t(input)])];
      FRICTION_CHECK(b >= 0, "cuda: " + n.describe() + ": input " + std::to_string(input) + " has no buffer");
      args.push_back(b);
    }
    for (int slot : s.in)
      if (slot >= 0 && bufferOf[size_t(slot)] >= 0) use(bufferOf[size_t(slot)]);
    for (size_t o = 0; o < n.numOutputs(); ++o) {
      int b = newBuffer(bytesOf(n.output(o)), call(), call());
      bufferOf[size_t(s.out[o])] = b;
      args.push_back(b);
    }
    for (const auto& shape : s.scratch) {
      int64_t numel = 1;
      for (int64_t d : shape) numel *= d;
      args.push_back(newBuffer(numel * 4, call(), call()));
    }
    const gpu::GpuKernel& k = plan_.kernels[size_t(c.kernel)];
    FRICTION_CHECK(args.size() == size_t(k.buffers) + k.scratch.size(),
                   "cuda: " + n.describe() + " passes " + std::to_string(args.size()) + " buffers to a kernel that takes " +
                       std::to_string(size_t(k.buffers) + k.scratch.size()));
    callArgs_.push_back(args);
    plan_.calls.push_back(std::move(c));
  }

  void place() {
    plan_.arenaBytes = placeInArena(buffers_);
    int64_t permanent = 0;
    for (const ArenaBuffer& b : buffers_)
      if (b.last == kForever) permanent += aligned(b.bytes);
    plan_.intermediateBytes = plan_.arenaBytes - permanent;
    for (size_t c = 0; c < plan_.calls.size(); ++c)
      for (int b : callArgs_[c]) {
        plan_.calls[c].buffers.push_back(buffers_[size_t(b)].offset);
        plan_.calls[c].bytes.push_back(buffers_[size_t(b)].bytes);
      }
    for (const auto& [b, from] : constantOf_)
      plan_.constants.push_back({buffers_[size_t(b)].offset, buffers_[size_t(b)].bytes, from});
  }

  const std::unordered_map<const KernelEntry*, int>& kernelOf_;
  gpu::GpuPlan& plan_;
  std::vector<ArenaBuffer> buffers_;
  std::vector<std::vector<int>> callArgs_;
  std::vector<std::pair<int, int64_t>> constantOf_;  // buffer, offset in the weights
};

}  // namespace

int64_t placeInArena(std::vector<ArenaBuffer>& buffers) {
  std::vector<size_t> order(buffers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });
  std::vector<size_t> placed;
  int64_t size = 0;
  for (size_t i : order) {
    ArenaBuffer& b = buffers[i];
    std::vector<std::pair<int64_t, int64_t>> taken;  // [offset, end) of the placed buffers alive with it
    for (size_t j : placed) {
      const ArenaBuffer& o = buffers[j];
      if (o.first <= b.last && b.first <= o.last) taken.push_back({o.offset, o.offset + aligned(o.bytes)});
    }
    std::sort(taken.begin(), taken.end());
    int64_t at = 0;
    for (const auto& [from, to] : taken) {
      if (at + aligned(b.bytes) <= from) break;
      at = std::max(at, to);
    }
    b.offset = at;
    placed.push_back(i);
    size = std::max(size, at + aligned(b.bytes));
  }
  return size;
}

void planGpuCalls(const Program& p, const Graph& g, const std::unordered_map<const KernelEntry*, int>& kernelOf,
                  gpu::GpuPlan& plan) {
  Planner(kernelOf, plan).plan(p, p.resolved ? *p.resolved : g);
}

}  // namespace friction::codegen
