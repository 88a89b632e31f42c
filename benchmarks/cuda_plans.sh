#!/usr/bin/env bash
# Prepares what a GPU machine runs for the cuda backend (issue 16), on a machine
# that has the compiler: friction-cuda-run and one plan folder per model
# (`friction compile --backend cuda -o`), to carry and run there with
# benchmarks/cuda_device.sh.
#   numerics/<name>: with --reference (seeded inputs, the interpreter's outputs):
#     the zoo archetypes at batch 1 and 2 (one with 7-thread blocks, so every
#     nest ends in a partial block; three with every contraction in shared-memory
#     tiles), the torch fixtures, MobileNetV2 full size at batch 1 and 8 (where
#     its large pointwise convolutions take shared-memory tiles).
#   timing/<model>-b<N>: ResNet-50, MobileNetV2 and ViT-B/16 at batch 1 and 32,
#     weights.bin left out (too large to carry; friction-cuda-run --fill-weights).
#   ablate/<model>-b<N>/<config>: the default pipeline (without convert-layout),
#     with convert-layout, no pass, and the default without each pass that
#     changes the GPU program (ResNet-50 and MobileNetV2
#     at batch 1 and 32, ViT-B/16 at batch 1), at batch 32 also 64- and
#     1024-thread blocks; and for all of them and ViT-B/16 at batch 32 the
#     codegen switches (gpu-shared off, its tiles' columns, contract off,
#     gpu-coarsen's options); weights left out.
# PASSES=0 leaves out the pass configurations, CODEGEN=shared the gpu-coarsen
# switches (a shorter device run).
# Usage: [PASSES=0] [CODEGEN=shared] benchmarks/cuda_plans.sh OUT_DIR [CHIP]   (default sm_90)
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
zoo_specs='resnet?depth=2&width=8&resolution=16
resnet?depth=4&width=8&resolution=32&block=bottleneck
mobilenetv2?depth=3&width=8&resolution=16
convnext?depth=2&width=8&resolution=16
vit?depth=2&width=16&resolution=16&patch=8&heads=2
mixer?depth=2&width=16&resolution=16&patch=8
mlp?depth=3'
i=0
while read -r spec; do
  for b in 1 2; do plan "zoo:$spec" "$out/numerics/zoo$i-b$b" --batch "$b" --reference; done
  i=$((i + 1))
done <<< "$zoo_specs"
plan "zoo:mobilenetv2?depth=3&width=8&resolution=16" "$out/numerics/zoo2-b2-block7" --batch 2 --gpu-block 7 --reference
# Shared-memory tiles for every contraction: the zoo's nests are too small for the default threshold.
for i in 1 2 3; do
  spec=$(sed -n "$((i + 1))p" <<< "$zoo_specs")
  plan "zoo:$spec" "$out/numerics/zoo$i-b2-tiled" --batch 2 --gpu-coarsen-min-threads 1 --reference
done
for m in "$root"/tests/models/torch/*/; do plan "$m/model.onnx" "$out/numerics/torch-$(basename "$m")" --reference; done
if [[ -f $families/mobilenet_v2/model.onnx ]]; then
  plan "$families/mobilenet_v2/model.onnx" "$out/numerics/mobilenet_v2-full" --reference
  # At batch 8 its large pointwise convolutions take shared-memory tiles under the default threshold.
  plan "$families/mobilenet_v2/model.onnx" "$out/numerics/mobilenet_v2-full-b8" --batch 8 --reference
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
  # Codegen switches as axes of their own: no shared-memory tiles (gpu-shared off), tiles 4 or 8 columns wide
  # (the default: 2), no fused multiply-adds (contract off); contractions one output per thread read and
  # written at every reduction step (gpu-coarsen and gpu-shared off) or with its accumulator in a register,
  # register tiles of 1 or 8 columns (the default: 2).
  codegen_configs=("shared-off:--stage gpu-shared=off" "shared-columns4:--gpu-shared-columns 4"
                   "shared-columns8:--gpu-shared-columns 8" "contract-off:--stage contract=off")
  [[ ${CODEGEN:-all} == shared ]] || codegen_configs+=(
    "coarsen-off:--gpu-thread-outputs 0 --stage gpu-shared=off" "thread-outputs1:--gpu-thread-outputs 1"
    "columns1:--gpu-thread-columns 1" "columns8:--gpu-thread-columns 8")
  for config in "${codegen_configs[@]}"; do
    # shellcheck disable=SC2086
    plan "$families/$model/model.onnx" "$d/${config%%:*}" --batch "$b" ${config#*:}
  done
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
