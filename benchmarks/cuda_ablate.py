#!/usr/bin/env python3
"""Per-pass contribution to the cuda backend's GPU time (issue 16, item 2).

ABLATE/<model>-b<batch>/<config> are plans of one model and batch under
several pass configurations (benchmarks/cuda_plans.sh): `default`, `none` and
`no-<pass>`. Every round runs each configuration once (friction-cuda-run,
CUDA events, seeded weights), in a rotated order; per round each
configuration's median over the default's; over the rounds the median ratio
and its range. A ratio above 1 is what the pass saves.
"""
import statistics
import subprocess

from cuda_runner import arguments, friction_run


def main():
    a = arguments(__doc__, "ablate")
    print("| model | config | kernels | launches | MB between kernels | ms (last round) | time / default | range |")
    print("|---|---|---|---|---|---|---|---|")
    for model in sorted(d for d in a.ablate.iterdir() if d.is_dir()):
        configs = sorted(d for d in model.iterdir() if (d / "plan.json").exists())
        ratios, last = {}, {}
        for r in range(a.rounds):
            order = configs[r % len(configs):] + configs[:r % len(configs)]
            ms = {}
            for c in order:
                try:
                    last[c.name] = friction_run(a.runner, c, a.reps, warmup=2)
                    ms[c.name] = last[c.name]["median_ms"]
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    print(f"<!-- round {r}: {e} -->", flush=True)
            for name, t in ms.items():
                if "default" in ms:
                    ratios.setdefault(name, []).append(t / ms["default"])
        for name, rs in ratios.items():
            f = last[name]
            print(f"| {model.name} | {name} | {f['kernels']} | {f['launches']} | {f['bytes_between_kernels'] / 1e6:.1f} | "
                  f"{f['median_ms']:.3f} | {statistics.median(rs):.2f} | {min(rs):.2f}-{max(rs):.2f} |", flush=True)


if __name__ == "__main__":
    main()
