#include "codegen/cuda/Registration.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>

#include "codegen/cuda/GpuCompile.h"
#include "ir/Error.h"
#include "ir/Spec.h"
#include "runtime/Backend.h"
#include "runtime/StepProfile.h"
#include "runtime/cuda/GpuExecutor.h"

namespace friction::codegen {
namespace {

// The newest chip the pipeline makes that device `capability` runs (PTX runs on its chip and later ones).
std::string chipFor(int capability) {
  std::string best;
  for (const std::string& chip : kGpuChips)
    if (std::stoi(chip.substr(3)) <= capability) best = chip;
  FRICTION_CHECK(!best.empty(), "backend cuda: the device's compute capability " + std::to_string(capability / 10) + "." +
                                    std::to_string(capability % 10) + " is older than sm_80, the oldest chip friction targets");
  return best;
}

class CudaModel : public CompiledModel {
 public:
  CudaModel(gpu::GpuPlan plan, int profileTop) : exec_(std::move(plan)), profileTop_(profileTop) {}

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    upload(inputs);
    lastMs_ = exec_.launch(profileTop_ > 0);
    std::vector<Tensor> outs;
    for (size_t o = 0; o < exec_.plan().outputs.size(); ++o) {
      const gpu::GpuValue& v = exec_.plan().outputs[o];
      Tensor t(dtypeFromName(v.dtype), v.shape);
      exec_.download(o, t.rawData(), t.byteSize());
      outs.push_back(std::move(t));
    }
    return outs;
  }
  double lastRunMs() const override { return lastMs_; }
  // The inputs go in once; each run is the launches between two CUDA events.
  TimedRuns timeRuns(const std::vector<Tensor>& inputs, int n) override {
    upload(inputs);
    TimedRuns r;
    r.internal = true;
    for (int i = 0; i < n; ++i) r.ms.push_back(exec_.launch(profileTop_ > 0));
    return r;
  }
  std::string description() const override {
    const gpu::GpuPlan& p = exec_.plan();
    return "cuda on " + exec_.device() + ": PTX for " + p.chip + ", " + std::to_string(p.kernels.size()) + " kernels, " +
           std::to_string(p.calls.size()) + " calls = " + std::to_string(p.launches()) + " launches a run, arena " +
           std::to_string(p.arenaBytes >> 20) + " MiB";
  }
  int64_t interpNodes() const override { return 0; }
  bool leavesCoresBusy() const override { return false; }
  std::string profile() const override {
    const gpu::GpuPlan& p = exec_.plan();
    std::vector<StepTime> steps;
    for (size_t c = 0; c < p.calls.size(); ++c)
      steps.push_back({p.kernelLabels[size_t(p.calls[c].kernel)], p.calls[c].step, exec_.callMs()[c], long(exec_.profiledRuns())});
    return profileReport(steps, long(exec_.profiledRuns()), profileTop_);
  }

 private:
  void upload(const std::vector<Tensor>& inputs) {
    const auto& want = exec_.plan().inputs;
    FRICTION_CHECK(inputs.size() == want.size(), "cuda: the model takes " + std::to_string(want.size()) + " inputs, got " +
                                                     std::to_string(inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = inputs[i];
      FRICTION_CHECK(std::string(dtypeName(t.dtype())) == want[i].dtype && t.shape() == want[i].shape,
                     "cuda: input " + std::to_string(i) + " ('" + want[i].name + "') is " + t.type().str() +
                         ", the model was compiled for another type or shape");
      exec_.upload(i, t.rawData(), t.byteSize());
    }
  }

  gpu::GpuExecutor exec_;
  int profileTop_ = 0;  // 0: no profile
  double lastMs_ = -1;
};

class CudaBackend : public Backend {
 public:
  CudaBackend(CodegenOptions options, int profileTop) : options_(std::move(options)), profileTop_(profileTop) {}
  std::string name() const override { return "cuda"; }
  std::unique_ptr<CompiledModel> compile(const Graph& graph) override {
    GpuCompileReport r = compileForGpu(graph, options_);
    FRICTION_CHECK(r.planError.empty(), r.planError);
    return std::make_unique<CudaModel>(std::move(r.plan), profileTop_);
  }

 private:
  CodegenOptions options_;
  int profileTop_;
};

std::unique_ptr<Backend> makeCudaBackend(const std::map<std::string, std::string>& options) {
  std::string why = gpu::cudaUnavailableReason();
  FRICTION_CHECK(why.empty(), "backend cuda: " + why);
  CodegenOptions o;
  o.target = Target::Cuda;
  o.gpuChip = chipFor(gpu::CudaDriver::get().computeCapability());
  int profileTop = 0;
  for (const auto& [key, value] : options) {
    if (key == "chip") {
      FRICTION_CHECK(std::find(kGpuChips.begin(), kGpuChips.end(), value) != kGpuChips.end(),
                     "backend cuda: chip must be " + Spec::alternatives(kGpuChips) + ", got '" + value + "'");
      o.gpuChip = value;
    } else if (key == "block") {
      auto threads = Spec::integer(value, 1, 1024);
      FRICTION_CHECK(threads, "backend cuda: block must be a thread count from 1 to 1024, got '" + value + "'");
      o.gpuBlockSize = *threads;
    } else if (key == "thread-outputs") {
      o.gpuThreadOutputs = parseThreadOutputs("backend cuda", key, value);
    } else if (key == "thread-columns") {
      o.gpuThreadColumns = parseThreadOutputs("backend cuda", key, value);
    } else if (key == "shared-columns") {
      o.gpuSharedColumns = parseThreadOutputs("backend cuda", key, value);
    } else if (key == "coarsen-min-threads") {
      o.gpuCoarsenMinThreads = parseCoarsenMinThreads("backend cuda", key, value);
    } else if (key == "profile") {
      FRICTION_CHECK(value == "on" || value == "off" || value == "all",
                     "backend cuda: profile must be on, off or all, got '" + value + "'");
      profileTop = value == "off" ? 0 : value == "on" ? kSlowestStepsNamed : std::numeric_limits<int>::max();
    } else if (isStageSwitch(key)) {
      o.requireInTarget(key, "backend cuda");
      o.set(key, value);
    } else {
      const std::string stages = ", " + stageSwitchList(kCuda);
      throw Error("backend cuda: unknown option '" + key + "' (options: chip=" + Spec::alternatives(kGpuChips) +
                  ", block=N, thread-outputs=N, thread-columns=N, shared-columns=N, coarsen-min-threads=N" + stages +
                  ", profile=on|off|all)");
    }
  }
  return std::make_unique<CudaBackend>(o, profileTop);
}

}  // namespace

void registerCudaBackend() { registerBackend("cuda", makeCudaBackend); }

}  // namespace friction::codegen
