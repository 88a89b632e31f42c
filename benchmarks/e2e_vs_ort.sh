#!/usr/bin/env bash
# End-to-end latency of friction's `cpu` backend against ONNX Runtime with all
# graph optimizations and, with BASELINE set, against another friction build
# (the previous one), measured in the same run. friction runs its default pass
# pipeline; ORT gets the unoptimized model (all-off) and applies its own
# optimizations (level all). Same threads.
# Each cell (model, batch) is one `friction bench --compare`: both executors
# compiled once and kept resident, then timed in interleaved rounds under the
# harness's protocol (a fresh random order each round, the cores quiesced and
# calibrated between blocks: docs/metrics.md). With BASELINE, two builds cannot
# share a process: each round runs every executor as a process of its own (its
# median over REPS runs) in a fresh random order instead. Either way the table
# reports the median of the per-round ratios with a distribution-free 95%
# interval (at least 6 rounds; benchmarks/report/e2e_summary.py).
# MODE=all-off compares the unoptimized sides instead: friction with every
# pass off (--passes none) against ORT with its graph optimizations disabled.
# MODELS=families runs the real architectures at their published sizes (every torchvision
# classification family, GPT-2 small, BERT-base: scripts/torch_models.py), exported on first use
# into FAMILY_DIR by scripts/make_torch_fixtures.py --full (PyTorch from scripts/setup_torch.sh);
# a family's name alone (resnet18 densenet121 ...) runs that one, and so does the name of any
# other torchvision classification model (googlenet inception_v3 vgg11_bn ...: architectures the
# families do not include, at their weights' published input size), of a torchvision segmentation
# model (lraspp_mobilenet_v3_large deeplabv3_mobilenet_v3_large fcn_resnet50: 256x256) or of a U-Net
# (unet_bilinear unet_nearest unet_transpose: 128x128).
# Usage: benchmarks/e2e_vs_ort.sh [FRICTION_BINARY]
#   env: MODELS (resnet50 mobilenetv2 vit_b, families, or any model paths / zoo specs / family names),
#        BATCHES (1 8), THREADS (2), ROUNDS (6), MODE (default | all-off),
#        BASELINE (path to another friction binary; optional), REPS (10: runs per process, with BASELINE),
#        FAMILY_DIR (out/families), SAMPLES (keep the per-round samples in this file)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
F=${1:-$ROOT/build/bin/friction}
PY=$ROOT/.venv/bin/python
MODELS=${MODELS:-resnet50 mobilenetv2 vit_b} BATCHES=${BATCHES:-1 8}
THREADS=${THREADS:-2} REPS=${REPS:-10} ROUNDS=${ROUNDS:-6} BASELINE=${BASELINE:-} MODE=${MODE:-default}
case $MODE in
  default) CPU_FLAGS=() ORT_LEVEL=all ;;
  all-off) CPU_FLAGS=(--passes none) ORT_LEVEL=disabled ;;
  *) echo "e2e_vs_ort.sh: MODE must be default or all-off, not '$MODE'" >&2; exit 2 ;;
esac
declare -A SPEC=([resnet50]="zoo:resnet?preset=resnet50&resolution=224" [mobilenetv2]="zoo:mobilenetv2?preset=mobilenetv2"
                 [vit_b]="zoo:vit?preset=vit_b")

FAMILY_DIR=${FAMILY_DIR:-$ROOT/out/families}
TORCH_PY=$ROOT/.venv-torch/bin/python
family_names() {
  bash "$ROOT/scripts/setup_torch.sh"
  "$TORCH_PY" -c "import sys; sys.path.insert(0, '$ROOT/scripts'); import torch_models; print(*torch_models.FULL_NAMES)"
}
[[ $MODELS == families ]] && MODELS=$(family_names)

# A short name above, a family exported into FAMILY_DIR (on first use), or the model as given.
spec() {
  if [[ -n ${SPEC[$1]:-} ]]; then echo "${SPEC[$1]}"; return; fi
  if [[ $1 == */* || $1 == *:* || $1 == *.onnx || $1 == *.fir ]]; then echo "$1"; return; fi
  if [[ ! -f $FAMILY_DIR/$1/model.onnx ]]; then
    bash "$ROOT/scripts/setup_torch.sh"
    echo "exporting $1 into $FAMILY_DIR" >&2
    "$TORCH_PY" "$ROOT/scripts/make_torch_fixtures.py" --full --batches 1 --out "$FAMILY_DIR" "$1" >&2
  fi
  echo "$FAMILY_DIR/$1/model.onnx"
}
for m in $MODELS; do spec "$m" >/dev/null; done  # export everything before the first timed round

if [[ -n ${SAMPLES:-} ]]; then
  samples=$SAMPLES
  : > "$samples"
else
  samples=$(mktemp)
fi
machine=$(mktemp)  # each round's calibration: memory bandwidth, core-to-core round trip
trap 'rm -f "$machine"; [[ -n ${SAMPLES:-} ]] || rm -f "$samples"' EXIT
ORT="ort?threads=$THREADS&level=$ORT_LEVEL"

# One cell in one process: `bench --compare`'s per-round block medians become the samples.
compared_cell() {  # MODEL BATCH
  OMP_NUM_THREADS=$THREADS "$F" bench "$(spec "$1")" --backend cpu --batch "$2" --threads "$THREADS" --no-check \
    "${CPU_FLAGS[@]}" --compare "$ORT|all-off" --rounds "$ROUNDS" --min-rounds "$ROUNDS" --json |
    "$PY" -c 'import json, sys
model, batch, machine = sys.argv[1:4]
data = json.load(sys.stdin)
for executor, name in zip(data["executors"], ("cpu", "ort")):
    for r, ms in enumerate(executor["round_ms"]):
        print(r, model, batch, name, ms, sep="\t")
with open(machine, "a") as f:
    for state in data["machine"]:
        print(state["memory_gbps"], state["cross_core_ns"], sep="\t", file=f)' "$1" "$2" "$machine" >> "$samples"
}

median() {  # BINARY MODEL BATCH BACKEND [friction flags...] -> median ms of one process's runs
  local bin=$1 model=$2 batch=$3 backend=$4
  shift 4
  OMP_NUM_THREADS=$THREADS "$bin" bench "$model" --backend "$backend" --batch "$batch" --reps "$REPS" --warmup 2 \
    --threads "$THREADS" --max-seconds 20 --no-check --json "$@" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])'
}

if [[ -z $BASELINE ]]; then
  for m in $MODELS; do
    for b in $BATCHES; do
      compared_cell "$m" "$b"
      echo "$m batch $b: $ROUNDS rounds done" >&2
    done
  done
else
  for ((r = 0; r < ROUNDS; r++)); do
    for m in $MODELS; do
      for b in $BATCHES; do
        for e in $(shuf -e cpu ort baseline); do
          case $e in
            cpu) ms=$(median "$F" "$(spec "$m")" "$b" cpu "${CPU_FLAGS[@]}") ;;
            baseline) ms=$(median "$BASELINE" "$(spec "$m")" "$b" cpu "${CPU_FLAGS[@]}") ;;
            ort) ms=$(median "$F" "$(spec "$m")" "$b" "$ORT" --passes none) ;;
          esac
          printf '%s\t%s\t%s\t%s\t%s\n' "$r" "$m" "$b" "$e" "$ms" >> "$samples"
        done
      done
    done
    echo "round $((r + 1))/$ROUNDS done" >&2
  done
fi
"$PY" "$ROOT/benchmarks/report/e2e_summary.py" "$samples" "$machine"
