#!/usr/bin/env bash
# Prepares what a GPU machine runs for the cuda backend (issue 16), on a machine
# that has the compiler: friction-cuda-run and one plan folder per model
# (`friction compile --backend cuda -o`), to carry and run there with
# benchmarks/cuda_device.sh.
#   numerics/<name>: with --reference (seeded inputs, the interpreter's outputs):
#     the zoo archetypes at batch 1 and 2 (one with 7-thread blocks, so every
#     nest ends in a partial block), the torch fixtures and MobileNetV2 full size.
#   timing/<model>-b<N>: ResNet-50, MobileNetV2 and ViT-B/16 at batch 1 and 32,
#     weights.bin left out (too large to carry; friction-cuda-run --fill-weights).
#   ablate/<model>-b<N>/<config>: the default pipeline (without convert-layout),
#     with convert-layout, no pass, and the default without each pass that
#     changes the GPU program (ResNet-50 and MobileNetV2
#     at batch 1 and 32, ViT-B/16 at batch 1), at batch 32 also 64- and
#     1024-thread blocks; and for all of them and ViT-B/16 at batch 32 the
#     gpu-coarsen stage off, one output per thread, and a thread's tile with
#     1, 2 or 8 columns (the default: 2, an A/A control); weights left out.
# PASSES=0 leaves out the pass configurations (codegen switches only: a
# shorter device run).
# Usage: [PASSES=0] benchmarks/cuda_plans.sh OUT_DIR [CHIP]   (default sm_90)
set -euo pipefail
out=${1:?usage: cuda_plans.sh OUT_DIR [CHIP]}
chip=${2:-sm_90}
root=$(cd "$(dirname "$0")/.." && pwd)
friction=$root/build/bin/friction
families=$root/out/families
mkdir -p "$out/numerics" "$out/timing"
cp "$root/build/bin/friction-cuda-run" "$out/"
# convert-layout off: on the GPU its NHWC regions run through transposes (ResNet-50: 232 kernel calls, not 56);
# the ablation measures it.
plan() { "$friction" compile "$1" --backend cuda --gpu-chip "$chip" --disable convert-layout -o "$2" "${@:3}" >/dev/null; }
i=0
for spec in "resnet?depth=2&width=8&resolution=16" "resnet?depth=4&width=8&resolution=32&block=bottleneck" \
            "mobilenetv2?depth=3&width=8&resolution=16" "convnext?depth=2&width=8&resolution=16" \
            "vit?depth=2&width=16&resolution=16&patch=8&heads=2" "mixer?depth=2&width=16&resolution=16&patch=8" "mlp?depth=3"; do
  for b in 1 2; do plan "zoo:$spec" "$out/numerics/zoo$i-b$b" --batch "$b" --reference; done
  i=$((i + 1))
done
plan "zoo:mobilenetv2?depth=3&width=8&resolution=16" "$out/numerics/zoo2-b2-block7" --batch 2 --gpu-block 7 --reference
for m in "$root"/tests/models/torch/*/; do plan "$m/model.onnx" "$out/numerics/torch-$(basename "$m")" --reference; done
if [[ -f $families/mobilenet_v2/model.onnx ]]; then
  plan "$families/mobilenet_v2/model.onnx" "$out/numerics/mobilenet_v2-full" --reference
fi
for m in resnet50 mobilenet_v2 vit_b_16; do
  [[ -f $families/$m/model.onnx ]] || { echo "skip $m: no $families/$m/model.onnx (see benchmarks/e2e_vs_ort.sh for the export)" >&2; continue; }
  for b in 1 32; do
    plan "$families/$m/model.onnx" "$out/timing/$m-b$b" --batch "$b"
    rm "$out/timing/$m-b$b/weights.bin"
  done
done
# Passes whose absence changes the GPU program (plan-memory lays out the cpu's arena, not the GPU's).
for m in resnet50-1 resnet50-32 mobilenet_v2-1 mobilenet_v2-32 vit_b_16-1 vit_b_16-32; do
  model=${m%-*} b=${m##*-}
  [[ -f $families/$model/model.onnx ]] || continue
  d=$out/ablate/$model-b$b
  plan "$families/$model/model.onnx" "$d/default" --batch "$b"
  # Codegen switches as axes of their own: contractions one output per thread read and written at every
  # reduction step (gpu-coarsen off), or one output per thread with its accumulator in a register.
  plan "$families/$model/model.onnx" "$d/coarsen-off" --batch "$b" --gpu-thread-outputs 0
  plan "$families/$model/model.onnx" "$d/thread-outputs1" --batch "$b" --gpu-thread-outputs 1
  for columns in 1 2 8; do plan "$families/$model/model.onnx" "$d/columns$columns" --batch "$b" --gpu-thread-columns "$columns"; done
  if [[ $m == vit_b_16-32 || ${PASSES:-1} == 0 ]]; then rm "$d"/*/weights.bin; continue; fi  # ViT-B/16's passes: at batch 1 only
  for config in "none:--passes none" "convert-layout:"; do  # the latter: the whole default pipeline
    # shellcheck disable=SC2086
    "$friction" compile "$families/$model/model.onnx" --backend cuda --gpu-chip "$chip" ${config#*:} -o "$d/${config%%:*}" \
      --batch "$b" >/dev/null
  done
  for pass in fold-constants fold-batchnorm fuse-epilogues fuse-reductions fuse-elementwise; do
    plan "$families/$model/model.onnx" "$d/no-$pass" --batch "$b" --disable "$pass"
  done
  # A codegen switch as an axis of its own: threads per block of the flattened nests (default 256).
  if [[ $b == 32 ]]; then
    for threads in 64 1024; do plan "$families/$model/model.onnx" "$d/block$threads" --batch "$b" --gpu-block "$threads"; done
  fi
  rm "$d"/*/weights.bin
done
du -sh "$out"
