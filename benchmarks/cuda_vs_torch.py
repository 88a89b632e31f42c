#!/usr/bin/env python3
"""The cuda backend's plans against PyTorch eager on the same GPU (issue 16).

Each plan folder under PLANS is named <model>-b<batch> (benchmarks/cuda_plans.sh);
the same torchvision architecture runs in PyTorch eager, FP32 with TF32 off
(cuDNN and cuBLAS: the library reference), timed with CUDA events like
friction-cuda-run. The two alternate in rounds; per round the ratio of medians
(friction / torch), and over the rounds the median ratio and its range.
PyTorch's weights are its random init and friction's seeded ones: timing only.
"""
import statistics
import subprocess
import sys

import torch
import torchvision

from cuda_runner import arguments, friction_run

MODELS = {"resnet50": torchvision.models.resnet50, "mobilenet_v2": torchvision.models.mobilenet_v2,
          "vit_b_16": torchvision.models.vit_b_16}


def torch_ms(model, x, reps, warmup=3):
    with torch.no_grad():
        for _ in range(warmup):
            model(x)
        times = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            model(x)
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    a = arguments(__doc__, "plans")
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    plans = sorted(d for d in a.plans.iterdir() if (d / "plan.json").exists())
    ratios, last = {}, {}
    for r in range(a.rounds):
        for plan in plans:
            model_name, batch = plan.name.rsplit("-b", 1)
            model = MODELS[model_name]().eval().cuda()
            x = torch.randn(int(batch), 3, 224, 224, device="cuda")
            try:
                f = friction_run(a.runner, plan, a.reps)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"round {r}: {e}", file=sys.stderr)
                continue
            t = torch_ms(model, x, a.reps)
            ratios.setdefault(plan.name, []).append(f["median_ms"] / t)
            last[plan.name] = (f, t)
            print(f"round {r} {plan.name}: friction {f['median_ms']:.3f} ms, torch {t:.3f} ms, "
                  f"ratio {f['median_ms'] / t:.2f}", flush=True)
            del model
            torch.cuda.empty_cache()
    print(f"\n{torch.cuda.get_device_name()}; torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"FP32 (TF32 off); {a.rounds} rounds of {a.reps} runs each")
    print("| plan | friction ms | torch eager ms | ratio (median of rounds) | range | kernels | launches |")
    print("|---|---|---|---|---|---|---|")
    for name, rs in ratios.items():
        f, t = last[name]
        print(f"| {name} | {f['median_ms']:.3f} | {t:.3f} | {statistics.median(rs):.2f} | {min(rs):.2f}-{max(rs):.2f} | "
              f"{f['kernels']} | {f['launches']} |")


if __name__ == "__main__":
    main()
